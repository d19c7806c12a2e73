"""A throw-away operator project: one real role and one real playbook, and a way to write
watches.yaml beside them."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


def make_role(path: Path) -> Path:
    """A minimal real role directory at ``path``."""
    (path / "tasks").mkdir(parents=True)
    (path / "tasks" / "main.yml").write_text(
        "---\n- name: Do nothing\n  ansible.builtin.meta: noop\n"
    )
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    make_role(tmp_path / "roles" / "memcached")
    (tmp_path / "playbook.yml").write_text(
        "---\n- name: Nothing\n  hosts: localhost\n  tasks: []\n"
    )
    return tmp_path


@pytest.fixture
def write_watches(project: Path) -> Callable[[str], Path]:
    def write(text: str) -> Path:
        path = project / "watches.yaml"
        path.write_text(textwrap.dedent(text))
        return path

    return write
