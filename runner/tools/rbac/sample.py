"""Fill an RBAC record by running the role once per sample CR, in preview's check mode.

Part of ``playbook-operator rbac --sample``. Each sample goes through
:mod:`runner.tools.preview` (the read-only proxy, Ansible's check mode): reads
reach the cluster and writes are dry-run by the API server (kubernetes.core sends
``dryRun=All`` in check mode) or refused by the proxy, so every verb the role
would use is seen and nothing is changed. The runtime's own needs for the watch
(informers, status, Events) are added as the running manager adds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.config.settings import Settings
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.rbac import record as rbac_record
from runner.rbac import rules as rbac_rules
from runner.rbac import runtime as rbac_runtime
from runner.tools.preview import report as report_mod
from runner.tools.preview import session as session_mod
from runner.tools.preview import target as target_mod


def record_samples(
    *, samples: list[Path], settings: Settings, namespace: str | None = None
) -> dict[str, Any]:
    """Run each sample once; the record's snapshot (``GET /debug/rbac``'s shape)."""
    record = rbac_record.Record()
    config = kube_config.load(settings.kubeconfig)
    client = client_mod.Client(config)
    for cr_file in samples:
        obj = target_mod.read(cr_file)
        watch = target_mod.watch_for(obj, loaded=settings.watches, path=cr_file)
        try:
            target = target_mod.resolve(
                obj, watch=watch, client=client, default_namespace=namespace or config.namespace
            )
            resource = client.resource(watch.gvk)
        except kube_errors.KubeError as exc:
            raise target_mod.PreviewError(
                f"{cr_file}: cannot read {watch.gvk} from the cluster: {exc}"
            ) from exc
        for use in rbac_runtime.primary(
            group=watch.gvk.group,
            plural=resource.plural,
            namespaces=(),
            status=watch.manage_status,
            finalizer=watch.finalizer is not None,
            owner_refs=True,
        ):
            record.used(watch.gvk, use, source=rbac_rules.RUNTIME)
        _run_one(target=target, settings=settings, client=client, record=record)
    return record.snapshot()


def _run_one(
    *,
    target: target_mod.Target,
    settings: Settings,
    client: client_mod.Client,
    record: rbac_record.Record,
) -> None:
    # preview's own proxy and run step, with a proxy that records (preview's entry
    # point makes one that does not).
    proxy = session_mod.read_only_proxy(target=target, client=client, rbac=record)
    proxy.start()
    try:
        session_mod.run(
            target=target,
            ansible=settings.ansible,
            environment=proxy,
            collector=report_mod.Collector(),
        )
    finally:
        proxy.shutdown()
