"""YAML files of a project as the publishing commands read and write them.

Outside the runtime flow (watch → queue → reconcile → ansible → status). Files are
written block style, lists indented under their key (kubebuilder's and this project's
style), keys in the order given, with a header comment saying what wrote the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from runner.tools.publish.errors import PublishError


class _Dumper(yaml.SafeDumper):
    """Indents block sequences under their key (``key:\\n  - item``)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _text)


def dump(data: object) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)


def write(path: Path, *, header: str, docs: list[Any]) -> None:
    """Write ``docs`` to ``path`` as one YAML stream, after the comment ``header``."""
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    body = "".join("---\n" + dump(doc) for doc in docs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(comment + body)


def read_all(path: Path) -> list[Any]:
    """Every document of a YAML stream (empty ones left out)."""
    try:
        return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise PublishError(f"{path}: cannot be read: {exc}") from exc


def manifests(directory: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object in the YAML files directly in ``directory``, sorted by file."""
    if not directory.is_dir():
        return
    for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
        for doc in read_all(path):
            if isinstance(doc, dict) and "kind" in doc:
                yield path, doc
