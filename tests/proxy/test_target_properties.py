"""Whatever target a run's client sends, the proxy forwards a path on the API server or
refuses it: never another host, never a dot segment, and a read-only proxy never an
exec, proxy or token path, however it is spelled."""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

from hypothesis import given
from hypothesis import strategies as st

from runner.kube import paths
from runner.proxy import routing

_SEGMENTS = st.one_of(
    st.sampled_from(
        [
            "api",
            "apis",
            "v1",
            "namespaces",
            "ns",
            "pods",
            "p",
            "exec",
            "proxy",
            "token",
            "serviceaccounts",
            "nodes",
            "..",
            ".",
            "%2e%2e",
            "%2F",
            "@evil",
            "//evil",
            "",
            "attach",
            "portforward",
            "secrets",
            "status",
            "watch",
            "%252e",
        ]
    ),
    st.text(max_size=8),
)


@st.composite
def targets(draw: st.DrawFn) -> str:
    segments = draw(st.lists(_SEGMENTS, min_size=1, max_size=7))
    path = "/" + "/".join(segments)
    if draw(st.booleans()):
        path = quote(path, safe="/%@")
    query = draw(st.sampled_from(["", "?dryRun=All", "?watch=1", "?x=%2F..%2F"]))
    prefix = draw(st.sampled_from(["", "/runs/0123456789abcdef0123456789abcdef"]))
    return prefix + path + query


@given(target=targets(), bearer=st.text(max_size=20))
def test_a_forwarded_target_is_an_api_path_without_dot_segments(target: str, bearer: str) -> None:
    try:
        _, path = routing.route(target, f"Bearer {bearer}")
    except routing.BadTargetError:
        return
    url = urlsplit(path)
    assert not url.scheme and not url.netloc, f"{target!r} left the API server: {path!r}"
    assert path.startswith("/"), path
    decoded = [unquote(s) for s in url.path.split("/")]
    assert "." not in decoded and ".." not in decoded, f"dot segment forwarded: {path!r}"


@given(
    target=targets(),
    method=st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]),
)
def test_a_read_only_proxy_forwards_no_exec_proxy_or_token_path(target: str, method: str) -> None:
    try:
        _, path = routing.route(target, "Bearer t")
    except routing.BadTargetError:
        return
    if routing.read_only_refusal(method, path, upgrade=False) is not None:
        return
    resource = paths.parse_path(unquote(urlsplit(path).path))
    if resource is None:
        return  # discovery
    sub = resource.subresource.split("/")[0]
    assert sub not in {"exec", "attach", "portforward", "proxy", "token"}, (
        f"{method} {path!r} ({resource.plural}/{resource.subresource}) forwarded read-only"
    )
    assert resource.plural != "proxy", f"{method} {path!r} forwarded by a read-only proxy"
