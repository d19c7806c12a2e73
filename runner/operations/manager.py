"""Wires the stages together and owns the process lifecycle.

For each watch: one informer per watched namespace feeds a controller's queue
through the primary predicate; the controller's workers call the reconciler,
which runs Ansible against the owner-injecting proxy. Children the proxy sees
start dependent watches. The manager also serves probes and metrics, takes the
leader Lease when asked to (or, with ``--sharded``, keeps this replica's shard
Lease and gates every controller with :class:`runner.operations.sharding.Shards`), and
shuts down gracefully on SIGTERM: stop taking work, let running reconciles
finish within the grace period, release the Lease.

What it runs sits in runnable groups (:mod:`runner.operations.runnables`), started in
controller-runtime's order and stopped in reverse: the listeners
(:mod:`~runner.operations.servers`), the warm launchers, the webhooks, the caches
(:mod:`~runner.operations.caches`), the election (:mod:`~runner.operations.election`),
the workers (the proxy and :mod:`~runner.operations.controllers`). Every way out of
the process goes through :mod:`runner.operations.exits`.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import runner
from runner import proxy
from runner.ansible import launch, lines, plan
from runner.base import errors
from runner.config import entry, sections
from runner.config.settings import Settings
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, Resource
from runner.operations import (
    caches,
    children,
    controllers,
    election,
    exits,
    health,
    needs,
    primaries,
    runnables,
    runs,
    servers,
    sharding,
)
from runner.operations.metrics import runtime
from runner.proxy import families as proxy_families
from runner.rbac import record as rbac_record
from runner.reconcile import families as reconcile_families
from runner.reconcile import startup
from runner.status import recorder, rejection
from runner.watch import dependents
from runner.watch import families as watch_families
from runner.webhook import service as webhook_service

log = logging.getLogger("runner.manager")

#: Answers during an API server's start or restart that mean "not yet", not "no".
_NOT_YET = frozenset({429, 500, 502, 503, 504})
#: How long a kind may be missing from discovery before it counts as not served: an API
#: server that just started lists CRD-backed groups a moment after it answers at all.
_NOT_FOUND_GRACE = 10.0


def served(
    discover: Callable[[GVK], Resource],
    gvk: GVK,
    *,
    stop: threading.Event,
    clock: Callable[[], float] = time.monotonic,
) -> Resource:
    """How the cluster serves ``gvk``, waiting while the API server cannot answer yet.

    A runner started beside a restarting API server (or through a connection that is
    being re-established) waits with capped backoff instead of dying with a
    traceback. A kind still missing after :data:`_NOT_FOUND_GRACE` raises
    :class:`~runner.kube.errors.NotFoundError`; a stop request raises
    :class:`~runner.base.errors.ConfigError` saying discovery never finished.
    """
    delay, started = 0.5, clock()
    while True:
        try:
            return discover(gvk)
        except kube_errors.NotFoundError:
            if clock() - started >= _NOT_FOUND_GRACE:
                raise
            problem = f"{gvk.kind} not in discovery yet"
        except kube_errors.ApiError as e:
            if e.status not in _NOT_YET:
                raise
            problem = str(e)
        except kube_errors.TransportError as e:
            problem = str(e)
        log.warning(
            "the API server cannot answer discovery yet; retrying",
            extra={"kind": gvk.kind, "error": problem, "retry_in": delay},
        )
        if stop.wait(delay):
            raise errors.ConfigError(f"stopped before discovery of {gvk.kind} finished")
        delay = min(delay * 2, 10.0)


def _ansible_runner(
    settings: Settings, *, registry: runtime.Metrics, groups: runnables.Runnables
) -> launch.AnsibleRunner:
    """The one Ansible runner, on warm launchers unless they are off."""
    launchers = runs.launchers_for(settings.ansible, registry=registry)
    if launchers is not None:
        # Closed after the runs (closing kills whatever still runs), before the listeners.
        groups.add(runnables.Group.LAUNCHERS, runnables.Hooks(on_stop=launchers.close))
    return launch.AnsibleRunner(
        launchers=launchers, artifacts=runs.artifact_budget(settings.ansible, log=log)
    )


def _shards(
    settings: sections.ElectionSettings,
    *,
    namespace: str,
    client: client_mod.Client,
    registry: runtime.Metrics,
) -> sharding.Shards | None:
    """The sharded mode's gate, or None when one replica (or the leader) runs everything."""
    if not settings.sharded:
        return None
    return election.shards_for(
        election=settings, namespace=namespace, client=client, registry=registry
    )


def _add_workers(
    groups: runnables.Runnables,
    *,
    owner_proxy: proxy.OwnerProxy | None,
    workers: controllers.Controllers,
    rejections: rejection.Reporter,
) -> None:
    """The workers' group: the proxy their runs talk through, the controllers, and the
    Failure reporter of undecodable objects (workers are the writers: once they run,
    statuses may be written too)."""
    if owner_proxy is not None:
        hooks = runnables.Hooks(on_start=owner_proxy.start, on_stop=owner_proxy.shutdown)
        groups.add(runnables.Group.WORKERS, hooks)
    groups.add(runnables.Group.WORKERS, workers)
    groups.add(runnables.Group.WORKERS, runnables.Hooks(on_start=rejections.open))


def _add_scrape_families(
    registry: runtime.Metrics,
    *,
    client: client_mod.Client,
    informers: caches.Caches,
    workers: controllers.Controllers,
) -> None:
    """Families read at scrape time: each owner's collector, on the one registry."""
    by_kind = workers.by_kind
    registry.add(proxy_families.RequestCount(lambda: client.request_count))
    registry.add(watch_families.InformerGauges(informers.held))
    registry.add(
        reconcile_families.KindGauges(
            depth=lambda: {gvk: c.queue.depth() for gvk, c in by_kind.items()},
            in_flight=lambda: {gvk: c.in_flight() for gvk, c in by_kind.items()},
        )
    )


class Manager:
    """The runner process: its runnable groups, made from the settings, run until stopped."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client_config = kube_config.load(settings.kubeconfig)
        self.client = client_mod.Client(self.client_config)
        self.stop_event = threading.Event()
        self.exit = exits.Exit(stop=self.stop_event)
        self.metrics = runtime.Metrics()
        # What each watch's runs and the runtime asked of RBAC (GET /debug/rbac).
        self.rbac = rbac_record.Record(
            on_denied=lambda use: self.metrics.api_denied.labels(
                group=use.group, resource=use.resource, verb=use.verb
            ).inc()
        )
        self.children = startup.Children()  # what runs touched: status.reconciledChildren
        self.runnables = runnables.Runnables()
        self.caches = caches.Caches()
        self.lease_namespace = settings.election.namespace or self.client_config.namespace
        self.needs = needs.RuntimeNeeds(
            rbac=self.rbac,
            namespaces=settings.watch_namespaces,
            owner_refs=settings.reconcile.inject_owner_ref,
            election=settings.election,
            lease_namespace=self.lease_namespace,
        )
        self.child_watch = children.ChildWatch(
            client=self.client, record=self.children, caches=self.caches, needs=self.needs
        )
        # Made by build():
        self.controllers: controllers.Controllers | None = None
        self.proxy: proxy.OwnerProxy | None = None
        # Admission webhooks (runner.webhook): every replica serves them.
        self.webhooks: webhook_service.Webhooks | None = None

    # -- probes ---------------------------------------------------------------

    def synced(self) -> bool:
        return self.caches.synced()

    def ready(self) -> bool:
        """/readyz: the caches synced and, with webhooks, their server listening with its certs."""
        return self.synced() and (self.webhooks is None or self.webhooks.ready())

    def alive(self) -> str | None:
        """None while workers and informers make progress, else why not (/healthz's 500)."""
        if self.stop_event.is_set():
            return None  # shutting down: informers end on purpose, runs drain
        return health.problem(
            workers=self.controllers.timeouts() if self.controllers is not None else [],
            watchers=list(self.caches.watchers),
            now=time.monotonic(),
        )

    # -- assembly -------------------------------------------------------------

    def build(self, *, run_env: Mapping[str, str]) -> None:
        """Make every runnable past the listeners from the settings; start nothing.

        ``run_env``: what every Ansible run gets on top of its kubeconfig (the
        listeners' custom-metrics address, :attr:`servers.Servers.run_env`)."""
        settings = self.settings
        runner = _ansible_runner(settings, registry=self.metrics, groups=self.runnables)
        cache = self.caches.get if settings.reconcile.cache_reads else None
        self.webhooks = webhook_service.build(
            settings=settings,
            runner=runner,
            client=self.client,
            cache=cache,
            caches=self.caches.holds,
            observer=self.metrics,
            run_env=run_env,
            rbac=self.rbac,
        )
        if self.webhooks is not None:
            self.runnables.add(
                runnables.Group.WEBHOOKS,
                runnables.Hooks(on_start=self.webhooks.start, on_stop=self.webhooks.shutdown),
            )
        self.runnables.add(runnables.Group.CACHES, self.caches)
        events = recorder.Recorder(self.client)
        environment = self._run_environment(cache)
        shards = _shards(
            settings.election,
            namespace=self.lease_namespace,
            client=self.client,
            registry=self.metrics,
        )
        cap = settings.reconcile.max_concurrent_runs
        self.controllers = controllers.Controllers(
            reconcile=settings.reconcile,
            ansible=settings.ansible,
            client=self.client,
            registry=self.metrics,
            runs=controllers.RunParts(
                runner=runner,
                environment=environment,
                run_env=run_env,
                events=events,
                rbac=self.rbac,
                children=self.children,
                slots=threading.Semaphore(cap) if cap > 0 else None,  # across every kind
            ),
            gate=shards,
            spread=runs.spread_for(
                settings.reconcile, dev=settings.dev, read=self.child_watch.read
            ),
        )
        self.runnables.add(
            runnables.Group.ELECTION,
            election.Election(
                election=settings.election,
                namespace=self.lease_namespace,
                client=self.client,
                shards=shards,
                hand_over=self.controllers.handed_over,
                leave=self.exit,
            ),
        )
        rejections = self._watch(self.controllers, shards=shards)
        _add_scrape_families(
            self.metrics, client=self.client, informers=self.caches, workers=self.controllers
        )
        _add_workers(
            self.runnables, owner_proxy=self.proxy, workers=self.controllers, rejections=rejections
        )
        self.caches.built()

    def _run_environment(self, cache: proxy.CacheLookup | None) -> plan.Environment:
        """What runs reach the API server through: the owner-injecting proxy (made here,
        ``--inject-owner-ref``), else the operator's kubeconfig."""
        settings = self.settings
        if settings.reconcile.inject_owner_ref:
            self.proxy = runs.owner_proxy(
                reconcile=settings.reconcile,
                entries=settings.watches,
                client=self.client,
                on_child=self.child_watch.saw,
                cache=cache,
                caches=self.caches.holds,
                rbac=self.rbac,
            )
        return self.proxy or runs.kubeconfig_environment(self.client_config)

    def _watch(
        self, workers: controllers.Controllers, *, shards: sharding.Shards | None
    ) -> rejection.Reporter:
        """The primary and dependent watches feeding ``workers``; the reporter of primary
        objects the informers cannot decode (they get a Failure condition, once we lead)."""
        settings = self.settings
        rejections = rejection.Reporter(
            client=self.client,
            owns=lambda gvk, key: shards is None or shards.owns(gvk, key),
        )
        primary = primaries.PrimaryWatches(
            client=self.client,
            discover=lambda gvk: served(self.client.resource, gvk, stop=self.stop_event),
            controllers=workers,
            caches=self.caches,
            needs=self.needs,
            rejections=rejections,
        )
        primary.add_all(
            settings.watches,
            watches_file=settings.watches_file,
            namespaces=settings.watch_namespaces,
        )
        self.caches.dependents = dependents.DependentWatches(
            client=self.client,
            namespaces=settings.watch_namespaces,
            stop=self.stop_event,
            watches_by_gvk={w.gvk: w for w in settings.watches},
            enqueue_for=workers.enqueue_for(),
            owner_namespaced={gvk: r.namespaced for gvk, r in primary.resources.items()},
            is_own_write=self.proxy.is_own_write if self.proxy else (lambda obj: False),
        )
        return rejections

    # -- development mode (runner.tools.devloop) ------------------------------------

    def requeue(self, gvk: GVK) -> int:
        """Enqueue every custom resource of ``gvk`` again (its role changed); how many."""
        if self.controllers is None:
            return 0
        return self.controllers.requeue(gvk, namespaces=self.caches.namespaces(gvk))

    def replace_watches(self, loaded: Sequence[entry.Watch]) -> bool:
        """Take edited watches in place (controllers, webhooks, the proxy's blacklists);
        False when only a new start applies them (kinds, filters, webhook paths changed)."""
        if not webhook_service.reloadable(self.webhooks, loaded, settings=self.settings.webhooks):
            return False
        if self.controllers is None or not self.controllers.replace_watches(loaded):
            return False
        if self.webhooks is not None:
            self.webhooks.hooks.replace(loaded)
        if self.proxy is not None:
            self.proxy.blacklists.update({watch.gvk: watch.blacklist for watch in loaded})
        self.settings = dataclasses.replace(self.settings, watches=tuple(loaded))
        return True

    # -- lifecycle ------------------------------------------------------------

    def run(self) -> int:
        """Run until SIGTERM/SIGINT; the exit code (:mod:`runner.operations.exits`).

        The listeners are bound first, before anything connects to the cluster; the
        caches start before the election, as controller-runtime's do: a standby is
        ready (its caches are warm) and takes over without relisting; only the
        workers — the only writers — wait for leadership.
        """
        signal.signal(signal.SIGTERM, self.exit.on_signal)
        signal.signal(signal.SIGINT, self.exit.on_signal)
        log_versions(self.settings.ansible.collections_path)
        listeners = servers.Servers(
            serving=self.settings.serving,
            client=self.client,
            registry=self.metrics,
            rbac=self.rbac,
            ready=self.ready,
            live=self.alive,
        )
        self.runnables.add(runnables.Group.SERVERS, listeners)
        self.build(run_env=listeners.run_env)
        if self.runnables.start(self.stop_event):
            log.info(
                "started",
                extra={
                    "watches": [str(w.gvk) for w in self.settings.watches],
                    "namespaces": list(self.settings.watch_namespaces) or "all",
                    "proxy_port": self.proxy.port if self.proxy else None,
                },
            )
            self.stop_event.wait()
        return self.shutdown()

    def shutdown(self) -> int:
        """The way out of a run: stop taking work, stop the groups in reverse order
        (running reconciles get the grace period), and the exit code."""
        self.stop_event.set()
        deadline = time.monotonic() + self.settings.graceful_shutdown_timeout
        clean = self.runnables.stop(deadline=deadline)
        return self.exit.stopped(clean=clean)


def log_versions(collections_path: Sequence[str]) -> None:
    """The first lines of a run: what it runs roles with, and a warning for an end-of-life line."""
    found = lines.installed(collections_path)
    log.info("Version", extra={"playbook-operator": runner.__version__, **found.fields()})
    warning = lines.end_of_life_warning(found.ansible_core, today=datetime.date.today())
    if warning:
        log.warning(warning, extra={"supported": list(lines.SUPPORTED)})
