"""One check-mode run of a CR's role against the live cluster, with every write refused.

Part of ``playbook-operator preview``: the reconcile's Ansible step (watch → queue
→ reconcile → **ansible** → status) run once, by hand, in Ansible's check mode with
diffs (``--check --diff``). It reuses the runtime's pieces rather than copies of
them: the run plan every run is built from (:class:`runner.ansible.plan.Builder`, in
check mode), the :class:`~runner.ansible.AnsibleRunner` (cold: no launchers for one
run), and the per-run :class:`~runner.proxy.OwnerProxy` in read-only mode, which lets reads and
``dryRun=All`` writes through (kubernetes.core dry-runs its writes on the server in
check mode) and answers every other write 403. The proxy also serves GETs of the
CR itself from the file (:func:`runner.tools.preview.target.resolve`), so a role that
reads its CR back, or ``k8s_status`` in check mode, sees the previewed spec even
for a CR that is not in the cluster.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any, Protocol

from runner import proxy as proxy_mod
from runner.ansible import launch, plan
from runner.ansible import spec as ansible_spec
from runner.config import sections
from runner.config.settings import Settings
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, KubeObject, Resource
from runner.rbac import record as rbac_record
from runner.tools.preview import report as report_mod
from runner.tools.preview import target as target_mod

log = logging.getLogger("runner.preview")


class Runner(Protocol):
    """What runs the spec: the runtime's AnsibleRunner (a fake in unit tests)."""

    def run(self, spec: ansible_spec.RunSpec, *, log: Any) -> launch.RunResult: ...


def preview(
    *, cr_file: Path, settings: Settings, namespace: str | None = None
) -> report_mod.Report:
    """Run the role or playbook of the CR in ``cr_file`` in check mode; what it would do."""
    obj = target_mod.read(cr_file)
    watch = target_mod.watch_for(obj, loaded=settings.watches, path=cr_file)
    config = kube_config.load(settings.kubeconfig)
    client = client_mod.Client(config)
    try:
        target = target_mod.resolve(
            obj, watch=watch, client=client, default_namespace=namespace or config.namespace
        )
    except kube_errors.KubeError as exc:
        raise target_mod.PreviewError(
            f"{cr_file}: cannot read {watch.gvk} from the cluster: {exc}"
        ) from exc

    proxy = read_only_proxy(target=target, client=client)
    proxy.start()
    try:
        collector = report_mod.Collector()
        result = run(
            target=target, ansible=settings.ansible, environment=proxy, collector=collector
        )
    finally:
        proxy.shutdown()
    return report_mod.build(
        subject=target.subject,
        target=target.description,
        exists=target.exists,
        events=collector.results,
        result=result,
        refused=proxy.refused,
    )


def read_only_proxy(
    *,
    target: target_mod.Target,
    client: client_mod.Client,
    rbac: rbac_record.Record | None = None,
) -> proxy_mod.OwnerProxy:
    """The proxy of a preview (not started): reads and dry runs reach the cluster, other
    writes are refused, and GETs of the previewed CR get ``target``'s object; with
    ``rbac``, every request is recorded (``rbac --sample``)."""

    def cached(resource: Resource, namespace: str, name: str) -> KubeObject | None:
        meta = target.obj["metadata"]
        if name == meta["name"] and namespace == (meta.get("namespace") or ""):
            return target.obj
        return None

    def caches(gvk: GVK) -> bool:
        return gvk == target.gvk

    return proxy_mod.OwnerProxy(
        client=client, inject_owner=False, read_only=True, cache=cached, caches=caches, rbac=rbac
    )


def run(
    *,
    target: target_mod.Target,
    ansible: sections.AnsibleSettings,
    environment: plan.Environment,
    collector: report_mod.Collector,
    runner: Runner | None = None,
) -> launch.RunResult:
    """The check-mode run of ``target`` in a private data dir of its own, removed after."""
    watch = target.watch
    builder = plan.Builder(ansible=ansible, environment=environment)
    with (
        tempfile.TemporaryDirectory(prefix="playbook-operator-preview-") as private,
        builder.open(
            owner=target.obj,
            content=plan.Content.of(watch),
            variables=builder.variables(target.obj, watch=watch).variables,
            private_data_dir=Path(private),
            # From 1 up, Ansible prints why a task was skipped (check mode, or not).
            verbosity=max(1, ansible.verbosity_for(watch.gvk)),
            check=True,
            on_event=collector,
        ) as spec,
    ):
        return (runner or launch.AnsibleRunner(launchers=None)).run(spec, log=log)
