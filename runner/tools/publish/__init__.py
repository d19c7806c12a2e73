"""Publishing an operator: ``playbook-operator generate crd``, ``generate csv``,
``scorecard`` and the pinned Go tools behind ``make bundle`` and ``make catalog``.

Not a stage of the runtime flow (watch → queue → reconcile → ansible → status): these
read the project's files — watches.yaml (through :mod:`runner.config.watches`, the
runtime's own reader), each role's ``meta/argument_specs.yml``, config/ — and write the
manifests an operator ships with: CRD schemas, the base ClusterServiceVersion. Modules,
top-down:

- :mod:`~runner.tools.publish.command`: the subcommands ``runner.cli`` wires in;
- :mod:`~runner.tools.publish.crd`: ``generate crd``, one CRD file per watched kind;
- :mod:`~runner.tools.publish.csv`: ``generate csv``, the base CSV (hand edits kept);
- :mod:`~runner.tools.publish.scorecard`: the scorecard-test binary against a bundle;
- :mod:`~runner.tools.publish.gotools`: operator-sdk, opm, kustomize, scorecard-test;
- :mod:`~runner.tools.publish.schema`: argument specs → ``openAPIV3Schema``, and the merge
  that keeps what only the CRD file says;
- :mod:`~runner.tools.publish.descriptors`: OLM spec and status descriptors;
- :mod:`~runner.tools.publish.manages`: the kinds a role creates (a CSV's ``resources``);
- :mod:`~runner.tools.publish.argspecs`: a role's argument specs as typed options;
- :mod:`~runner.tools.publish.project`: what ``PROJECT`` says (kinds opted in, columns);
- :mod:`~runner.tools.publish.documents`: YAML files in, YAML files out;
- :mod:`~runner.tools.publish.errors`: what goes wrong, by audience.

Nothing that runs the operator is imported (an import contract in pyproject.toml), and
the runtime never imports this package.
"""
