"""The admission webhooks' families, controller-runtime's: requests by status code,
in flight and latency, labelled by the webhook's path.

The webhook server reports each request through its observer
(:class:`runner.webhook.server.WebhookObserver`): started, then finished with its code.
"""

from __future__ import annotations

from runner.prometheus import registry as registry_mod


class WebhookFamilies:
    """Every admission webhook's requests, on one registry."""

    def __init__(self, registry: registry_mod.Registry) -> None:
        self.webhook_requests = registry.counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ["code", "webhook"],
        )
        self.webhook_in_flight = registry.gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
        )
        self.webhook_latency = registry.histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            buckets=registry_mod.GO_DEFAULT_BUCKETS,
        )

    def webhook_started(self, webhook: str) -> None:
        """An admission request to ``webhook`` (its path) is being served."""
        self.webhook_in_flight.labels(webhook=webhook).inc()

    def webhook_finished(self, webhook: str, *, code: int, seconds: float) -> None:
        self.webhook_in_flight.labels(webhook=webhook).dec()
        self.webhook_requests.labels(code=str(code), webhook=webhook).inc()
        self.webhook_latency.labels(webhook=webhook).observe(seconds)
