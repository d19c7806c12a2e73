"""Errors the dev cluster raises, one small hierarchy for its one audience: developers.

::

    DevClusterError
    ├── BinaryNotFoundError  a control-plane binary is neither overridden nor built
    ├── BuildError           `go build` / `go install` failed
    ├── StartError           a component exited or did not become healthy in time
    │   └── NodeUnavailableError  the real node cannot run here (a package is missing,
    │                             the kernel refuses something): one line saying which
    ├── ApiError             the API server answered a dev-cluster call with a failure
    └── KubectlError         `Cluster.kubectl(..., check=True)` exited non-zero
"""

from __future__ import annotations


class DevClusterError(Exception):
    """Base of the dev cluster's errors."""


class BinaryNotFoundError(DevClusterError):
    """No usable file for a component; the message lists every place looked at."""


class BuildError(DevClusterError):
    """A Go build step failed; the message names the command and its directory."""


class StartError(DevClusterError):
    """The control plane did not come up; the message carries the failing log's tail."""


class NodeUnavailableError(StartError):
    """The real node cannot start on this machine; the message is one line naming the
    package to install or what the kernel refused (tests skip on it)."""


class ApiError(DevClusterError):
    """A non-2xx answer from the API server to one of the dev cluster's own calls."""

    def __init__(self, *, status: int, method: str, path: str, message: str) -> None:
        self.status = status
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: HTTP {status}: {message}")


class KubectlError(DevClusterError):
    """``kubectl`` exited non-zero; stdout and stderr are kept for the caller."""

    def __init__(self, *, args: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.command = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(
            f"kubectl {' '.join(args)} exited {returncode}, expected 0: {stderr.strip()}"
        )
