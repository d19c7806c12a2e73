"""What a request target means to the proxy: the run's token, the API path, its kind of answer.

Part of the Ansible ↔ API stage (see the package docstring). Every request names
its run — ``/runs/<token>/...`` in the path (kubeconfig clients) or a bearer
token — and an API path that is appended to the API server's URL as is. So only
a plain API path is forwarded (:func:`route`): anything else — ``@host/...``, an
absolute URL, ``//host/...`` — could name another host and hand it the
operator's credentials. The rest reads a request the way the API server does:
whether its answer is a stream (:func:`is_stream`), whether a body is JSON, the
only kind the proxy reads (:func:`is_json`; protobuf and anything else pass
through unread), and whether a client takes JSON (:func:`accepts_json`), and how ansible-operator
names it in its cache lines (:func:`request_info`), and whether a read-only proxy
forwards it (:func:`read_only_refusal`).

A read-only proxy (``playbook-operator preview``, ``rbac --sample``, admission
webhook runs) forwards an allow-list, checked on the path as the API server
routes it (percent-decoded): GET and HEAD of API discovery (``/version``,
``/api``, ``/apis``, ``/openapi``) and of resources, their ``status``, ``scale``
or ``log``; and writes with ``dryRun=All`` of resources, their ``status`` or
``scale``. Nothing else: no ``.../proxy`` (pods, services, nodes: the request
would reach a workload or a kubelet, which ignore ``dryRun``), no ``exec``,
``attach`` or ``portforward``, no TokenRequest (``serviceaccounts/<name>/token``)
or TokenReview, no other non-resource path (``/logs``, ``/metrics``...), no
protocol upgrade. Secrets stay readable: the run of a role the reconciles run
reads what those read, and a preview that could not would not show the role's
real path.

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
# API discovery: what clients read before any request (kubernetes.core, kubectl).
_DISCOVERY = re.compile(r"/(?:version|openapi(?:/.*)?|apis?(?:/[^/]+){0,2})/?")
#: Of a resource, what a read-only proxy forwards: reads of these subresources ("": the
#: object or the collection itself), dry-run writes of those.
READ_ONLY_READS = frozenset({"", "status", "scale", "log"})
READ_ONLY_DRY_RUNS = frozenset({"", "status", "scale"})
#: Never forwarded by a read-only proxy, even dry-run: credentials minted or checked.
_CREDENTIALS = frozenset({("authentication.k8s.io", "tokenreviews")})


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


def is_json(content_type: str) -> bool:
    """Whether a body of this ``Content-Type`` is JSON (none given: the API server's default).

    ``application/json``, its ``+json`` variants (patches) and JSON with parameters are;
    ``application/vnd.kubernetes.protobuf``, YAML, CBOR and the rest are not.
    """
    media = content_type.split(";", maxsplit=1)[0].strip().lower()
    return media in ("", "application/json") or media.endswith("+json")


def accepts_json(accept: str) -> bool:
    """Whether a client whose ``Accept`` is this takes a JSON answer (none given: it does)."""
    if not accept.strip():
        return True
    for item in accept.split(","):
        media = item.split(";", maxsplit=1)[0].strip().lower()
        if media in ("*/*", "application/*", "application/json"):
            return True
    return False


def _is_watch_path(path: str) -> bool:
    """The deprecated watch paths: /api/v1/watch/..., /apis/<group>/<version>/watch/..."""
    parts = path.split("/")
    return (parts[1:2] == ["api"] and parts[3:4] == ["watch"]) or (
        parts[1:2] == ["apis"] and parts[4:5] == ["watch"]
    )


def _unwatched(path: str) -> str:
    """A deprecated watch path as the resource path it watches."""
    parts = path.split("/")
    del parts[3 if parts[1] == "api" else 4]
    return "/".join(parts)


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


def dry_run(query: Mapping[str, list[str]]) -> bool:
    """Whether the API server only dry-runs the request: exactly one ``dryRun=All``."""
    return query.get("dryRun") == ["All"]


def read_only_method(method: str, query: Mapping[str, list[str]]) -> bool:
    """The method rule of a read-only proxy: reads, and writes the API server only dry-runs."""
    return method in ("GET", "HEAD") or dry_run(query)


def read_only_refusal(method: str, target: str, *, upgrade: bool) -> str | None:
    """Why a read-only proxy does not forward ``method`` ``target`` (an API path and
    query, as :func:`route` returns it); None when it does (see the module doc)."""
    if upgrade:
        return "exec, attach and port-forward are not forwarded"
    url = urlsplit(target)
    reading = method in ("GET", "HEAD")
    if not read_only_method(method, parse_qs(url.query)):
        return "only reads and dryRun=All writes are forwarded"
    path = unquote(url.path)  # what the API server routes: %2F is a slash to it
    watching = _is_watch_path(path)
    if watching and not reading:
        return "watch paths are read only"
    resource = paths.parse_path(_unwatched(path) if watching else path)
    if resource is None:
        if reading and _DISCOVERY.fullmatch(path):
            return None
        return "of non-resource paths, only API discovery is forwarded"
    if resource.plural == "proxy" or resource.subresource.split("/")[0] == "proxy":
        return "proxy subresources are not forwarded"
    if (resource.group, resource.plural) in _CREDENTIALS:
        return f"{resource.plural} are not forwarded"
    allowed = READ_ONLY_READS if reading else READ_ONLY_DRY_RUNS
    if resource.subresource not in allowed:
        return f"{resource.plural}/{resource.subresource} is not forwarded"
    return None
