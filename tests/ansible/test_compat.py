"""What roles written for ansible-operator rely on, at the Ansible stage: the
``operator_sdk.util`` collection, and ``$ANSIBLE_INVENTORY`` as each run's inventory.

No cluster is needed: the plays only use local modules.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tests.ansible.conftest import FIXTURES, Captured, RunPlaybook, debug_outputs

# An installed operator_sdk.util whose requeue_after tells itself apart.
INSTALLED_REQUEUE_AFTER = """\
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"time": {"type": "str", "required": True}})
    module.exit_json(changed=False, period="7s", installed_copy=True)


if __name__ == "__main__":
    main()
"""


def installed_collection(root: Path) -> Path:
    module = root / "ansible_collections/operator_sdk/util/plugins/modules/requeue_after.py"
    module.parent.mkdir(parents=True)
    module.write_text(INSTALLED_REQUEUE_AFTER)
    return root


def test_operator_sdk_util_is_shipped_and_an_installed_copy_wins(
    run_playbook: RunPlaybook, tmp_path: Path
) -> None:
    shipped = run_playbook("osdk_requeue")
    assert not shipped.failed, shipped.failed_tasks
    assert shipped.requeue_after == 30.0, f"shipped requeue_after gave {shipped.requeue_after}"

    flag = installed_collection(tmp_path / "flag")
    by_flag = run_playbook(
        "osdk_requeue", collections_path=(flag,), private_data_dir=tmp_path / "pdd-flag"
    )
    env = installed_collection(tmp_path / "env")
    by_env = run_playbook(
        "osdk_requeue",
        envvars={"ANSIBLE_COLLECTIONS_PATH": str(env)},
        private_data_dir=tmp_path / "pdd-env",
    )
    for where, result in (
        ("--ansible-collections-path", by_flag),
        ("$ANSIBLE_COLLECTIONS_PATH", by_env),
    ):
        assert result.requeue_after == 7.0, (
            f"expected the copy installed on {where} to win (7s), saw {result.requeue_after}"
        )


def test_ansible_inventory_is_the_runs_inventory(
    run_playbook: RunPlaybook, captured: tuple[logging.Logger, Captured], tmp_path: Path
) -> None:
    _, handler = captured
    inventory = FIXTURES / "inventories" / "groups"
    pdd = tmp_path / "pdd"
    (pdd / "inventory").mkdir(parents=True)
    (pdd / "inventory" / "stale").write_text("stale.invalid\n")  # from an earlier run
    result = run_playbook(
        "greet_group", envvars={"ANSIBLE_INVENTORY": str(inventory)}, private_data_dir=pdd
    )
    assert not result.failed, result.failed_tasks
    said = debug_outputs(handler).get("Say the group's greeting")
    assert said == "from the operators group on localhost", f"the play said {said!r}"
    copied = sorted(
        p.relative_to(pdd / "inventory").as_posix() for p in (pdd / "inventory").rglob("*")
    )
    assert copied == ["group_vars", "group_vars/operators.yml", "hosts"], (
        f"expected the inventory copied alone into the run's inventory, saw {copied}"
    )
