"""``${VAR}`` and ``$VAR`` are filled from the environment before parsing, as operator-sdk does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.config import watches


@pytest.mark.parametrize(
    ("value", "environ", "expected"),
    [
        pytest.param("${SIZE}", {"SIZE": "3"}, 3, id="braces"),
        pytest.param("$SIZE", {"SIZE": "3"}, 3, id="bare"),
        pytest.param("x-${NAME}-y", {"NAME": "a"}, "x-a-y", id="inside-text"),
        pytest.param("$NAME$NAME", {"NAME": "a"}, "aa", id="twice"),
        pytest.param("'${EMPTY}'", {"EMPTY": ""}, "", id="set-but-empty"),
        pytest.param("'${UNSET}'", {}, "${UNSET}", id="unset-braces-stay"),
        pytest.param("$UNSET", {}, "$UNSET", id="unset-bare-stays"),
        pytest.param("'^a$'", {}, "^a$", id="lone-dollar-stays"),
        pytest.param("'$$'", {}, "$$", id="double-dollar-stays"),
    ],
)
def test_expansion(
    write_watches: Callable[[str], Path],
    project: Path,
    value: str,
    environ: dict[str, str],
    expected: object,
) -> None:
    path = write_watches(
        f"- {{version: v1, kind: Secret, role: memcached, vars: {{v: {value}}}}}\n"
    )

    (watch,) = watches.load(path, environ=environ, base_dir=project)

    assert watch.vars["v"] == expected, f"expected {expected!r}, saw {watch.vars['v']!r}"


def test_role_from_the_process_environment_by_default(
    write_watches: Callable[[str], Path], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCACHED_ROLE", "memcached")
    path = write_watches("- {version: v1, kind: Secret, role: '${MEMCACHED_ROLE}'}\n")

    (watch,) = watches.load(path, base_dir=project)

    assert watch.role is not None, "expected the role named by $MEMCACHED_ROLE, saw none"
    assert watch.role.name == "memcached", f"expected role 'memcached', saw {watch.role.name!r}"
