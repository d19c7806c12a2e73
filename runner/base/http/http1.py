"""HTTP/1.1 as the bounded listeners speak it: requests, answers and their wire format.

:mod:`runner.base.http.listener` serves the probes, ``/metrics`` and the
custom-metrics endpoint; this holds what it exchanges with a client: the
:class:`Request` handed to an app and the :class:`Response` it answers, how a
request head is parsed (refused with 400, 411 or 413 when it cannot be served)
and how an answer is rendered. Pure: no sockets, no clock.
"""

from __future__ import annotations

import dataclasses
import http
import re
import urllib.parse
from collections.abc import Callable, Mapping

_DIGITS = re.compile(r"[0-9]+")


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    target: str  # path and query, as sent
    version: str  # HTTP/1.1 or HTTP/1.0
    headers: Mapping[str, str]  # lower-cased names; repeated headers joined with ", "
    body: bytes = b""
    received: float = 0.0  # time.monotonic() when the head was complete

    @property
    def query(self) -> dict[str, str]:
        """The query's parameters (the last of repeated ones), decoded."""
        return dict(urllib.parse.parse_qsl(self.target.partition("?")[2]))

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"


def text(status: int, message: str) -> Response:
    return Response(status, (message + "\n").encode())


def parse(head: bytes, *, max_body: int) -> tuple[Request | None, Response | None]:
    """The request line and headers, or the answer refusing them."""
    try:
        lines = head.lstrip(b"\r\n").decode("latin-1").split("\r\n")
    except UnicodeDecodeError:
        return None, text(400, "bad request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0].isalpha():
        return None, text(400, "bad request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    lengths: set[str] = set()
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            return None, text(400, "bad header line")
        key, value = name.lower(), value.strip()
        if key == "content-length":
            lengths.update(v.strip() for v in value.split(","))
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if "transfer-encoding" in headers:
        return None, text(411, "a body needs a Content-Length")
    if lengths:
        value = next(iter(lengths))
        if len(lengths) != 1 or not _DIGITS.fullmatch(value):
            return None, text(400, "bad Content-Length")
        # Checked by length first: int() refuses strings of thousands of digits.
        if len(value) > 15 or int(value) > max_body:
            return None, text(413, f"body over {max_body} bytes")
        headers["content-length"] = str(int(value))
    return Request(method=method, target=target, version=version, headers=headers), None


def keeps_alive(request: Request) -> bool:
    tokens = {t.strip().lower() for t in request.headers.get("connection", "").split(",")}
    if request.version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def render(answer: Response, *, keep_alive: bool) -> bytes:
    try:
        reason = http.HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    head = [
        f"HTTP/1.1 {answer.status} {reason}",
        f"Content-Type: {answer.content_type}",
        f"Content-Length: {len(answer.body)}",
    ]
    if not keep_alive:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + answer.body


#: Answers a complete request (runs on a worker thread).
Handle = Callable[[Request], Response]
#: Sees the request head before its body is read; None lets it through, else the answer.
Authorize = Callable[[Request], Response | None]
