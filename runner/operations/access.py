"""Who may read ``/metrics``: TLS and Kubernetes RBAC for the metrics endpoint.

With ``--metrics-secure`` the endpoint serves HTTPS (a certificate from
``--metrics-cert-dir``, else a self-signed one made at start-up, as
controller-runtime does). With ``--metrics-require-rbac`` each scrape must
carry a bearer token: the API server authenticates it (TokenReview) and
authorizes ``get`` on the non-resource URL ``/metrics`` (SubjectAccessReview).
``GET /debug/rbac`` from another host is checked the same way, for its own path.

Verdicts are cached by the token's SHA-256 (never the token), so a scraping
Prometheus costs two API calls a minute, not two per scrape. Random tokens must
neither grow memory, nor flood the API server, nor starve a real scraper:

- tokens that passed (TokenReview and SubjectAccessReview) and tokens refused are
  cached apart, each at most :data:`CACHE_ENTRIES` (least recently used go first),
  so refused tokens never push a known scraper out. Within :data:`CACHE_SECONDS`
  of its review a token is answered from the cache, from whatever client;
- reviews of tokens in neither cache are rate limited per client (remote
  address, :func:`runner.operations.peers.current`) by a token bucket
  (:data:`REVIEW_BURST`, then :data:`REVIEWS_PER_SECOND`), and for all clients
  together by a wider one (:data:`TOTAL_REVIEW_BURST`, :data:`TOTAL_REVIEWS_PER_SECOND`)
  that a single client's bucket cannot drain. A request over its client's rate
  gets 429 without a review; another client's is reviewed;
- a token that passed stays known for :data:`KNOWN_SECONDS`: once its cached
  verdict expires, its next use is reviewed again without taking from any
  bucket, so a known scraper is never throttled, even behind the same address
  as a flood. A refusal or a failed review forgets it.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import logging
import os
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
#: How long a token that passed is remembered: reviewed again past CACHE_SECONDS,
#: but never throttled.
KNOWN_SECONDS = 10 * CACHE_SECONDS
#: Reviews of unknown tokens, per client (remote address).
REVIEW_BURST = 10
REVIEWS_PER_SECOND = 1.0
#: Clients whose buckets are kept (least recently seen go first: a full bucket again).
CLIENTS = 1024
#: Reviews of unknown tokens, all clients together: what the API server is asked at most.
TOTAL_REVIEW_BURST = 100
TOTAL_REVIEWS_PER_SECOND = 20.0

Now = Callable[[], float]


class Verdict(Enum):
    ALLOWED = 200
    UNAUTHENTICATED = 401
    FORBIDDEN = 403
    THROTTLED = 429  # too many unknown tokens lately from this client: not reviewed


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


class ClientBuckets:
    """One :class:`TokenBucket` per client, at most ``size`` of them. Not thread-safe.

    The least recently seen client's bucket goes first; it comes back full, so many
    addresses get more reviews than one: the total bucket bounds them."""

    def __init__(self, *, rate: float, burst: int, size: int, now: Now) -> None:
        self._rate = rate
        self._burst = burst
        self._size = size
        self._now = now
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, client: str) -> bool:
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = TokenBucket(rate=self._rate, burst=self._burst, now=self._now)
            self._buckets[client] = bucket
            while len(self._buckets) > self._size:
                self._buckets.popitem(last=False)
        self._buckets.move_to_end(client)
        return bucket.take()


class VerdictCache:
    """Verdicts by token digest: at most ``size``, each answered for ``ttl`` seconds and
    remembered for ``keep`` (default ``ttl``; see :meth:`due`). Not thread-safe."""

    def __init__(self, *, size: int, ttl: float, now: Now, keep: float | None = None) -> None:
        self._size = size
        self._ttl = ttl
        self._keep = max(ttl, keep if keep is not None else ttl)
        self._now = now
        self._entries: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Verdict | None:
        """The verdict, while within its ``ttl``."""
        age = self._age(key)
        if age is None or age >= self._ttl:
            return None
        self._entries.move_to_end(key)
        return self._entries[key][1]

    def due(self, key: str) -> bool:
        """Past its ``ttl`` but still remembered: to be reviewed again."""
        age = self._age(key)
        return age is not None and age >= self._ttl

    def put(self, key: str, verdict: Verdict) -> None:
        self._entries[key] = (self._now(), verdict)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)

    def _age(self, key: str) -> float | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        age = self._now() - entry[0]
        if age >= self._keep:
            del self._entries[key]
            return None
        return age


class TokenAuthorizer:
    """Decides whether a bearer token may ``get`` a non-resource path.

    ``burst`` and ``rate`` are each client's; ``total_burst`` and ``total_rate`` all
    clients'. ``cache_entries`` bounds the passed and the refused verdicts each."""

    def __init__(
        self,
        client: Client,
        *,
        path: str = "/metrics",
        now: Now = time.monotonic,
        cache_entries: int = CACHE_ENTRIES,
        burst: int = REVIEW_BURST,
        rate: float = REVIEWS_PER_SECOND,
        total_burst: int = TOTAL_REVIEW_BURST,
        total_rate: float = TOTAL_REVIEWS_PER_SECOND,
        clients: int = CLIENTS,
    ) -> None:
        self._client = client
        self._path = path
        self._passed = VerdictCache(
            size=cache_entries, ttl=CACHE_SECONDS, keep=KNOWN_SECONDS, now=now
        )
        self._refused = VerdictCache(size=cache_entries, ttl=CACHE_SECONDS, now=now)
        self._reviews = ClientBuckets(rate=rate, burst=burst, size=clients, now=now)
        self._all_reviews = TokenBucket(rate=total_rate, burst=total_burst, now=now)
        self._lock = threading.Lock()

    def cached(self) -> int:
        """Verdicts held now, passed and refused."""
        with self._lock:
            return len(self._passed) + len(self._refused)

    def check(self, authorization: str | None, *, client: str = "") -> Verdict:
        """The verdict on the Authorization header of a request from ``client`` (its
        remote address; "" when unknown, all such requests sharing one bucket)."""
        if not authorization or not authorization.startswith("Bearer "):
            return Verdict.UNAUTHENTICATED
        token = authorization[len("Bearer ") :].strip()
        if not token:
            return Verdict.UNAUTHENTICATED
        key = hashlib.sha256(token.encode()).hexdigest()  # never keep tokens themselves
        with self._lock:
            cached = self._passed.get(key) or self._refused.get(key)
            if cached is not None:
                return cached
            # A token that passed before is reviewed again unthrottled: a flood from its
            # own address must not lock a known scraper out.
            if not self._passed.due(key) and not (
                self._reviews.take(client) and self._all_reviews.take()
            ):
                return Verdict.THROTTLED
        verdict = self._review(token)
        with self._lock:
            if verdict is Verdict.ALLOWED:
                self._passed.put(key, verdict)
            else:
                self._passed.forget(key)
                if verdict is not None:
                    self._refused.put(key, verdict)
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
            log.warning(
                "metrics authorization failed", extra={"path": self._path, "error": str(exc)}
            )
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
        _write_new(cert_path, cert)
        _write_new(key_path, key)
        context.load_cert_chain(cert_path, key_path)  # read now; the files can go
    return context


def _write_new(path: Path, data: bytes) -> None:
    """A new file only this uid reads, private from its creation whatever the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o600), "wb") as handle:
        handle.write(data)


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
        # Key identifiers: Python 3.13's strict verification refuses a certificate without.
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), False)
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
