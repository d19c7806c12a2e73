"""watches.yaml's text to data: ``$VAR`` filled from the environment, then YAML read as JSON.

The first step of :func:`runner.config.watches.load`, before any entry is looked at. The
file is read the way operator-sdk reads it (sigs.k8s.io/yaml): YAML timestamps stay
strings, and an unset ``$VAR`` stays as written (operator-sdk rewrites it to ``${VAR}``).
Stricter than it: a duplicate key is an error (it keeps the last). Every failure raises
:class:`~runner.base.errors.WatchesError` naming the file, with YAML's line and column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from runner.base import errors

_ENV_REFERENCE = re.compile(r"\$(?:\{([^}]+)\}|([A-Za-z0-9_]+))")


class _Loader(yaml.SafeLoader):
    """SafeLoader read with JSON semantics: no timestamps, no duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key in (key for key, _ in node.value if isinstance(key, yaml.ScalarNode)):
            if key.value in seen:
                problem = f"duplicate key {key.value!r}"
                raise yaml.constructor.ConstructorError(None, None, problem, key.start_mark)
            seen.add(key.value)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read(path: Path, *, environ: Mapping[str, str]) -> object:
    """The file's one YAML document, after ``${VAR}`` and ``$VAR`` are filled from ``environ``;
    None when it holds no YAML node at all (empty, or only comments)."""

    def fail(problem: str) -> errors.WatchesError:
        return errors.WatchesError(path=str(path), entry=None, field=None, problem=problem)

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise fail(f"not UTF-8 text: {e.reason} at byte {e.start}") from e
    except OSError as e:
        raise fail(f"cannot read the file: {e.strerror or e}") from e

    def expand(match: re.Match[str]) -> str:
        return environ.get(match.group(1) or match.group(2), match.group(0))

    try:
        return yaml.load(_ENV_REFERENCE.sub(expand, text), Loader=_Loader)
    except yaml.YAMLError as e:
        mark = e.problem_mark if isinstance(e, yaml.MarkedYAMLError) else None
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = e.problem if isinstance(e, yaml.MarkedYAMLError) and e.problem else str(e)
        raise fail(f"invalid YAML{at}: {problem}") from e
