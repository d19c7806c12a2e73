"""The webhook's HTTPS listener: AdmissionReviews in on ``--webhook-port``, verdicts out.

The outer step of one webhook call (see :mod:`runner.webhook`). controller-runtime's
conventions: port 9443, ``tls.crt`` and ``tls.key`` from ``--webhook-cert-dir``
(``/tmp/k8s-webhook-server/serving-certs``), kubebuilder's paths
(``/validate-<group>-<version>-<kind>``, ``/mutate-…``). Missing or unreadable
certificates stop the runner at start-up, naming the directory; files that change
later (cert-manager renews them in place) are loaded again within
:data:`RELOAD_EVERY` seconds, and the old pair is kept if the new one does not load.

Bounded as every listener of the runner (:mod:`runner.base.http.listener`): at most
:data:`MAX_CONNECTIONS` connections, handshake and head timeouts, a body of at most
3 MiB (the API server's own request limit), and twice ``--webhook-max-concurrent``
workers: that many runs go at once (:class:`runner.webhook.hooks.Hooks` holds the
limit), the rest wait briefly for a slot, never behind the reconcile queue.
"""

from __future__ import annotations

import errno
import logging
import ssl
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from runner.base import errors
from runner.base.http import connections, http1, listener
from runner.webhook import hooks, review

log = logging.getLogger("runner.webhook")

CERT, KEY, CLIENT_CA = "tls.crt", "tls.key", "client-ca.crt"
RELOAD_EVERY = 5.0
MAX_CONNECTIONS = 256
MAX_BODY = 3 * 1024 * 1024
#: Bodies held at once: a flood of large requests costs at most this, then 503s.
MAX_BUFFERED = 8 * MAX_BODY
#: The API server sends ``?timeout=10s``; without it, the longest it ever waits.
_DEFAULT_TIMEOUT = 30.0


class Answerer(Protocol):
    """What the server serves (:class:`runner.webhook.hooks.Hooks`): paths and verdicts."""

    @property
    def paths(self) -> Mapping[str, hooks.Served]: ...

    def answer(
        self, served_hook: hooks.Served, request: review.Request, *, deadline: float
    ) -> review.Verdict: ...


class WebhookObserver(Protocol):
    """Counts requests (controller-runtime's ``controller_runtime_webhook_*``)."""

    def webhook_started(self, webhook: str) -> None: ...

    def webhook_finished(self, webhook: str, *, code: int, seconds: float) -> None: ...


def tls_context(cert_dir: Path, *, client_ca: Path | None = None) -> ssl.SSLContext:
    """A server context from ``cert_dir``; :class:`~runner.base.errors.ConfigError` if the
    files are missing or do not load (controller-runtime stops likewise). With a client
    CA (``client_ca``, else ``client-ca.crt`` in ``cert_dir`` when present) the handshake
    requires a client certificate it signed: a caller without one gets no answer."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    cert, key = cert_dir / CERT, cert_dir / KEY
    missing = [p.name for p in (cert, key) if not p.is_file()]
    if missing:
        raise errors.ConfigError(
            f"--webhook-cert-dir={cert_dir}: {' and '.join(missing)} not found; the webhook "
            "server needs a serving certificate (cert-manager, or make run's self-signed one)"
        )
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise errors.ConfigError(
            f"--webhook-cert-dir={cert_dir}: {CERT} and {KEY} do not load: {exc}"
        ) from exc
    ca = client_ca_path(cert_dir, client_ca=client_ca)
    if ca is not None:
        try:
            context.load_verify_locations(cafile=str(ca))
        except (OSError, ssl.SSLError) as exc:
            raise errors.ConfigError(f"--webhook-client-ca={ca}: does not load: {exc}") from exc
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def client_ca_path(cert_dir: Path, *, client_ca: Path | None) -> Path | None:
    """The CA client certificates are checked against: the flag's, else ``client-ca.crt``
    in the cert dir (controller-runtime's ClientCAName), else None."""
    if client_ca is not None:
        return client_ca
    beside = cert_dir / CLIENT_CA
    return beside if beside.is_file() else None


class WebhookServer:
    """Serves the hooks of :class:`~runner.webhook.hooks.Hooks` over HTTPS."""

    def __init__(
        self,
        *,
        answerer: Answerer,
        port: int,
        cert_dir: Path,
        max_concurrent: int,
        observer: WebhookObserver | None = None,
        host: str = "",
        client_ca: Path | None = None,
    ) -> None:
        self._hooks = answerer
        self._observer = observer
        self._cert_dir = cert_dir
        self._client_ca = client_ca
        self._context = tls_context(cert_dir, client_ca=client_ca)
        self._stamp = _stamp(cert_dir, client_ca=client_ca)
        self._certs_ok = True
        limits = connections.Limits(
            max_connections=MAX_CONNECTIONS,
            workers=2 * max_concurrent,
            body_timeout=10.0,
            max_body=MAX_BODY,
            max_buffered=MAX_BUFFERED,
            # A request waiting behind this many gets no worker before the API server
            # gives up anyway: answered 429 at once (the hook's failurePolicy applies).
            max_pending=2 * max_concurrent,
        )
        try:
            self._server = listener.Server(
                (host, port),
                app=listener.App(handle=self.handle, limits=limits),
                name="webhook",
                tls=self._context,
            )
        except OSError as exc:
            problem = (
                f"port {port} is already in use"
                if exc.errno == errno.EADDRINUSE
                else f"cannot listen on port {port}: {exc.strerror or exc}"
            )
            raise errors.ListenError(
                flag="--webhook-port", address=str(port), problem=problem
            ) from exc
        self._stop = threading.Event()
        self._reloader = threading.Thread(
            target=self._reload_loop, name="webhook-certs", daemon=True
        )
        self._started = False

    @property
    def port(self) -> int:
        return self._server.server_port

    def start(self) -> None:
        self._server.start()
        self._reloader.start()
        self._started = True
        log.info(
            "webhook server serving",
            extra={
                "port": self.port,
                "paths": sorted(self._hooks.paths),
                "cert_dir": str(self._cert_dir),
                "client_ca": str(client_ca_path(self._cert_dir, client_ca=self._client_ca) or ""),
            },
        )

    def ready(self) -> bool:
        """Listening, with certificates that loaded (the latest files, or the kept pair)."""
        return self._started and not self._stop.is_set() and self._certs_ok

    def shutdown(self) -> None:
        self._stop.set()
        self._server.shutdown()

    # -- requests (on the listener's workers) ---------------------------------

    def handle(self, request: http1.Request) -> http1.Response:
        path = request.path
        served = self._hooks.paths.get(path)
        if served is None:
            return http1.text(404, f"no webhook at {path}")
        if request.method != "POST":
            return http1.text(405, "POST an AdmissionReview")
        started = time.monotonic()
        if self._observer is not None:
            self._observer.webhook_started(path)
        code = 500
        try:
            answer = self._answer(served, request)
            code = answer.status
            return answer
        finally:
            if self._observer is not None:
                self._observer.webhook_finished(path, code=code, seconds=time.monotonic() - started)

    def _answer(self, served: hooks.Served, request: http1.Request) -> http1.Response:
        try:
            admission_request = review.decode(request.body)
        except review.ReviewError as exc:
            return http1.text(400, str(exc))
        # The API server waits timeoutSeconds from sending; it says so in the query.
        waits = _seconds(request.query.get("timeout"))
        hook_timeout = float(served.hook.timeout_seconds)
        deadline = request.received + min(hook_timeout, waits or hook_timeout)
        verdict = self._hooks.answer(served, admission_request, deadline=deadline)
        return http1.Response(
            200, review.encode(admission_request.uid, verdict), content_type="application/json"
        )

    # -- certificates -----------------------------------------------------------

    def _reload_loop(self) -> None:
        while not self._stop.wait(RELOAD_EVERY):
            self.reload()

    def reload(self) -> bool:
        """Load the certificates again if their files changed; False if they did not load.
        A new context is built and swapped in only when it loads: a broken pair (or CA)
        leaves the old one serving."""
        stamp = _stamp(self._cert_dir, client_ca=self._client_ca)
        if stamp == self._stamp:
            return self._certs_ok
        self._stamp = stamp
        try:
            context = tls_context(self._cert_dir, client_ca=self._client_ca)
        except errors.ConfigError as exc:
            # The pair loaded before still serves; readiness says something is wrong.
            log.error("webhook certificates changed and do not load", extra={"error": str(exc)})
            self._certs_ok = False
            return False
        self._context = context
        self._server.use_tls(context)
        log.info("webhook certificates reloaded", extra={"cert_dir": str(self._cert_dir)})
        self._certs_ok = True
        return True


def _stamp(cert_dir: Path, *, client_ca: Path | None) -> tuple[tuple[int, int], ...]:
    found = []
    for path in (cert_dir / CERT, cert_dir / KEY, client_ca or cert_dir / CLIENT_CA):
        try:
            info = path.stat()
            found.append((info.st_mtime_ns, info.st_size))
        except OSError:
            found.append((0, 0))
    return tuple(found)


def _seconds(value: str | None) -> float | None:
    """``10s`` (the API server's ``timeout`` query) in seconds; None when absent or odd."""
    if not value or not value.endswith("s"):
        return None
    try:
        seconds = float(value[:-1])
    except ValueError:
        return None
    return seconds if 0 < seconds <= 60 else None
