"""What a request target means to the proxy: the run's token, the API path, its kind of answer.

Part of the Ansible ↔ API stage (see the package docstring). Every request names
its run — ``/runs/<token>/...`` in the path (kubeconfig clients) or a bearer
token — and an API path that is appended to the API server's URL as is. So only
a plain API path is forwarded (:func:`route`): anything else — ``@host/...``, an
absolute URL, ``//host/...`` — could name another host and hand it the
operator's credentials. The rest reads a request the way the API server does:
whether its answer is a stream (:func:`is_stream`), and how ansible-operator
names it in its cache lines (:func:`request_info`).

Pure functions of the request: imports nothing else of the proxy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from runner.kube import paths

RUNS = "/runs/"  # path prefix naming the run: /runs/<token>/api/...
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")  # secrets.token_urlsafe's alphabet
# An origin-form API path: "/" and a name (so the server's URL keeps its host, and
# "@host" cannot become one), printable ASCII without "#" or a backslash (which some
# parsers read as a slash).
_API_PATH = re.compile(r"/(?:[A-Za-z.][!-~]*)?")


class BadTargetError(ValueError):
    """A request target that is not a run's API path; answered 400."""


def route(target: str, authorization: str) -> tuple[str, str]:
    """The run's token and the API path of a request target, or :class:`BadTargetError`.

    ``/runs/<token>/api/...`` (kubeconfig clients), or an API path with a bearer
    token. The API path is appended to the API server's URL as is, so it must be
    a path on that server: ``@host/...``, ``http://host/...`` or ``//host/...``
    are refused, and so are dot segments (the forwarded path would not be the one
    checked here).
    """
    token = ""
    path = target
    if target.startswith(RUNS):
        token, slash, rest = target[len(RUNS) :].partition("/")
        if not _TOKEN.fullmatch(token) or not slash:
            raise BadTargetError("expected /runs/<token>/<API path>")
        path = "/" + rest
    else:
        scheme, _, value = authorization.partition(" ")
        token = value.strip() if scheme == "Bearer" else ""
    if not _API_PATH.fullmatch(path) or "#" in path or "\\" in path:
        raise BadTargetError("expected an API path: /api/..., /apis/..., /version ...")
    segments = urlsplit(path).path.split("/")
    if any(unquote(segment) in (".", "..") for segment in segments):
        raise BadTargetError("dot segments are not forwarded")
    return token, path


def flag(query: Mapping[str, list[str]], name: str) -> bool:
    """A boolean query parameter as the API server reads it: set, and not "false" or "0"."""
    values = query.get(name) or []
    return bool(values) and values[0].lower() not in ("false", "0")


def is_stream(url: SplitResult, query: Mapping[str, list[str]], content_type: str) -> bool:
    """Whether an answer is relayed as it comes: a watch (however asked for) or followed logs."""
    return (
        flag(query, "watch")
        or flag(query, "follow")
        or _is_watch_path(url.path)
        or "stream=watch" in content_type
    )


def _is_watch_path(path: str) -> bool:
    """The deprecated watch paths: /api/v1/watch/..., /apis/<group>/<version>/watch/..."""
    parts = path.split("/")
    return (parts[1:2] == ["api"] and parts[3:4] == ["watch"]) or (
        parts[1:2] == ["apis"] and parts[4:5] == ["watch"]
    )


def request_info(url: SplitResult, target: paths.Target | None) -> dict[str, object]:
    """A GET as ansible-operator's "Skipping cache lookup" line names it: Kubernetes'
    RequestInfo, field for field, so log queries built on that line keep matching."""
    if target is None:
        return {"IsResourceRequest": False, "Path": url.path, "Verb": "get"}
    watching = parse_qs(url.query).get("watch", [""])[0] in ("1", "true")
    parts = [p for p in (target.plural, target.name, target.subresource) if p]
    return {
        "IsResourceRequest": True,
        "Path": url.path,
        "Verb": "watch" if watching else "get" if target.name else "list",
        "APIPrefix": "api" if not target.group else "apis",
        "APIGroup": target.group,
        "APIVersion": target.version,
        "Namespace": target.namespace,
        "Resource": target.plural,
        "Subresource": target.subresource,
        "Name": target.name,
        "Parts": parts,
    }
