"""Errors of the runtime, one hierarchy per audience.

::

    PlaybookOperatorError
    ├── ConfigError              the operator author's input is wrong; raised at
    │   │                        start-up, before anything is watched
    │   ├── WatchesError         watches.yaml: names the file, entry and field
    │   ├── ListenError          an address flag cannot be listened on: names
    │   │                        the flag and the port
    │   └── PreviewError         ``preview``'s CR file cannot be previewed:
    │                            unreadable, not a CR, or no watch for its kind
    │                            (:mod:`runner.tools.preview.target`)
    ├── ReconcileError           one reconcile could not be carried out; the
    │   │                        controller logs it and retries with backoff
    │   ├── AnsibleLaunchError   ansible-runner could not be started at all
    │   ├── StatusSubresourceMissing  the CRD has no status subresource: status
    │   │                        goes through the object (runner.reconcile.progress)
    │   ├── UnsafeVariablesError the extra vars would not reach Ansible as plain
    │   │                        data (a type tag, bad UTF-8, too deep): not
    │   │                        written (:mod:`runner.ansible.guard`)
    │   └── ReconcileFailed      the run had failed tasks; the Failure condition
    │                            names them (:mod:`runner.reconcile.reconciler`)
    └── ScaffoldError            ``init`` or ``create api`` cannot write what was
                                 asked; its subclasses are drawn in
                                 :mod:`runner.tools.scaffold.errors`

Errors of the Kubernetes API live in :mod:`runner.kube.errors`, below this
package's layers; code above chains them with ``raise ... from``.
"""

from __future__ import annotations

#: operator-sdk's text for a failure nothing explains: a failed task without ``res.msg``
#: (:mod:`runner.ansible.events`), a failed run without failed tasks
#: (:mod:`runner.reconcile.progress`), a blank Failure message (:mod:`runner.status.conditions`).
#: Here because the Ansible stage and status are sibling layers that both use it.
UNKNOWN_FAILURE = "unknown playbook failure"


class PlaybookOperatorError(Exception):
    """Base of every error the runtime raises on purpose."""


class ConfigError(PlaybookOperatorError):
    """Invalid configuration: flags, environment or watches.yaml."""


class WatchesError(ConfigError):
    """An invalid watches.yaml, with the file, entry and field named.

    ``entry`` counts from 1, as the entries appear in the file; ``gvk``, when
    known, names the entry's ``group/version/kind`` too.
    """

    def __init__(
        self,
        *,
        path: str,
        entry: int | None,
        field: str | None,
        problem: str,
        gvk: str | None = None,
    ) -> None:
        self.path = path
        self.entry = entry
        self.field = field
        self.problem = problem
        self.gvk = gvk
        where = path
        if entry is not None:
            where += f": entry {entry}" + (f" ({gvk})" if gvk else "")
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {problem}")


class ListenError(ConfigError):
    """A ``--*-bind-address`` that cannot be served: a taken port, a foreign host...

    The message names the flag, its value and the problem, e.g.
    ``--metrics-bind-address=:8080: port 8080 is already in use``.
    """

    def __init__(self, *, flag: str, address: str, problem: str) -> None:
        self.flag = flag
        self.address = address
        self.problem = problem
        super().__init__(f"{flag}={address}: {problem}")


class ReconcileError(PlaybookOperatorError):
    """A reconcile failed for a reason other than a failing Ansible task."""


class AnsibleLaunchError(ReconcileError):
    """ansible-runner could not be started (bad private data dir, missing role...)."""


class StatusSubresourceMissing(ReconcileError):  # noqa: N818 (a state, not a failure)
    """The object is there but its kind has no status subresource."""


class UnsafeVariablesError(ReconcileError):
    """The extra vars would reach Ansible as something other than data; not written."""
