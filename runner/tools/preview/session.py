"""One check-mode run of a CR's role against the live cluster, with every write refused.

Part of ``playbook-operator preview``: the reconcile's Ansible step (watch → queue
→ reconcile → **ansible** → status) run once, by hand, in Ansible's check mode with
diffs (``--check --diff``). It reuses the runtime's pieces rather than copies of
them: the extra vars of :mod:`runner.ansible.extravars`, the
:class:`~runner.ansible.AnsibleRunner` (cold: no launchers for one run), and the
per-run :class:`~runner.proxy.OwnerProxy` in read-only mode, which lets reads and
``dryRun=All`` writes through (kubernetes.core dry-runs its writes on the server in
check mode) and answers every other write 403. The proxy also serves GETs of the
CR itself from the file (:func:`runner.tools.preview.target.resolve`), so a role that
reads its CR back, or ``k8s_status`` in check mode, sees the previewed spec even
for a CR that is not in the cluster.
"""

from __future__ import annotations

import logging
import tempfile
import uuid
from pathlib import Path

from runner import proxy as proxy_mod
from runner.ansible import extravars, launch
from runner.config import options
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, KubeObject, Resource
from runner.tools.preview import report as report_mod
from runner.tools.preview import target as target_mod

log = logging.getLogger("runner.preview")

#: Appended to ``--ansible-args``: Ansible's check mode, with the diffs modules compute.
CHECK_ARGS = "--check --diff"


def preview(
    *, cr_file: Path, settings: options.Settings, namespace: str | None = None
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

    def cached(resource: Resource, namespace: str, name: str) -> KubeObject | None:
        meta = target.obj["metadata"]
        if name == meta["name"] and namespace == (meta.get("namespace") or ""):
            return target.obj
        return None

    def caches(gvk: GVK) -> bool:
        return gvk == target.gvk

    proxy = proxy_mod.OwnerProxy(
        client=client, inject_owner=False, read_only=True, cache=cached, caches=caches
    )
    proxy.start()
    try:
        collector = report_mod.Collector()
        result = _run(target=target, settings=settings, proxy=proxy, collector=collector)
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


def _run(
    *,
    target: target_mod.Target,
    settings: options.Settings,
    proxy: proxy_mod.OwnerProxy,
    collector: report_mod.Collector,
) -> launch.RunResult:
    watch = target.watch
    built = extravars.build(
        obj=target.obj,
        snake_case=watch.snake_case_parameters,
        mark_unsafe=watch.mark_unsafe,
        watch_vars=watch.vars,
        finalizer_vars=None,
        allow_ansible_vars=watch.allow_ansible_vars_from_spec,
    )
    roles_path = ([watch.role.roles_path] if watch.role and watch.role.roles_path else []) + [
        Path(p) for p in settings.ansible_roles_path
    ]
    cmdline = f"{launch.strip_quotes(settings.ansible_args.strip())} {CHECK_ARGS}".strip()
    runner = launch.AnsibleRunner(launchers=None)
    with (
        tempfile.TemporaryDirectory(prefix="playbook-operator-preview-") as private,
        proxy.for_owner(target.obj) as env,
    ):
        spec = launch.RunSpec(
            ident=uuid.uuid4().hex[:16],
            private_data_dir=Path(private),
            playbook=watch.playbook,
            role=watch.role.name if watch.role else None,
            roles_path=tuple(roles_path),
            extravars=built.variables,
            envvars=dict(env),
            # From 1 up, Ansible prints why a task was skipped (check mode, or not).
            verbosity=max(1, settings.verbosity_for(watch.gvk)),
            cmdline=cmdline,
            log_events=settings.ansible_log_events,
            collections_path=tuple(Path(p) for p in settings.ansible_collections_path),
            on_event=collector,
        )
        return runner.run(spec, log=log)
