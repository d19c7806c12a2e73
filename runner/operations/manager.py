"""Wires the stages together and owns the process lifecycle.

For each watch: one informer per watched namespace feeds a controller's queue
through the primary predicate; the controller's workers call the reconciler,
which runs Ansible against the owner-injecting proxy. Children the proxy sees
start dependent watches. The manager also serves probes and metrics, takes the
leader Lease when asked to (or, with ``--sharded``, keeps this replica's shard
Lease and gates every controller with :class:`runner.operations.sharding.Shards`), and
shuts down gracefully on SIGTERM: stop taking work, let running reconciles
finish within the grace period, release the Lease.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from types import FrameType

from runner import proxy, warm
from runner.ansible import launch
from runner.base import clock, errors, listener
from runner.config import options, watches
from runner.kube import client as client_mod
from runner.kube import config as kube_config
from runner.kube import errors as kube_errors
from runner.kube.types import GVK, KubeObject, ObjectKey, Resource, make_key, object_key
from runner.operations import access, health, leader, metrics, sharding
from runner.proxy import ownership
from runner.queue import trigger, workqueue
from runner.rbac import record as rbac_record
from runner.rbac import rules as rbac_rules
from runner.rbac import runtime as rbac_runtime
from runner.reconcile import controller as controller_mod
from runner.reconcile import pause, reconciler, startup
from runner.status import recorder, rejection
from runner.warm import tree as process_tree
from runner.watch import budget, dependents, source
from runner.watch import predicate as predicate_mod
from runner.webhook import service as webhook_service

log = logging.getLogger("runner.manager")

EXIT_LEADERSHIP_LOST = 3


def _event_filters(watch: watches.Watch) -> tuple[object, ...]:
    """What a watch's informers and predicates were built from."""
    return (
        watch.selector,
        watch.watch_annotations_changes,
        watch.watch_dependent_resources,
        watch.watch_cluster_scoped_resources,
        watch.watch_dependent_readiness,  # read by the dependent watches' handlers
        watch.dependent_selector,  # the cache budget of the dependent informers
        watch.cache_secrets,
    )


def _enqueuer(work_queue: workqueue.WorkQueue) -> dependents.Enqueue:
    def enqueue(key: ObjectKey, priority: workqueue.Priority, why: trigger.Trigger) -> None:
        work_queue.add(key, priority=priority, why=why)

    return enqueue


def _exit_with_runs(code: int) -> None:
    """Exit at once, ending every run first: runs started cold (ansible-playbook a
    child of ours, its workers in sessions of their own) would outlive ``os._exit``;
    warm launchers would end theirs only once they noticed this process gone."""
    process_tree.kill_children()
    os._exit(code)


#: Answers during an API server's start or restart that mean "not yet", not "no".
_NOT_YET = frozenset({429, 500, 502, 503, 504})
_TAKEOVER = trigger.Trigger(trigger.Kind.TAKEOVER, "shard moved to this replica")
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


class Manager:
    def __init__(self, settings: options.Settings) -> None:
        self.settings = settings
        self.client_config = kube_config.load(settings.kubeconfig)
        self.client = client_mod.Client(self.client_config)
        self.stop_event = threading.Event()
        self.metrics = metrics.Metrics()
        # What each watch's runs and the runtime asked of RBAC (GET /debug/rbac).
        self.rbac = rbac_record.Record(
            on_denied=lambda use: self.metrics.api_denied.labels(
                group=use.group, resource=use.resource, verb=use.verb
            ).inc()
        )
        self.controllers: dict[GVK, controller_mod.Controller] = {}
        self.children = startup.Children()  # what runs touched: status.reconciledChildren
        cap = settings.max_concurrent_runs
        self.run_slots = threading.Semaphore(cap) if cap > 0 else None  # across every kind
        self.primary_informers: dict[GVK, list[source.Informer]] = {}
        self.proxy: proxy.OwnerProxy | None = None
        self.dependents: dependents.DependentWatches | None = None
        self.elector: leader.LeaderElector | None = None
        self.shards: sharding.Shards | None = None
        # Shard rounds go on while running reconciles drain at shutdown: own stop event.
        self._shards_stop = threading.Event()
        self._shards_thread: threading.Thread | None = None
        # Likewise the leader's renewals: the Lease is kept until the runs ended.
        self._lease_stop = threading.Event()
        self.launchers: warm.Launchers | None = None
        # Admission webhooks (runner.webhook): every replica serves them.
        self.webhooks: webhook_service.Webhooks | None = None
        # Primary objects the informers cannot decode get a Failure condition, once we lead.
        self.rejections = rejection.Reporter(
            client=self.client,
            owns=lambda gvk, key: self.shards is None or self.shards.owns(gvk, key),
        )
        self._servers: list[listener.Server] = []
        self._watchers: list[health.Watcher] = []  # primary informers and their threads
        self._built = threading.Event()  # readiness waits for the informers build() makes
        # Environment every Ansible run gets on top of its kubeconfig (filled by _serve).
        self.run_env: dict[str, str] = {}

    # -- readiness and caches -------------------------------------------------

    def synced(self) -> bool:
        # With no watches (a new project's empty watches.yaml) nothing is left to sync.
        informers = [i for group in self.primary_informers.values() for i in group]
        return self._built.is_set() and all(i.synced.is_set() for i in informers)

    def ready(self) -> bool:
        """/readyz: the caches synced and, with webhooks, their server listening with its certs."""
        return self.synced() and (self.webhooks is None or self.webhooks.ready())

    def alive(self) -> str | None:
        """None while workers and informers make progress, else why not (/healthz's 500)."""
        if self.stop_event.is_set():
            return None  # shutting down: informers end on purpose, runs drain
        return health.problem(
            workers=[
                (ctrl, health.run_timeout(self.settings, ctrl.reconciler.watch))
                for ctrl in self.controllers.values()
            ],
            watchers=list(self._watchers),
            now=time.monotonic(),
        )

    def _primary_lookup(self, gvk: GVK) -> reconciler.Cache:
        def lookup(key: ObjectKey) -> KubeObject | None:
            for informer in self.primary_informers.get(gvk, []):
                if informer.synced.is_set():
                    found = informer.get(key)
                    if found is not None:
                        return found
            return None

        return lookup

    def _cached(self, resource: Resource, namespace: str, name: str) -> KubeObject | None:
        """Reads for the proxy: primary kinds, then dependent kinds. Safe because a
        reconcile is triggered only after its informer's store took the triggering change."""
        if resource.gvk in self.primary_informers:
            return self._primary_lookup(resource.gvk)(make_key(namespace=namespace, name=name))
        if self.dependents is not None:
            return self.dependents.get(resource, namespace, name)
        return None

    def _caches(self, gvk: GVK) -> bool:
        """Whether an informer of the runner holds ``gvk`` (primary or dependent kind)."""
        if gvk in self.primary_informers:
            return True
        return self.dependents is not None and self.dependents.caches(gvk)

    # -- assembly -------------------------------------------------------------

    def build(self) -> None:
        settings = self.settings
        if settings.warm:
            self.launchers = warm.Launchers(
                max_runs=settings.warm_launcher_max_runs,
                max_rss_mib=settings.warm_launcher_max_rss,
            )
            launchers = self.launchers
            self.metrics.add_launcher_metrics(
                memory=launchers.memory_bytes,
                running=launchers.running,
                outcomes=lambda: dict(launchers.outcomes),
                recycles=lambda: dict(launchers.recycles),
            )
        runner = launch.AnsibleRunner(launchers=self.launchers)
        self.webhooks = webhook_service.build(
            settings=settings,
            runner=runner,
            client=self.client,
            cache=self._cached if settings.cache_reads else None,
            caches=self._caches,
            observer=self.metrics,
            run_env=self.run_env,
        )
        events = recorder.Recorder(self.client)
        environment: reconciler.RunEnvironment
        if settings.inject_owner_ref:
            self.proxy = proxy.OwnerProxy(
                client=self.client,
                port=settings.proxy_port,
                inject_owner=True,
                on_child=self._on_child,
                cache=self._cached if settings.cache_reads else None,
                caches=self._caches,
                blacklists={w.gvk: w.blacklist for w in settings.watches},
                rbac=self.rbac,
            )
            environment = self.proxy
        else:
            kubeconfig = self.client_config.source
            environment = reconciler.StaticEnvironment(
                None if kubeconfig == "in-cluster" else kubeconfig
            )
        if settings.sharded:
            self.shards = self._shards()
        if not settings.watches:
            log.warning(
                "nothing to watch: watches.yaml has no entries; add one with "
                "'playbook-operator create api'",
                extra={"file": str(settings.watches_file)},
            )
        namespaces: list[str | None] = list(settings.watch_namespaces) or [None]
        enqueue_for: dict[GVK, dependents.Enqueue] = {}
        owner_namespaced: dict[GVK, bool] = {}
        # One for every kind, so that the rate cap holds across kinds; none in dev mode,
        # where a restart means the author wants to see runs.
        spread = (
            startup.Spread(
                window=settings.startup_resync_window,
                rate=settings.startup_resync_rate,
                read=self._read_child,
            )
            if settings.startup_resync_window > 0 and not settings.dev
            else None
        )
        for watch in settings.watches:
            try:
                resource = served(self.client.resource, watch.gvk, stop=self.stop_event)
            except kube_errors.NotFoundError as e:
                # As ansible-operator stops on "no matches for kind"; the usual cause is
                # a kind just added (create api) whose CRD is not installed yet.
                raise errors.ConfigError(
                    f"{settings.watches_file}: the cluster does not serve {watch.gvk.kind} in "
                    f"{watch.gvk.api_version}: install its CRD first (make install)"
                ) from e
            owner_namespaced[watch.gvk] = resource.namespaced
            self._record_runtime_needs(watch, resource)
            one_kind = reconciler.Reconciler(
                watch=watch,
                settings=settings,
                client=self.client,
                runner=runner,
                environment=environment,
                cache=self._primary_lookup(watch.gvk),
                on_run=self.metrics.observe_run,
                events=events,
                run_env=self.run_env,
                rbac=self.rbac,
                children=self.children,
                run_slots=self.run_slots,
            )
            ctrl = controller_mod.Controller(
                reconciler=one_kind,
                work_queue=workqueue.WorkQueue(
                    base_delay=settings.backoff_base,
                    max_delay=settings.backoff_max,
                    observer=self.metrics.queue_observer(controller_mod.name_for(watch.gvk)),
                ),
                workers=settings.workers_for(watch.gvk),
                observer=self.metrics,
                gate=self.shards,
                spread=spread,
            )
            self.metrics.add_controller(name=ctrl.name, workers=ctrl.workers, work_queue=ctrl.queue)
            handle = ctrl.handler(
                pause.or_changed(
                    predicate_mod.primary(
                        watch_annotations=watch.watch_annotations_changes,
                        selector_matches=watch.selector.matches,
                    )
                )
            )
            self.primary_informers[watch.gvk] = [
                source.Informer(
                    client=self.client,
                    resource=resource,
                    namespace=namespace,
                    handler=handle,
                    log=log,
                    on_rejected=self.rejections.hook(resource),
                )
                for namespace in (namespaces if resource.namespaced else [None])
            ]
            self.controllers[watch.gvk] = ctrl
            enqueue_for[watch.gvk] = ctrl.enqueue if self.shards else _enqueuer(ctrl.queue)
        self.dependents = dependents.DependentWatches(
            client=self.client,
            namespaces=settings.watch_namespaces,
            stop=self.stop_event,
            watches_by_gvk={w.gvk: w for w in settings.watches},
            enqueue_for=enqueue_for,
            owner_namespaced=owner_namespaced,
            is_own_write=self.proxy.is_own_write if self.proxy else (lambda obj: False),
        )
        self.metrics.add_api_counter(lambda: self.client.request_count)
        self.metrics.add_informer_gauges(self._informers_held)
        self.metrics.add_queue_gauges(
            depth=lambda: {gvk: c.queue.depth() for gvk, c in self.controllers.items()},
            in_flight=lambda: {gvk: c.in_flight() for gvk, c in self.controllers.items()},
        )
        self._built.set()

    def _informers_held(self) -> list[tuple[GVK, budget.Held]]:
        """What each informer (primary and dependent) holds, for the metrics."""
        informers = [i for group in self.primary_informers.values() for i in group]
        if self.dependents is not None:
            informers += self.dependents.informers()
        return [(informer.resource.gvk, informer.held()) for informer in informers]

    def _shards(self) -> sharding.Shards:
        settings = self.settings
        replica = settings.shard_replica()
        problem = sharding.replica_problem(replica)
        if problem:
            raise errors.ConfigError(
                f"replica id {replica!r} (--replica-id, $POD_NAME or the host name): {problem}"
            )
        shards = sharding.Shards(
            leases=sharding.KubeLeases(
                client=self.client,
                namespace=settings.leader_election_namespace or self.client_config.namespace,
                group=settings.shard_group_name(),
                replica=replica,
                holder=sharding.incarnation(replica),
                duration=settings.lease_duration,
            ),
            replica=replica,
            clock=clock.MonotonicClock(),
            lease_duration=settings.lease_duration,
            renew_deadline=settings.renew_deadline,
            retry_period=settings.retry_period,
        )
        stats = shards.stats
        self.metrics.add_shard_metrics(
            owned=lambda: stats.owned,
            members=lambda: stats.members,
            handovers=lambda: dict(stats.handovers),
            view_changes=lambda: stats.view_changes,
        )
        return shards

    def _handed_over(self, items: Iterable[sharding.Item]) -> None:
        for gvk, key in items:
            ctrl = self.controllers.get(gvk)
            if ctrl is not None:
                ctrl.enqueue(key, workqueue.Priority.RESYNC, why=_TAKEOVER)

    def _fenced(self, reason: str) -> None:
        # Our claims may soon count as expired elsewhere: stop before two replicas run one key.
        log.error("exiting: shard ownership lost", extra={"reason": reason})
        _exit_with_runs(EXIT_LEADERSHIP_LOST)

    def _record_runtime_needs(self, watch: watches.Watch, resource: Resource) -> None:
        """What the runtime asks of the API server for ``watch``, whatever its role does."""
        settings = self.settings
        uses = list(
            rbac_runtime.primary(
                group=watch.gvk.group,
                plural=resource.plural,
                namespaces=settings.watch_namespaces if resource.namespaced else (),
                status=watch.manage_status,
                finalizer=watch.finalizer is not None,
                owner_refs=settings.inject_owner_ref,
            )
        )
        if settings.leader_elect or settings.sharded:
            namespace = settings.leader_election_namespace or self.client_config.namespace
            uses += rbac_runtime.leases(namespace=namespace, sharded=settings.sharded)
        for use in uses:
            self.rbac.used(watch.gvk, use, source=rbac_rules.RUNTIME)

    def _read_child(self, child: startup.Child, owner: KubeObject) -> KubeObject | None:
        """A child a CR's last successful run recorded, read at start-up; its kind is
        watched from now on, as the run that touched it would have made it be, so a
        change while the CR waits for its spread run still triggers one."""
        gvk = GVK.of({"apiVersion": child.api_version, "kind": child.kind})
        try:
            live = self.client.get(gvk, name=child.name, namespace=child.namespace or None)
        except kube_errors.NotFoundError:
            return None
        self._on_child(ownership.Owner.of(owner), self.client.resource(gvk), live)
        return live

    def _on_child(self, owner: ownership.Owner, resource: Resource, child: KubeObject) -> None:
        self.children.saw(owner.uid, gvk=resource.gvk, obj=child)
        if self.dependents is not None:
            self.dependents.ensure(owner, resource, child)
            if self.dependents.caches(resource.gvk):  # a dependent watch lists and watches it
                for use in rbac_runtime.dependent(
                    group=resource.gvk.group,
                    plural=resource.plural,
                    namespaces=self.settings.watch_namespaces if resource.namespaced else (),
                ):
                    self.rbac.used(owner.gvk, use, source=rbac_rules.RUNTIME)

    # -- development mode (runner.tools.devloop) ------------------------------------

    def requeue(self, gvk: GVK) -> int:
        """Enqueue every custom resource of ``gvk`` again (its role changed); how many.

        Listed from the API server, not the informers' stores: a dev-mode edit is rare
        and the list is the truth of the moment.
        """
        ctrl = self.controllers.get(gvk)
        if ctrl is None:
            return 0
        selector = ctrl.reconciler.watch.selector
        keys: set[ObjectKey] = set()
        for informer in self.primary_informers.get(gvk, []):
            for item in self.client.list(gvk, namespace=informer.namespace).get("items") or []:
                if selector.matches((item.get("metadata") or {}).get("labels") or {}):
                    keys.add(object_key(item))
        for key in keys:
            ctrl.queue.add(key, why=trigger.Trigger(trigger.Kind.DEV_EDIT, "role or playbook"))
        return len(keys)

    def replace_watches(self, loaded: Sequence[watches.Watch]) -> bool:
        """Take edited watches in place: the same kinds with other roles, vars, periods,
        finalizers or blacklists. False when kinds were added or removed, or when what
        the informers filter or watch changed: only a new start applies that."""
        new = {w.gvk: w for w in loaded}
        if new.keys() != self.controllers.keys():
            return False
        for gvk, watch in new.items():
            old = self.controllers[gvk].reconciler.watch
            if _event_filters(old) != _event_filters(watch):
                return False
        for gvk, watch in new.items():
            self.controllers[gvk].reconciler.watch = watch  # read afresh by every reconcile
            if self.proxy is not None:
                self.proxy.blacklists[gvk] = watch.blacklist
        self.settings = dataclasses.replace(self.settings, watches=tuple(loaded))
        return True

    # -- lifecycle ------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("signal received; shutting down", extra={"signal": signal.Signals(signum).name})
        self.stop_event.set()

    def _serve(self) -> None:
        """Listen on the probe, metrics and custom-metrics addresses.

        Called before anything connects to the cluster, as controller-runtime binds
        its listeners when the manager is made: a taken port is a start-up error
        naming the flag (:class:`errors.ListenError`), not a traceback later on.
        """
        settings = self.settings
        self._keep(
            health.listen(
                flag="--health-probe-bind-address",
                address=settings.health_probe_bind_address,
                handler=health.handler_for(ready=self.ready, live=self.alive),
                name="health",
            )
        )
        authorize: metrics.Authorize | None = None
        if settings.metrics_require_rbac:
            authorizer = access.TokenAuthorizer(self.client)
            authorize = lambda header: authorizer.check(header).value  # noqa: E731
        metrics_on = settings.metrics_bind_address not in ("", "0")
        self._keep(
            health.listen(
                flag="--metrics-bind-address",
                address=settings.metrics_bind_address,
                handler=metrics.exposition_handler(
                    self.metrics, authorize=authorize, rbac=self.rbac.snapshot
                ),
                name="metrics",
                tls=access.server_context(settings.metrics_cert_dir or None)
                if settings.metrics_secure and metrics_on
                else None,
            )
        )
        custom = self._keep(
            health.listen(
                flag="--custom-metrics-bind-address",
                address=settings.custom_metrics_bind_address,
                handler=metrics.custom_handler(self.metrics),
                name="custom-metrics",
                default_host="127.0.0.1",
            )
        )
        if custom is not None:
            self.run_env["PLAYBOOK_OPERATOR_METRICS_URL"] = (
                f"http://127.0.0.1:{custom.server_port}/metrics"
            )

    def _keep(self, server: listener.Server | None) -> listener.Server | None:
        if server is not None:
            self._servers.append(server)
        return server

    def _lead(self) -> bool:
        """Block until leader (or not electing). False if stopped while waiting."""
        if not self.settings.leader_elect:
            return True
        namespace = self.settings.leader_election_namespace or self.client_config.namespace
        self.elector = leader.LeaderElector(
            client=self.client,
            namespace=namespace,
            name=self.settings.leader_lease_name(),
            identity=leader.default_identity(),
            lease_duration=self.settings.lease_duration,
            renew_deadline=self.settings.renew_deadline,
            retry_period=self.settings.retry_period,
        )
        if not self.elector.acquire(self.stop_event):
            return False
        threading.Thread(
            target=self.elector.keep,
            args=(self._lease_stop,),
            kwargs={"on_lost": self._leadership_lost},
            name="lease",
            daemon=True,
        ).start()
        return True

    def _leadership_lost(self) -> None:
        # Another replica may already reconcile: stop at once rather than risk two writers.
        log.error("exiting: leadership lost")
        _exit_with_runs(EXIT_LEADERSHIP_LOST)

    def start(self) -> bool:
        """Fill the caches, win the lease, then start the proxy and workers.

        The probes and metrics already serve (``run`` binds them first). Caches
        start before the election, as controller-runtime's do: a standby is
        ready (its caches are warm) and takes over without relisting; only the
        workers — the only writers — wait for leadership.
        """
        for gvk, informers in self.primary_informers.items():
            for informer in informers:
                thread = threading.Thread(
                    target=informer.run,
                    args=(self.stop_event,),
                    name=f"informer-{gvk.kind.lower()}-{informer.namespace or 'all'}",
                    daemon=True,
                )
                thread.start()
                self._watchers.append(health.Watcher(informer=informer, thread=thread))
        if self.webhooks is not None:
            self.webhooks.start()  # on every replica: admission answers never write
        if not self._lead():
            return False
        if self.shards is not None:
            self._shards_thread = threading.Thread(
                target=self.shards.run,
                args=(self._shards_stop,),
                kwargs={"enqueue": self._handed_over, "on_fenced": self._fenced},
                name="shards",
                daemon=True,
            )
            self._shards_thread.start()
        if self.proxy is not None:
            self.proxy.start()
        for ctrl in self.controllers.values():
            ctrl.start()
        self.rejections.open()  # workers are the writers: now statuses may be written too
        log.info(
            "started",
            extra={
                "watches": [str(w.gvk) for w in self.settings.watches],
                "namespaces": list(self.settings.watch_namespaces) or "all",
                "proxy_port": self.proxy.port if self.proxy else None,
            },
        )
        return True

    def shutdown(self) -> bool:
        """Stop taking work and wait for running reconciles; True if all finished in time."""
        self.stop_event.set()
        clean = True
        deadline = time.monotonic() + self.settings.graceful_shutdown_timeout
        for ctrl in self.controllers.values():
            clean = ctrl.stop(timeout=max(0.0, deadline - time.monotonic())) and clean
        self._lease_stop.set()
        if self.elector is not None and clean:
            self.elector.release()  # runs ended: a standby may start at once
        self._shards_stop.set()
        if self.shards is not None and self._shards_thread is not None:
            self._shards_thread.join(timeout=30)
            if clean:
                self.shards.release()  # runs ended: the others may take our objects at once
        if self.proxy is not None:
            self.proxy.shutdown()
        if self.webhooks is not None:
            self.webhooks.shutdown()
        if self.launchers is not None:
            self.launchers.close()  # after the runs: closing kills whatever still runs
        for server in self._servers:
            server.shutdown()
        return clean

    def run(self) -> int:
        """Run until SIGTERM/SIGINT; exit code 0 after a graceful shutdown."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        self._serve()
        self.build()
        if self.start():
            self.stop_event.wait()
        clean = self.shutdown()
        log.info("stopped", extra={"clean": clean})
        return 0
