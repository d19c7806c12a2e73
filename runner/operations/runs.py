"""How the Ansible runs of every watch are set up: launchers, where they talk, the spread.

The run side of the manager's wiring (watch → queue → reconcile → **ansible**): the
warm launchers runs start from (``--warm``), where a run talks to the API server (the
owner-injecting proxy, or with ``--inject-owner-ref=false`` the runner's own
kubeconfig), and the start-up spread of CRs that need no run at once
(:mod:`runner.reconcile.startup`). Each is made from its settings section.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from runner import proxy, warm
from runner.ansible import retention
from runner.config import entry, sections
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube.types import GVK
from runner.operations.metrics import runtime
from runner.rbac import record as rbac_record
from runner.reconcile import reconciler, startup
from runner.warm import families as warm_families


def launchers_for(
    ansible: sections.AnsibleSettings, *, registry: runtime.Metrics
) -> warm.Launchers | None:
    """The warm launchers (None with ``--warm=false``), their metrics registered."""
    if not ansible.warm:
        return None
    launchers = warm.Launchers(
        max_runs=ansible.warm_launcher_max_runs,
        max_rss_mib=ansible.warm_launcher_max_rss,
        idle_seconds=ansible.warm_launcher_idle_seconds,
    )
    registry.add(
        warm_families.LauncherCollector(
            memory=launchers.memory_bytes,
            running=launchers.running,
            outcomes=lambda: dict(launchers.outcomes),
            recycles=lambda: dict(launchers.recycles),
        )
    )
    return launchers


def artifact_budget(
    ansible: sections.AnsibleSettings, *, log: logging.Logger
) -> retention.ArtifactBudget:
    """The cap on every CR's artifacts together, knowing what an earlier runner left."""
    budget = retention.ArtifactBudget(max_bytes=ansible.artifacts_max_bytes, log=log)
    budget.scan(ansible.runner_dir)
    return budget


def owner_proxy(
    *,
    reconcile: sections.ReconcileSettings,
    entries: Sequence[entry.Watch],
    client: client_mod.Client,
    on_child: proxy.ChildObserver,
    cache: proxy.CacheLookup | None,
    caches: Callable[[GVK], bool],
    rbac: rbac_record.Record,
) -> proxy.OwnerProxy:
    """The owner-injecting proxy every run's kubeconfig names."""
    return proxy.OwnerProxy(
        client=client,
        port=reconcile.proxy_port,
        inject_owner=True,
        on_child=on_child,
        cache=cache,
        caches=caches,
        blacklists={w.gvk: w.blacklist for w in entries},
        rbac=rbac,
    )


def kubeconfig_environment(config: kube_config.ClientConfig) -> reconciler.StaticEnvironment:
    """Runs without the proxy (``--inject-owner-ref=false``) use the runner's kubeconfig."""
    source = config.source
    return reconciler.StaticEnvironment(None if source == "in-cluster" else source)


def spread_for(
    reconcile: sections.ReconcileSettings,
    *,
    dev: bool,
    read: startup.Reader,
) -> startup.Spread | None:
    """One spread for every kind, so that the rate cap holds across kinds; none in dev
    mode, where a restart means the author wants to see runs."""
    if reconcile.startup_resync_window <= 0 or dev:
        return None
    return startup.Spread(
        window=reconcile.startup_resync_window,
        rate=reconcile.startup_resync_rate,
        read=read,
    )
