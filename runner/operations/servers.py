"""The runner's own listeners: health probes, metrics, custom metrics.

The first runnable group (:mod:`runner.operations.runnables`). They are bound when
:class:`Servers` is made, before anything connects to the cluster, as
controller-runtime binds its listeners when the manager is made: a taken port is a
start-up error naming the flag (:class:`runner.base.errors.ListenError`), not a
traceback later on. The custom-metrics address is what every Ansible run is told
(:attr:`Servers.run_env`), so the runs are built after the servers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from runner.base.http import listener
from runner.config import sections
from runner.kube import client as client_mod
from runner.operations import access, health, peers
from runner.operations.metrics import endpoint, runtime
from runner.rbac import record as rbac_record

#: Where a role posts custom metrics (osdk_metric), in every run's environment.
METRICS_URL_ENV = "PLAYBOOK_OPERATOR_METRICS_URL"


class Servers:
    """The probe, metrics and custom-metrics listeners, serving from the moment they are made."""

    def __init__(
        self,
        *,
        serving: sections.ServingSettings,
        client: client_mod.Client,
        registry: runtime.Metrics,
        rbac: rbac_record.Record,
        ready: health.Check,
        live: health.Live,
    ) -> None:
        self._servers: list[listener.Server] = []
        self._keep(
            health.listen(
                flag="--health-probe-bind-address",
                address=serving.health_probe_bind_address,
                handler=health.handler_for(ready=ready, live=live),
                name="health",
            )
        )
        authorize: endpoint.Authorize | None = None
        if serving.metrics_require_rbac:
            authorize = _authorize(access.TokenAuthorizer(client))
        # /debug/rbac from another host: a token allowed that path, whatever the flags say.
        rbac_authorize = _authorize(access.TokenAuthorizer(client, path=endpoint.DEBUG_RBAC))
        metrics_on = serving.metrics_bind_address not in ("", "0")
        self._keep(
            health.listen(
                flag="--metrics-bind-address",
                address=serving.metrics_bind_address,
                handler=endpoint.exposition_handler(
                    registry,
                    authorize=authorize,
                    rbac=rbac.snapshot,
                    rbac_authorize=rbac_authorize,
                ),
                name="metrics",
                tls=access.server_context(serving.metrics_cert_dir or None)
                if serving.metrics_secure and metrics_on
                else None,
            )
        )
        custom = self._keep(
            health.listen(
                flag="--custom-metrics-bind-address",
                address=serving.custom_metrics_bind_address,
                handler=endpoint.custom_handler(registry),
                name="custom-metrics",
                default_host="127.0.0.1",
            )
        )
        #: What every Ansible run gets on top of its kubeconfig.
        self.run_env: Mapping[str, str] = (
            {METRICS_URL_ENV: f"http://127.0.0.1:{custom.server_port}/metrics"}
            if custom is not None
            else {}
        )

    def _keep(self, server: listener.Server | None) -> listener.Server | None:
        if server is not None:
            self._servers.append(server)
        return server

    def start(self, stop: threading.Event) -> bool:
        return True  # serving since they were made

    def stop(self, *, deadline: float, clean: bool) -> bool:
        for server in self._servers:
            server.shutdown()
        return True


def _authorize(authorizer: access.TokenAuthorizer) -> endpoint.Authorize:
    """The endpoint's check: ``authorizer``'s verdict, each client rate-limited apart."""
    return lambda header: authorizer.check(header, client=peers.current()).value
