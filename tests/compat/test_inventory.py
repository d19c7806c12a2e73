"""ANSIBLE_INVENTORY: the project's inventory is each run's inventory, as in ansible-operator.

A play for an inventory group finds its hosts and group variables; role plays run
on localhost with the runner's Python, here Ansible's implicit localhost because
the inventory does not name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Client
from tests.compat.conftest import FIXTURES, Start
from tests.runner.support import PROBE, probe, probe_watches

INVENTORIES = FIXTURES / "inventories"


def greet_group_watches() -> str:
    return (
        f"- version: v1\n  group: {PROBE.group}\n  kind: Probe\n"
        f"  playbook: {FIXTURES / 'playbooks' / 'greet_group.yml'}\n"
    )


def greeting_role_watches() -> str:
    return probe_watches().replace("role: probe", "role: greeting")


@dataclass(frozen=True)
class Case:
    watches: str
    inventory: Path  # $ANSIBLE_INVENTORY
    expected: dict[str, str]  # status fields the run reports


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            Case(
                greet_group_watches(),
                INVENTORIES / "groups",
                {"greeting": "from the operators group", "host": "localhost"},
            ),
            id="directory-group-play",
        ),
        pytest.param(
            Case(
                greet_group_watches(),
                INVENTORIES / "groups" / "hosts",
                {"greeting": "from the operators group", "host": "localhost"},
            ),
            id="file-with-group-vars-beside",
        ),
        pytest.param(
            Case(
                greeting_role_watches(),
                INVENTORIES / "remote",
                {"greeting": "from group all", "host": "localhost"},
            ),
            id="role-on-implicit-localhost",
        ),
    ],
)
def test_ansible_inventory_hosts_and_group_vars_reach_the_run(
    kube: Client, namespace: str, operators: Start, case: Case
) -> None:
    expected = case.expected
    operator = operators(case.watches, env={"ANSIBLE_INVENTORY": str(case.inventory)})
    kube.create(PROBE, probe("inv", namespace, {}), namespace=namespace)

    def reported() -> dict[str, Any]:
        status = kube.get(PROBE, name="inv", namespace=namespace).get("status") or {}
        return {key: status.get(key) for key in expected}

    operator.eventually(
        reported, until=lambda seen: seen == expected, describe=f"status {expected}", timeout=90
    )
