"""``create webhook``: admission webhooks, written as roles, for a kind a project has.

Outside the runtime flow (watch → queue → reconcile → ansible → status): it writes what
the runtime's webhook server reads — the roles and the kind's ``validation:`` /
``mutation:`` keys in ``watches.yaml`` — and what the cluster needs to call it, in
kubebuilder's layout (operator-sdk's flags ``--programmatic-validation`` and
``--defaulting``)::

    roles/<kind>_validate/{tasks,defaults,meta}/main.yml   --programmatic-validation
    roles/<kind>_default/{tasks,defaults,meta}/main.yml    --defaulting
    watches.yaml                                  the kind's validation: / mutation:
    config/webhook/manifests.yaml                 Validating/MutatingWebhookConfiguration
    config/webhook/{kustomization,service,kustomizeconfig}.yaml
    config/certmanager/{certificate,kustomization,kustomizeconfig}.yaml
    config/default/{manager_webhook_patch,webhookcainjection_patch}.yaml

Files that exist are left alone, except ``manifests.yaml`` (the kind's webhooks are added
or replaced) and ``watches.yaml`` (a key the entry lacks is added; one it has is kept).
Nothing is uncommented: config/default's ``[WEBHOOK]`` and ``[CERTMANAGER]`` lines stay
as they are, and the command prints what to do next. As in ``create api``, every change
is worked out first; a refused call writes nothing, and a repeated one changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from runner.tools.scaffold import api as api_mod
from runner.tools.scaffold import names, project, templates
from runner.tools.scaffold.errors import ConflictError, ScaffoldError

Printer = Callable[[str], None]

WATCHES = "watches.yaml"
MANIFESTS = "config/webhook/manifests.yaml"
#: The API server's default, and the runtime's (watches.yaml timeoutSeconds).
TIMEOUT_SECONDS = 10
_HEADER = """\
# The admission webhooks of this project's kinds: which requests the API server sends to
# the manager's webhook server (config/webhook/service.yaml), on kubebuilder's paths.
# `playbook-operator create webhook` adds each kind's entries; keep failurePolicy,
# operations and timeoutSeconds equal to the kind's validation:/mutation: in watches.yaml.
"""
#: watches.yaml key, role suffix, template directory, webhook configuration kind, path.
_SORTS = {
    "validation": ("validate", "ValidatingWebhookConfiguration", "validating"),
    "mutation": ("default", "MutatingWebhookConfiguration", "mutating"),
}


def path(*, api: names.Resource, key: str) -> str:
    """kubebuilder's path: ``/validate-cache-example-com-v1alpha1-memcached``."""
    verb = "validate" if key == "validation" else "mutate"
    return f"/{verb}-{api.full_group.replace('.', '-')}-{api.version}-{api.singular}"


def role_name(*, api: names.Resource, key: str) -> str:
    return f"{api.singular}_{_SORTS[key][0]}"


def webhook_entry(*, api: names.Resource, key: str) -> dict[str, Any]:
    """The kind's entry in a Validating/MutatingWebhookConfiguration's ``webhooks``."""
    letter = "v" if key == "validation" else "m"
    return {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {
                "name": "webhook-service",
                "namespace": "system",
                "path": path(api=api, key=key),
            }
        },
        "failurePolicy": "Fail",
        "name": f"{letter}{api.singular}-{api.version}.{api.full_group}",
        "rules": [
            {
                "apiGroups": [api.full_group],
                "apiVersions": [api.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [api.plural],
            }
        ],
        "sideEffects": "None",
        "timeoutSeconds": TIMEOUT_SECONDS,
    }


def manifests(*, existing: str | None, api: names.Resource, keys: list[str]) -> str:
    """``config/webhook/manifests.yaml`` with the kind's webhooks for ``keys`` added (or
    replaced, by name); the other kinds' entries are kept."""
    docs: list[dict[str, Any]] = []
    if existing:
        try:
            docs = [d for d in yaml.safe_load_all(existing) if d]
        except yaml.YAMLError as exc:
            raise ScaffoldError(f"{MANIFESTS}: not YAML ({exc}); nothing was written") from exc
    by_kind = {str(d.get("kind")): d for d in docs if isinstance(d, dict)}
    for key in keys:
        _, kind, prefix = _SORTS[key]
        doc = by_kind.setdefault(
            kind,
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": f"{prefix}-webhook-configuration"},
                "webhooks": [],
            },
        )
        entry = webhook_entry(api=api, key=key)
        kept = [w for w in doc.get("webhooks") or [] if w.get("name") != entry["name"]]
        doc["webhooks"] = sorted([*kept, entry], key=lambda w: str(w.get("name")))
    order = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    ordered = [by_kind[k] for k in order if k in by_kind]
    ordered += [d for k, d in by_kind.items() if k not in order]
    body = yaml.safe_dump_all(ordered, sort_keys=False, explicit_start=True)
    return _HEADER + body


def watches_block(*, api: names.Resource, key: str) -> str:
    return (
        f"  {key}:\n"
        f"    role: {role_name(api=api, key=key)}\n"
        "    operations: [CREATE, UPDATE]\n"
        f"    timeoutSeconds: {TIMEOUT_SECONDS}\n"
        "    failurePolicy: Fail\n"
    )


def _entry_spans(text: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the top-level list items of watches.yaml (an item ends
    before the next item, or before the comments and blank lines that close the file)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("- ")]
    spans = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
            end -= 1
        spans.append((start, end))
    return spans


def add_to_watches(text: str, *, api: names.Resource, keys: list[str]) -> str:
    """``text`` with the kind's entry given the ``keys`` it lacks (its others untouched)."""
    lines = text.splitlines(keepends=True)
    for start, end in _entry_spans(text):
        try:
            entry = yaml.safe_load("".join(lines[start:end]))
        except yaml.YAMLError as exc:
            raise ScaffoldError(f"{WATCHES}: not YAML ({exc}); nothing was written") from exc
        item = entry[0] if isinstance(entry, list) and entry else {}
        if not isinstance(item, dict):
            continue
        if (item.get("group"), item.get("version"), item.get("kind")) != (
            api.full_group,
            api.version,
            api.kind,
        ):
            continue
        block = "".join(watches_block(api=api, key=k) for k in keys if k not in item)
        if lines[end - 1] and not lines[end - 1].endswith("\n"):
            lines[end - 1] += "\n"
        return "".join(lines[:end]) + block + "".join(lines[end:])
    raise ScaffoldError(
        f"{WATCHES}: no entry for {api.kind} ({api.api_version}); add it back (or run "
        "`playbook-operator create api` for the kind); nothing was written"
    )


def plan(*, made: project.Project, api: names.Resource, keys: list[str]) -> list[api_mod.Change]:
    """The files ``create webhook`` writes for ``keys`` of ``api``; raises when it cannot
    or need not."""
    existing = made.has_kind(group=api.group, kind=api.kind)
    if existing is None or existing.get("version") != api.version:
        raise ScaffoldError(
            f"{api.kind} ({api.api_version}) is not an API of this project "
            f"({project.PROJECT_FILE}); run `playbook-operator create api` for it first; "
            "nothing was written"
        )
    if not keys:
        raise ScaffoldError(
            "nothing to generate: give --programmatic-validation, --defaulting or both"
        )
    root = made.root
    values = {
        **api_mod.values(made=made, api=api, content=""),
        "object_key": api.full_group.replace(".", "_").replace("-", "_") + "_" + api.singular,
    }
    new: dict[str, str] = {}
    for key in keys:
        directory = f"roles/{role_name(api=api, key=key)}"
        if (root / directory).exists():
            continue  # the author's role, or ours from an earlier call: never overwritten
        source = f"webhook/{_SORTS[key][0]}"
        for template in templates.tree(source):
            new[f"{directory}/{template}"] = templates.render(f"{source}/{template}", values)
    for template in templates.tree("webhook/config"):
        target = f"config/{template}"
        if not (root / target).exists():
            new[target] = templates.render(f"webhook/config/{template}", values)

    def read(relative: str) -> str | None:
        try:
            return (root / relative).read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ScaffoldError(f"{relative}: cannot be read ({exc}); nothing was written") from exc

    watches_text = read(WATCHES)
    if watches_text is None:
        raise ScaffoldError(f"{WATCHES}: missing; nothing was written")
    manifests_text = read(MANIFESTS)
    changes = [api_mod.Change(path=p, text=t, created=True) for p, t in new.items()]
    for relative, before, after in (
        (WATCHES, watches_text, add_to_watches(watches_text, api=api, keys=keys)),
        (MANIFESTS, manifests_text, manifests(existing=manifests_text, api=api, keys=keys)),
    ):
        if after != before:
            changes.append(api_mod.Change(path=relative, text=after, created=before is None))
    if not changes:
        raise ConflictError(
            f"the webhooks of {api.kind} ({api.api_version}) exist already; nothing changed",
            unchanged=True,
        )
    return changes


def create(
    *,
    root: Path,
    group: str,
    version: str,
    kind: str,
    validation: bool,
    defaulting: bool,
    out: Printer,
) -> list[api_mod.Change]:
    """Add the webhooks to the project in ``root``; returns what was written."""
    made = project.read(root)
    api = names.resource(group=group, domain=made.domain, version=version, kind=kind)
    keys = [k for k, wanted in (("validation", validation), ("mutation", defaulting)) if wanted]
    changes = plan(made=made, api=api, keys=keys)
    for change in changes:
        target = root / change.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change.text)
        out(f"{'wrote' if change.created else 'updated'} {change.path}")
    return changes


def next_steps(*, group: str, version: str, kind: str) -> str:
    """What the author does next (nothing of it is done for them)."""
    return (
        f"next: write the rules in the roles above; then\n"
        f"  make run      serves the webhooks locally: a certificate in .cluster/webhook-certs\n"
        f"                and webhook configurations calling https://127.0.0.1:9443\n"
        f"  make deploy   uncomment the [WEBHOOK] and [CERTMANAGER] lines in\n"
        f"                config/default/kustomization.yaml first (cert-manager must be\n"
        f"                installed), or provide the Secret webhook-server-cert yourself\n"
        f"  ({kind} {group}/{version}: the paths are in config/webhook/manifests.yaml)"
    )
