"""The template files ``init`` and ``create api`` render, shipped as package data.

Outside the runtime flow (watch → queue → reconcile → ansible → status). Templates live
under ``runner/tools/scaffold/templates/`` as the files they become; placeholders are
``%%{name}`` (``string.Template`` with ``%%`` as delimiter, since ``$`` belongs to
Makefiles and molecule and ``{{ }}`` to Ansible). A file named ``dot-<name>`` is
written as ``.<name>``, because package data leaves dotfiles out.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.resources.abc import Traversable

_DOT = "dot-"


class _Template(string.Template):
    delimiter = "%%"


def _root() -> Traversable:
    return resources.files("runner.tools.scaffold").joinpath("templates")


def render(name: str, values: Mapping[str, str]) -> str:
    """The template ``name`` (a path under ``templates/``) with ``values`` filled in;
    a placeholder without a value raises ``KeyError``."""
    node = _root()
    for part in name.split("/"):
        node = node.joinpath(part)
    return _Template(node.read_text(encoding="utf-8")).substitute(values)


def output_path(name: str) -> str:
    """Where a template's file goes in the project (``dot-gitignore`` → ``.gitignore``)."""
    return "/".join(
        "." + part[len(_DOT) :] if part.startswith(_DOT) else part for part in name.split("/")
    )


def tree(directory: str) -> Iterator[str]:
    """Every template below ``directory``, as paths relative to it, sorted."""
    start = _root().joinpath(directory)

    def walk(node: Traversable, prefix: str) -> Iterator[str]:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                yield from walk(child, f"{prefix}{child.name}/")
            else:
                yield f"{prefix}{child.name}"

    yield from walk(start, "")
