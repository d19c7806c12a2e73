"""The API families: requests sent to the API server, and those it denied to runs.

Every request this process sends (its own and, through the proxy, its Ansible runs')
is counted by the kube client and read at scrape time (:class:`RequestCount`). A run's
request the API server answered 403 is counted by the RBAC rule the role lacked
(``group``, ``resource``, ``verb``: bounded by the kinds and verbs roles use); the
RBAC record reports those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from runner.prometheus import registry as registry_mod


def denied_counter(registry: registry_mod.Registry) -> registry_mod.Counter:
    """``playbook_operator_api_requests_denied_total``, by the rule lacked."""
    return registry.counter(
        "playbook_operator_api_requests_denied_total",
        "Requests of Ansible runs the API server denied (403), by the RBAC rule lacked.",
        ["group", "resource", "verb"],
    )


class RequestCount:
    """``playbook_operator_api_requests_total``: the kube client's count, at scrape time."""

    def __init__(self, read: Callable[[], int]) -> None:
        self._read = read

    def collect(self) -> Iterator[registry_mod.Family]:
        family = registry_mod.CounterFamily(
            "playbook_operator_api_requests",
            "Requests sent to the API server, including those proxied for Ansible runs.",
        )
        family.add_metric([], self._read())
        yield family
