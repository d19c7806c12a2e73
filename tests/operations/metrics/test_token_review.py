"""Secure metrics: random bearer tokens neither grow the verdict cache nor flood
the API server with TokenReviews; known scrapers keep their cached verdicts."""

from __future__ import annotations

import secrets
import time
from typing import Any, cast

import pytest

from runner.kube.client import Client
from runner.operations import access

GOOD = "good-token"


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


def authorizer(api: FakeApi, **kwargs: Any) -> access.TokenAuthorizer:
    return access.TokenAuthorizer(cast(Client, api), **kwargs)


def test_random_tokens_cost_at_most_the_review_rate() -> None:
    api = FakeApi()
    check = authorizer(api)
    started = time.monotonic()
    verdicts = {check.check(f"Bearer {secrets.token_hex(16)}") for _ in range(500)}
    elapsed = time.monotonic() - started
    allowed = access.REVIEW_BURST + int(elapsed * access.REVIEWS_PER_SECOND) + 1
    assert api.token_reviews <= allowed, (
        f"expected at most {allowed} TokenReviews for 500 random tokens in {elapsed:.2f}s, "
        f"saw {api.token_reviews}"
    )
    assert access.Verdict.ALLOWED not in verdicts, f"a random token was allowed: {verdicts}"


def test_the_cache_stays_within_its_bound_and_keeps_a_known_scraper() -> None:
    api, clock = FakeApi(), FakeClock()
    check = authorizer(api, now=clock, cache_entries=50, burst=5, rate=10.0)
    assert check.check(f"Bearer {GOOD}") is access.Verdict.ALLOWED
    reviews = api.token_reviews
    for _ in range(2000):
        clock.now += 0.01  # 100 random tokens a second for 20 s
        check.check(f"Bearer {secrets.token_hex(16)}")
        # 50 passed and 50 refused at most: the two caches are bounded apart.
        assert check.cached() <= 100, f"expected at most 100 cached verdicts, saw {check.cached()}"
        if _ % 100 == 0:
            check.check(f"Bearer {GOOD}")  # a scrape now and then keeps it recently used
    assert api.token_reviews - reviews <= 5 + 10 * 20 + 1, (
        f"expected at most the burst plus 10/s of reviews, saw {api.token_reviews - reviews}"
    )
    before = api.token_reviews
    assert check.check(f"Bearer {GOOD}") is access.Verdict.ALLOWED
    assert api.token_reviews == before, "expected the scraper's verdict served from the cache"


@pytest.mark.parametrize(
    ("advance", "reviewed_again"),
    [
        pytest.param(access.CACHE_SECONDS - 1, False, id="within-ttl"),
        pytest.param(access.CACHE_SECONDS, True, id="expired"),
    ],
)
def test_verdicts_expire_after_their_ttl(advance: float, reviewed_again: bool) -> None:
    api, clock = FakeApi(), FakeClock()
    check = authorizer(api, now=clock)
    check.check(f"Bearer {GOOD}")
    clock.now += advance
    check.check(f"Bearer {GOOD}")
    assert api.token_reviews == (2 if reviewed_again else 1), (
        f"expected {'a second' if reviewed_again else 'no second'} review after {advance}s, "
        f"saw {api.token_reviews} reviews"
    )


def test_the_least_recently_used_verdict_goes_first() -> None:
    clock = FakeClock()
    cache = access.VerdictCache(size=2, ttl=60, now=clock)
    cache.put("a", access.Verdict.ALLOWED)
    cache.put("b", access.Verdict.FORBIDDEN)
    assert cache.get("a") is access.Verdict.ALLOWED  # a is now the most recent
    cache.put("c", access.Verdict.UNAUTHENTICATED)
    kept = {key: cache.get(key) for key in ("a", "b", "c")}
    assert kept == {
        "a": access.Verdict.ALLOWED,
        "b": None,
        "c": access.Verdict.UNAUTHENTICATED,
    }, f"expected b evicted, saw {kept}"


def test_the_bucket_refills_at_its_rate() -> None:
    clock = FakeClock()
    bucket = access.TokenBucket(rate=2.0, burst=3, now=clock)
    first = [bucket.take() for _ in range(4)]
    clock.now += 1.0
    later = [bucket.take() for _ in range(3)]
    assert (first, later) == ([True, True, True, False], [True, True, False]), (
        f"expected a burst of 3 then 2 a second, saw {first} then {later}"
    )
