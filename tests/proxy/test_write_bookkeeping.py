"""A run's write is accounted for once, however its request ends.

Whichever way a write through the proxy ends — answered, lost on the way, or left
by an error or a stream — it is no longer in flight afterwards (watch echoes stop
waiting for it), and the run's later reads of the object know what it wrote. Unit
tests of :class:`runner.proxy.writes.Write`: no cluster, no HTTP.
"""

from __future__ import annotations

from typing import Any

import pytest

from runner.kube import paths
from runner.kube.types import GVK, Resource
from runner.proxy import ownership, sessions, writes

CONFIGMAP = GVK("", "v1", "ConfigMap")
RESOURCE = Resource(
    gvk=CONFIGMAP,
    plural="configmaps",
    namespaced=True,
    verbs=frozenset({"get", "create", "update", "patch", "delete"}),
    subresources=frozenset(),
)
KEY = (CONFIGMAP, "ns", "child")
OWNER = ownership.Owner(gvk=GVK("example.com", "v1", "Thing"), name="a", namespace="ns", uid="u")
CACHED = {"metadata": {"name": "child", "namespace": "ns", "resourceVersion": "7"}}
WRITTEN = {"metadata": {"name": "child", "namespace": "ns", "uid": "c1", "resourceVersion": "9"}}


def _target(name: str = "child") -> paths.Target:
    path = "/api/v1/namespaces/ns/configmaps" + (f"/{name}" if name else "")
    target = paths.parse_path(path)
    assert target is not None, path
    return target


def _write(
    log: writes.Writes, session: sessions.Session, *, method: str, target: paths.Target
) -> writes.Write:
    return writes.Write(
        log,
        session,
        method=method,
        target=target,
        resource=RESOURCE,
        body=b'{"metadata": {"name": "child"}}',
    )


class LostError(Exception):
    """The request ended by an error between forwarding and answering."""


@pytest.mark.parametrize(
    ("method", "ending", "recorded", "own"),
    [
        pytest.param("PUT", "answered", {KEY: "9"}, True, id="answered-replace"),
        pytest.param("POST", "answered", {KEY: "9"}, True, id="answered-create"),
        pytest.param("PUT", "refused", {}, False, id="answered-409"),
        pytest.param("PATCH", "dry-run", {}, True, id="answered-dry-run"),
        pytest.param("DELETE", "answered", {KEY: ""}, False, id="answered-delete"),
        pytest.param("PUT", "lost", {KEY: ""}, False, id="lost-on-the-way"),
        pytest.param("DELETE", "lost", {KEY: ""}, False, id="delete-lost-on-the-way"),
        pytest.param("PUT", "error", {}, False, id="left-by-an-error"),
        pytest.param("PUT", "stream", {}, False, id="left-as-a-stream"),
    ],
)
def test_a_write_is_settled_once_however_it_ends(
    method: str, ending: str, recorded: dict[Any, str], own: bool
) -> None:
    log = writes.Writes()
    session = sessions.Session(owner=OWNER)
    target = _target("" if method == "POST" else "child")
    try:
        with _write(log, session, method=method, target=target) as write:
            if method != "DELETE":
                seen = log.behind(session, KEY, CACHED)
                assert seen == "being written", f"while forwarded: expected in flight, saw {seen}"
            if ending == "answered":
                write.answered(status=200, payload=WRITTEN, dry_run=False)
            elif ending == "refused":
                write.answered(status=409, payload=None, dry_run=False)
            elif ending == "dry-run":
                write.answered(status=200, payload=WRITTEN, dry_run=True)
            elif ending == "lost":
                write.lost()
            elif ending == "error":
                raise LostError
            if ending != "stream":  # a stream leaves the block without an answer
                write.lost()  # a second settlement changes nothing
    except LostError:
        pass
    assert session.written == recorded, (
        f"the run's record of its writes: expected {recorded}, saw {session.written}"
    )
    seen = log.behind(session, KEY, CACHED)
    expected = "written by this run" if recorded else None
    assert seen == expected, f"a later read: expected {expected!r}, saw {seen!r}"
    echo = log.is_own_write(WRITTEN)  # would wait 5 s if the write were still in flight
    assert echo is own, f"the answered version as an echo: expected {own}, saw {echo}"
