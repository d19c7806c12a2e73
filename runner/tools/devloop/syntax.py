"""Whether an edited YAML file still parses, and where it breaks if not.

Part of ``run --dev`` (:mod:`runner.tools.devloop`): a changed ``.yml``/``.yaml`` file of
the project is parsed before a snapshot is made of it; a file that does not parse
keeps the last good snapshot running and is reported with its line and column.
Ansible's own tags (``!unsafe``, ``!vault``) are accepted: only the YAML is checked
here, Ansible checks the rest when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SUFFIXES = frozenset({".yml", ".yaml"})


@dataclass(frozen=True)
class Problem:
    file: Path
    line: int | None  # from 1
    column: int | None  # from 1
    problem: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else str(self.file)
        return f"{where}: {self.problem}"


class _Loader(yaml.SafeLoader):
    """SafeLoader that takes any local tag (Ansible's ``!unsafe``, ``!vault``...)."""


def _any_tag(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    assert isinstance(node, yaml.MappingNode)
    return loader.construct_mapping(node)


_Loader.add_multi_constructor("!", _any_tag)


def check(path: Path, *, shown_as: Path | None = None) -> Problem | None:
    """The first YAML error of ``path`` (None: it parses, or it is not a YAML file).

    ``shown_as`` names the file in the problem (the project's path, not a copy's).
    """
    name = shown_as or path
    if path.suffix not in SUFFIXES or not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Problem(file=name, line=None, column=None, problem=f"cannot read: {exc}")
    try:
        for _ in yaml.load_all(text, Loader=_Loader):
            pass
    except yaml.YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
        message = exc.problem if isinstance(exc, yaml.MarkedYAMLError) and exc.problem else str(exc)
        if isinstance(exc, yaml.MarkedYAMLError) and exc.context:
            message = f"{exc.context}: {message}"
        return Problem(
            file=name,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            problem=message,
        )
    return None
