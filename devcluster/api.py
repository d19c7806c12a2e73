"""The few API calls the dev cluster makes itself: /readyz, creating the fake node,
minting service-account tokens.

It is deliberately tiny and standard-library only, because the dev cluster must not
depend on the runner (whose client it exists to test).
"""

from __future__ import annotations

import contextlib
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devcluster import errors


@dataclass(frozen=True)
class Api:
    server: str
    ca_file: Path
    token: str

    def _context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        timeout: float = 10.0,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """Send one request; return the decoded JSON or raise :class:`errors.ApiError`.

        ``content_type``: ``application/merge-patch+json`` for a PATCH.
        """
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/json",
                "Content-Type": content_type,
            },
        )
        try:
            with urllib.request.urlopen(request, context=self._context(), timeout=timeout) as reply:
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError):
                detail = str(json.loads(detail).get("message", detail))
            raise errors.ApiError(
                status=exc.code, method=method, path=path, message=detail
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise errors.ApiError(status=0, method=method, path=path, message=str(exc)) from exc
        decoded: dict[str, Any] = json.loads(raw) if raw.strip().startswith(b"{") else {}
        return decoded

    def readyz(self, *, timeout: float = 2.0) -> tuple[bool, str]:
        """``(ready, detail)``: whether /readyz answers ``ok``, else why not."""
        request = urllib.request.Request(
            self.server + "/readyz", headers={"Authorization": f"Bearer {self.token}"}
        )
        try:
            with urllib.request.urlopen(request, context=self._context(), timeout=timeout) as reply:
                text = reply.read().decode(errors="replace").strip()
                return text == "ok", text
        except urllib.error.HTTPError as exc:
            return False, f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            return False, str(getattr(exc, "reason", exc))


def healthz(port: int, *, timeout: float = 2.0) -> bool:
    """Whether a component's self-signed HTTPS /healthz on 127.0.0.1:``port`` answers ok."""
    # kube-controller-manager and kube-scheduler serve throwaway self-signed certs;
    # this is a loopback liveness probe, not an authenticated client, so skip checks.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        url = f"https://127.0.0.1:{port}/healthz"
        with urllib.request.urlopen(url, context=context, timeout=timeout) as reply:
            return bool(reply.read().strip() == b"ok")
    except (urllib.error.URLError, OSError):
        return False
