"""The cache budget's watches.yaml keys: dependentSelector and cacheSecrets, read and checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.base import errors
from runner.config import entry, watches

HEAD = "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n"


def load(tmp_path: Path, *lines: str) -> list[entry.Watch]:
    (tmp_path / "roles" / "memcached" / "tasks").mkdir(parents=True, exist_ok=True)
    (tmp_path / "roles" / "memcached" / "tasks" / "main.yml").write_text("---\n[]\n")
    path = tmp_path / "watches.yaml"
    path.write_text(HEAD + "".join(f"  {line}\n" for line in lines))
    return watches.load(path, environ={}, base_dir=tmp_path)


@pytest.mark.parametrize(
    ("lines", "query", "cache_secrets"),
    [
        pytest.param((), "", False, id="defaults"),
        pytest.param(
            ("dependentSelector:", "  matchLabels: {app: memcached}", "cacheSecrets: true"),
            "app=memcached",
            True,
            id="set",
        ),
        pytest.param(
            ("selector:", "  matchLabels: {tier: cache}"),
            "",
            False,
            id="selector-is-not-for-children",
        ),
    ],
)
def test_keys_are_read(
    tmp_path: Path, lines: tuple[str, ...], query: str, cache_secrets: bool
) -> None:
    (watch,) = load(tmp_path, *lines)
    seen = (watch.dependent_selector.to_query(), watch.cache_secrets)
    assert seen == (query, cache_secrets), f"expected {(query, cache_secrets)}, saw {seen}"


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        pytest.param(("dependentSelector: [a]",), "dependentSelector", id="selector-not-a-map"),
        pytest.param(
            ("dependentSelector:", "  matchLabel: {a: b}"),
            "dependentSelector.matchLabel",
            id="selector-unknown-key",
        ),
        pytest.param(("cacheSecrets: yes please",), "cacheSecrets", id="not-a-boolean"),
    ],
)
def test_mistakes_name_the_field(tmp_path: Path, lines: tuple[str, ...], field: str) -> None:
    with pytest.raises(errors.WatchesError) as caught:
        load(tmp_path, *lines)
    assert caught.value.field == field, f"expected field {field!r}, saw {caught.value}"
