"""Who may read ``/metrics``: TLS and Kubernetes RBAC for the metrics endpoint.

With ``--metrics-secure`` the endpoint serves HTTPS (a certificate from
``--metrics-cert-dir``, else a self-signed one made at start-up, as
controller-runtime does). With ``--metrics-require-rbac`` each scrape must
carry a bearer token: the API server authenticates it (TokenReview) and
authorizes ``get`` on the non-resource URL ``/metrics`` (SubjectAccessReview).
Answers are cached for a minute per token, so a scraping Prometheus costs two
API calls a minute, not two per scrape.

Random tokens must neither grow memory nor flood the API server: the cache
holds at most :data:`CACHE_ENTRIES` verdicts (least recently used go first),
and reviews of tokens not in it are rate limited by a token bucket
(:data:`REVIEW_BURST`, then :data:`REVIEWS_PER_SECOND`); a scrape over the rate
gets 429 without a review. The bucket also bounds how fast the cache can be
refilled, so a cached scraper's verdict outlives a flood of random tokens:
within one :data:`CACHE_SECONDS` fewer than :data:`CACHE_ENTRIES` new ones fit.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import logging
import ssl
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from enum import Enum
from pathlib import Path

from runner.kube import errors as kube_errors
from runner.kube.client import Client

log = logging.getLogger("runner.access")

CACHE_SECONDS = 60.0
CACHE_ENTRIES = 1024
REVIEW_BURST = 10
REVIEWS_PER_SECOND = 1.0

Now = Callable[[], float]


class Verdict(Enum):
    ALLOWED = 200
    UNAUTHENTICATED = 401
    FORBIDDEN = 403
    THROTTLED = 429  # too many unknown tokens lately: not reviewed


class TokenBucket:
    """``burst`` takes at once, refilled at ``rate`` per second. Not thread-safe."""

    def __init__(self, *, rate: float, burst: int, now: Now) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._now = now
        self._tokens = float(burst)
        self._at = now()

    def take(self) -> bool:
        now = self._now()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class VerdictCache:
    """Verdicts by token digest: at most ``size``, each for ``ttl`` seconds. Not thread-safe."""

    def __init__(self, *, size: int, ttl: float, now: Now) -> None:
        self._size = size
        self._ttl = ttl
        self._now = now
        self._entries: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Verdict | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._now() - entry[0] >= self._ttl:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: str, verdict: Verdict) -> None:
        self._entries[key] = (self._now(), verdict)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class TokenAuthorizer:
    """Decides whether a bearer token may ``get`` a non-resource path."""

    def __init__(
        self,
        client: Client,
        *,
        path: str = "/metrics",
        now: Now = time.monotonic,
        cache_entries: int = CACHE_ENTRIES,
        burst: int = REVIEW_BURST,
        rate: float = REVIEWS_PER_SECOND,
    ) -> None:
        self._client = client
        self._path = path
        self._cache = VerdictCache(size=cache_entries, ttl=CACHE_SECONDS, now=now)
        self._reviews = TokenBucket(rate=rate, burst=burst, now=now)
        self._lock = threading.Lock()

    def cached(self) -> int:
        """Verdicts held now."""
        with self._lock:
            return len(self._cache)

    def check(self, authorization: str | None) -> Verdict:
        if not authorization or not authorization.startswith("Bearer "):
            return Verdict.UNAUTHENTICATED
        token = authorization[len("Bearer ") :].strip()
        if not token:
            return Verdict.UNAUTHENTICATED
        key = hashlib.sha256(token.encode()).hexdigest()  # never keep tokens themselves
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            if not self._reviews.take():
                return Verdict.THROTTLED
        verdict = self._review(token)
        if verdict is not None:
            with self._lock:
                self._cache.put(key, verdict)
        return verdict or Verdict.FORBIDDEN

    def _review(self, token: str) -> Verdict | None:
        """The API server's verdict; None when it could not answer (not cached)."""
        try:
            review = self._client.request(
                "POST",
                "/apis/authentication.k8s.io/v1/tokenreviews",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenReview",
                    "spec": {"token": token},
                },
            )
            outcome = review.get("status") or {}
            if not outcome.get("authenticated"):
                return Verdict.UNAUTHENTICATED
            user = outcome.get("user") or {}
            access = self._client.request(
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body={
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {
                        "user": user.get("username", ""),
                        "groups": user.get("groups") or [],
                        "uid": user.get("uid", ""),
                        "extra": user.get("extra") or {},
                        "nonResourceAttributes": {"path": self._path, "verb": "get"},
                    },
                },
            )
        except kube_errors.KubeError as exc:
            # Fail closed: without an answer from the API server nobody is authorized.
            log.warning("metrics authorization failed", extra={"error": str(exc)})
            return None
        allowed = bool((access.get("status") or {}).get("allowed"))
        return Verdict.ALLOWED if allowed else Verdict.FORBIDDEN


def server_context(cert_dir: str | None) -> ssl.SSLContext:
    """A TLS server context from ``<cert_dir>/tls.crt`` and ``tls.key``, else self-signed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        directory = Path(cert_dir)
        context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
        return context
    cert, key = _self_signed()
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_path.write_bytes(cert)
        key_path.write_bytes(key)
        key_path.chmod(0o600)
        context.load_cert_chain(cert_path, key_path)  # read now; the files can go
    return context


def _self_signed() -> tuple[bytes, bytes]:
    # Imported here: only secure metrics need it.
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "playbook-operator-metrics")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
