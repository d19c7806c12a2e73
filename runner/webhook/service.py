"""The webhook side of one runner: the read-only proxy, the hooks and the HTTPS server.

What the manager wires in (:func:`build`) and starts on every replica — leader
or not, sharded or not: admission answers never write, so any replica may give
them. Built only when some watch has a ``validation:`` or ``mutation:`` entry.
With the runner's RBAC record, the runs' reads and the API's 403s go into it under
their kind's watch, as reconciles' do (the writes the proxy refuses do not: they
never reach the API server).

Each admission run has a private data dir under ``<runner-dir>/.webhook/run-*``,
removed when it ends; a runner killed mid-run leaves its dirs behind (extra vars
with the request's object, artifacts). :func:`build` purges them first: the runner
dir is this process's alone (``--runner-dir`` is claimed with a lock), so no run
of another runner is in there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from runner import proxy
from runner.ansible import launch
from runner.config import entry as config_entry
from runner.config import sections
from runner.config.settings import Settings
from runner.kube.client import Client
from runner.kube.types import GVK, KubeObject
from runner.rbac import record as rbac_record
from runner.webhook import hooks, server

log = logging.getLogger("runner.webhook")

#: Refused writes a long-running read-only proxy remembers (only the latest matter).
_REFUSED_KEPT = 100


class Webhooks:
    """The proxy and the server of the runner's admission webhooks."""

    def __init__(
        self, *, read_only: proxy.OwnerProxy, listener: server.WebhookServer, answerer: hooks.Hooks
    ) -> None:
        self.proxy = read_only
        self.server = listener
        self.hooks = answerer

    def start(self) -> None:
        self.proxy.start()
        self.server.start()

    def ready(self) -> bool:
        return self.server.ready()

    def shutdown(self) -> None:
        self.server.shutdown()
        self.proxy.shutdown()


def build(
    *,
    settings: Settings,
    runner: launch.AnsibleRunner,
    client: Client,
    cache: proxy.CacheLookup | None,
    caches: Callable[[GVK], bool],
    observer: server.WebhookObserver | None,
    run_env: Mapping[str, str],
    rbac: rbac_record.Record | None = None,
) -> Webhooks | None:
    """The webhooks of ``settings.watches``; None when no watch has one.

    Raises :class:`~runner.base.errors.ConfigError` when the certificates are missing
    and :class:`~runner.base.errors.ListenError` when the port cannot be bound.
    """
    purge_leftovers(settings.ansible.runner_dir / hooks.RUNS_DIR)
    if not hooks.served(settings.watches):
        return None
    if not settings.webhooks.enabled:
        log.info("admission webhooks not served: ENABLE_WEBHOOKS=false")
        return None
    read_only = proxy.OwnerProxy(
        client=client,
        inject_owner=False,
        read_only=True,
        cache=cache,
        caches=caches,
        rbac=rbac.reads_only() if rbac is not None else None,
    )
    try:
        answerer = hooks.Hooks(
            watches=settings.watches,
            ansible=settings.ansible,
            runner=runner,
            environment=_Bounded(read_only),
            max_concurrent=settings.webhooks.max_concurrent,
            run_env=run_env,
            rbac=rbac,
        )
        listener = server.WebhookServer(
            answerer=answerer,
            port=settings.webhooks.port,
            host=settings.webhooks.host,
            cert_dir=settings.webhooks.cert_dir,
            client_ca=settings.webhooks.client_ca,
            max_concurrent=settings.webhooks.max_concurrent,
            observer=observer,
        )
    except Exception:
        read_only.shutdown()
        raise
    return Webhooks(read_only=read_only, listener=listener, answerer=answerer)


def purge_leftovers(runs_dir: Path) -> int:
    """Remove the ``run-*`` entries an earlier runner left in ``runs_dir`` (its webhook
    runs' private data dirs); how many. Links are removed, never followed."""
    if runs_dir.is_symlink():
        return 0  # not the runner's own directory: left alone
    try:
        with os.scandir(runs_dir) as found:
            entries = [entry for entry in found if entry.name.startswith("run-")]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link inside
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
    if entries:
        log.info(
            "leftover webhook runs removed", extra={"runs": len(entries), "dir": str(runs_dir)}
        )
    return len(entries)


def reloadable(
    serving: Webhooks | None,
    loaded: Sequence[config_entry.Watch],
    *,
    settings: sections.WebhookSettings,
) -> bool:
    """Whether edited watches (``run --dev``) keep the webhook paths this runner serves;
    a webhook added or removed needs a new start (so does enabling the first one)."""
    wanted = set(hooks.served(loaded)) if settings.enabled else set()
    return wanted == (set(serving.hooks.paths) if serving is not None else set())


class _Bounded:
    """The read-only proxy's sessions, keeping only its latest refused writes: it lives as
    long as the runner, and every refused write is remembered (preview reports them)."""

    def __init__(self, read_only: proxy.OwnerProxy) -> None:
        self._proxy = read_only

    def for_owner(
        self, owner_obj: KubeObject
    ) -> contextlib.AbstractContextManager[Mapping[str, str]]:
        refused = self._proxy.refused
        if len(refused) > _REFUSED_KEPT:
            del refused[: len(refused) - _REFUSED_KEPT]
        return self._proxy.for_owner(owner_obj)
