"""Secure metrics under a flood of random bearer tokens: the flooding client is
throttled, never a known scraper — not from another address, not from its own."""

from __future__ import annotations

import secrets
from typing import Any, cast

import pytest

from runner.kube import errors
from runner.kube.client import Client
from runner.operations import access

GOOD = "good-token"
FLOODER = "192.0.2.66"
SCRAPER = "192.0.2.10"


class FakeApi:
    """Answers TokenReviews (only GOOD authenticates) and SubjectAccessReviews (allowed)."""

    def __init__(self) -> None:
        self.token_reviews = 0

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if path.endswith("/tokenreviews"):
            self.token_reviews += 1
            token = kwargs["body"]["spec"]["token"]
            return {"status": {"authenticated": token == GOOD, "user": {"username": "scraper"}}}
        return {"status": {"allowed": True}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def authorizer(api: FakeApi, clock: FakeClock, **kwargs: Any) -> access.TokenAuthorizer:
    return access.TokenAuthorizer(cast(Client, api), now=clock, **kwargs)


def flood(check: access.TokenAuthorizer, clock: FakeClock, *, seconds: float) -> set[str]:
    """Random tokens from FLOODER, 2 a second (what starved a scraper before); their verdicts."""
    seen = set()
    for _ in range(int(seconds * 2)):
        clock.now += 0.5
        seen.add(check.check(f"Bearer {secrets.token_hex(16)}", client=FLOODER).name)
    return seen


@pytest.mark.parametrize(
    "scraper",
    [
        pytest.param(SCRAPER, id="another-address"),
        pytest.param(FLOODER, id="the-flooders-address"),
    ],
)
def test_a_known_scraper_is_served_through_a_flood(scraper: str) -> None:
    api, clock = FakeApi(), FakeClock()
    check = authorizer(api, clock)
    first = check.check(f"Bearer {GOOD}", client=scraper)
    assert first is access.Verdict.ALLOWED, f"expected the scraper allowed at first, saw {first}"
    verdicts = []
    for _ in range(5):  # five minutes of flood, its cached verdict expiring each one
        flooded = flood(check, clock, seconds=access.CACHE_SECONDS)
        verdicts.append(check.check(f"Bearer {GOOD}", client=scraper))
    assert "THROTTLED" in flooded, f"expected the flooder throttled, saw {flooded}"
    assert set(verdicts) == {access.Verdict.ALLOWED}, (
        f"expected the scraper from {scraper} allowed once a minute through the flood, "
        f"saw {[v.name for v in verdicts]}"
    )


def test_a_new_scraper_is_reviewed_while_another_client_floods() -> None:
    api, clock = FakeApi(), FakeClock()
    check = authorizer(api, clock)
    flooded = flood(check, clock, seconds=60)
    assert "THROTTLED" in flooded, f"expected the flooder throttled, saw {flooded}"
    reviews = api.token_reviews
    verdict = check.check(f"Bearer {GOOD}", client=SCRAPER)
    assert verdict is access.Verdict.ALLOWED, (
        f"expected a first scrape from {SCRAPER} reviewed and allowed while {FLOODER} "
        f"floods, saw {verdict.name}"
    )
    assert api.token_reviews == reviews + 1, "expected the new scraper's token reviewed"


def test_many_clients_together_stay_within_the_total_rate() -> None:
    api, clock = FakeApi(), FakeClock()
    check = authorizer(api, clock, total_burst=20, total_rate=5.0)
    for n in range(2000):  # 2000 addresses, one random token each, 100 a second
        clock.now += 0.01
        check.check(f"Bearer {secrets.token_hex(16)}", client=f"10.0.{n // 256}.{n % 256}")
    allowed = 20 + int(20 * 5.0) + 1
    assert api.token_reviews <= allowed, (
        f"expected at most {allowed} TokenReviews from 2000 clients in 20 s, "
        f"saw {api.token_reviews}"
    )


def test_refused_tokens_never_push_a_known_scraper_out_of_the_cache() -> None:
    api, clock = FakeApi(), FakeClock()
    # Buckets wide enough to review every random token: only the cache bound is tested.
    check = authorizer(
        api, clock, cache_entries=10, burst=10_000, total_burst=10_000, clients=10_000
    )
    check.check(f"Bearer {GOOD}", client=SCRAPER)
    for n in range(1000):
        clock.now += 0.01
        check.check(f"Bearer {secrets.token_hex(16)}", client=f"10.1.{n // 256}.{n % 256}")
    reviews = api.token_reviews
    verdict = check.check(f"Bearer {GOOD}", client=SCRAPER)
    assert (verdict, api.token_reviews) == (access.Verdict.ALLOWED, reviews), (
        f"expected the scraper answered from the cache after 1000 refused tokens, saw "
        f"{verdict.name} with {api.token_reviews - reviews} more reviews"
    )
    assert check.cached() <= 20, f"expected at most 10 + 10 cached verdicts, saw {check.cached()}"


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        pytest.param({"authenticated": False}, access.Verdict.UNAUTHENTICATED, id="revoked"),
        pytest.param(None, access.Verdict.FORBIDDEN, id="api-server-down"),
    ],
)
def test_a_known_token_refused_on_its_next_review_is_forgotten(
    answer: dict[str, Any] | None, verdict: access.Verdict
) -> None:
    api, clock = FakeApi(), FakeClock()
    check = authorizer(api, clock, burst=1, rate=0.001, total_burst=1)
    check.check(f"Bearer {GOOD}", client=SCRAPER)  # the only review the buckets allow
    clock.now += access.CACHE_SECONDS

    def refuse(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if answer is None:
            raise errors.TransportError("connection refused")
        return {"status": answer}

    api.request = refuse  # type: ignore[method-assign]
    seen = check.check(f"Bearer {GOOD}", client=SCRAPER)
    assert seen is verdict, f"expected {verdict.name} on the review, saw {seen.name}"
    clock.now += access.CACHE_SECONDS
    again = check.check(f"Bearer {GOOD}", client=SCRAPER)
    assert again is access.Verdict.THROTTLED, (
        f"expected the token no longer known (throttled as any unknown one), saw {again.name}"
    )
