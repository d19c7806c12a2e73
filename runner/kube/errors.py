"""Errors raised by the Kubernetes client.

::

    KubeError
    ├── ConfigLoadError     no usable kubeconfig / in-cluster credentials
    ├── TransportError      the API server could not be reached
    └── ApiError            the API server answered with a failure status
        ├── NotFoundError   404
        ├── ConflictError   409
        └── GoneError       410 (a watch's resourceVersion is too old)
"""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    """Base of the client's errors."""


class ConfigLoadError(KubeError):
    """Credentials for the API server could not be loaded."""


class TransportError(KubeError):
    """The API server could not be reached or the connection broke."""


class ApiError(KubeError):
    """A non-2xx answer; ``status`` is the HTTP code, ``body`` the decoded Status."""

    def __init__(self, *, status: int, method: str, path: str, body: dict[str, Any]) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.body = body
        self.reason = str(body.get("reason", ""))
        self.message = str(body.get("message", ""))
        super().__init__(f"{method} {path}: {status} {self.reason}: {self.message}")


class NotFoundError(ApiError):
    """404 Not Found."""


class ConflictError(ApiError):
    """409 Conflict (stale resourceVersion, or already exists)."""


class GoneError(ApiError):
    """410 Gone: the requested resourceVersion is older than etcd keeps."""


def api_error(*, status: int, method: str, path: str, body: dict[str, Any]) -> ApiError:
    """Build the most specific :class:`ApiError` subclass for ``status``."""
    cls: type[ApiError] = {404: NotFoundError, 409: ConflictError, 410: GoneError}.get(
        status, ApiError
    )
    return cls(status=status, method=method, path=path, body=body)
