"""Progress of one ``go`` build, told in a few lines instead of go's own output.

A cold build of the control plane prints hundreds of ``go: downloading <module>`` lines
and, with ``-v``, one line per compiled package. :class:`GoProgress` reads those lines
and reports, at most every ``interval`` seconds, what it builds and how far along it is
("k8s: compiling 812/2616 packages (31%), 161 modules downloaded, 2m10s"). Anything else
go prints (errors) is kept, and shown in full when the build fails.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

Printer = Callable[[str], None]
DOWNLOADING = "go: downloading "
_KEEP = 60


def duration(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


class GoProgress:
    """Counts one target's downloads and compiled packages; not thread-safe (one reader)."""

    def __init__(
        self,
        *,
        target: str,
        out: Printer,
        interval: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.phase = "resolving modules"
        #: packages the build will compile at most (``go list -deps``), when known
        self.total: int | None = None
        self.downloaded = 0
        self.compiled = 0
        self._out = out
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._reported = self._started
        self._other: deque[str] = deque(maxlen=_KEEP)

    def start(self, phase: str, *, total: int | None = None) -> None:
        """A new step of the same target (``compiling``): counts carry over."""
        self.phase = phase
        if total is not None:
            self.total = total

    def line(self, text: str, *, compiling: bool) -> None:
        """One line of go's standard error. With ``compiling`` (``go build -v``), a bare
        import path is a package being compiled."""
        text = text.rstrip("\n")
        if text.startswith(DOWNLOADING):
            self.downloaded += 1
        elif compiling and text and " " not in text and not text.startswith("#"):
            self.compiled += 1
        elif text:
            self._other.append(text)
        now = self._clock()
        if now - self._reported >= self._interval:
            self._reported = now
            self._out(self.render(now))

    def render(self, now: float | None = None) -> str:
        elapsed = (self._clock() if now is None else now) - self._started
        parts = [f"{self.target}: {self.phase}"]
        if self.compiled or self.phase.startswith("compiling"):
            if self.total:
                shown = min(self.compiled, self.total)
                parts[0] += f" {shown}/{self.total} packages ({100 * shown // self.total}%)"
            else:
                parts[0] += f" {self.compiled} packages"
        if self.downloaded:
            parts.append(f"{self.downloaded} modules downloaded")
        parts.append(duration(elapsed))
        return ", ".join(parts)

    def output(self) -> str:
        """What go printed besides progress (its errors), last lines first kept."""
        return "\n".join(self._other)
