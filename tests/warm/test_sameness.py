"""A warm run is the cold run: same process context, nothing carried between runs."""

from __future__ import annotations

import concurrent.futures
import gzip
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner import warm
from tests.ansible.conftest import PLAYBOOKS as ANSIBLE_PLAYBOOKS
from tests.warm.conftest import PLAYBOOKS, Run, events, outputs, ready, started


def module_facts(result: Any) -> dict[str, Any]:
    facts = outputs(result)["Module facts"]
    assert isinstance(facts, dict), facts
    return facts


@pytest.mark.parametrize(
    "pipelining",
    [pytest.param("True", id="payload-on-stdin"), pytest.param("False", id="payload-file")],
)
def test_modules_and_playbooks_start_warm(
    pipelining: str, launchers: warm.Launchers, run_warm: Run
) -> None:
    env = {"ANSIBLE_PIPELINING": pipelining}
    ready(launchers, run_warm, envvars=env)
    result = run_warm("inspect", envvars=env)
    assert not result.failed, result.failed_tasks
    assert started(result) == "warm"
    facts = module_facts(result)
    assert facts["preloaded"] is True, f"module did not start in a warm interpreter: {facts}"
    assert facts["session_leader"] is True, "a module child runs in its own session"
    assert facts["descriptors_survive_gc"] is True, "a launcher object closed a module's socket"


def test_process_context_is_the_runs(
    launchers: warm.Launchers, run_warm: Run, run_cold: Run
) -> None:
    env = {"WARM_TEST_VALUE": "per-run", "KUBECONFIG": "/nonexistent/per-run-kubeconfig"}
    ready(launchers, run_warm, envvars=env)
    warm_result = run_warm("inspect", envvars=env, extravars={"answer": "w"})
    cold_result = run_cold("inspect", envvars=env, extravars={"answer": "w"})
    assert started(warm_result) == "warm", started(warm_result)
    warm_facts, cold_facts = module_facts(warm_result), module_facts(cold_result)
    assert cold_facts["preloaded"] is False and warm_facts["preloaded"] is True
    for key in ("argv", "umask", "value", "kubeconfig", "kube_default", "executable", "extra_fds"):
        assert warm_facts[key] == cold_facts[key], (
            f"{key}: warm {warm_facts[key]!r} != cold {cold_facts[key]!r}"
        )
    assert warm_facts["value"] == "per-run"
    assert warm_facts["extra_fds"] == [], "descriptors leaked into the module"
    assert warm_facts["kube_default"] == "/nonexistent/per-run-kubeconfig", (
        "the kubernetes client's default kubeconfig must be the run's, not the launcher's"
    )
    warm_controller = outputs(warm_result)["Controller facts"]
    cold_controller = outputs(cold_result)["Controller facts"]
    assert warm_controller == cold_controller, f"warm {warm_controller} != cold {cold_controller}"
    assert warm_controller["value"] == "per-run"
    assert Path(warm_facts["cwd"]).name == Path(cold_facts["cwd"]).name


def test_a_global_changed_by_one_module_is_unseen_by_the_next(
    launchers: warm.Launchers, run_warm: Run
) -> None:
    ready(launchers, run_warm)
    first = run_warm("inspect", extravars={"touch_global": True})
    second = run_warm("inspect")
    assert started(second) == "warm"
    assert module_facts(first)["global_before"] is None
    assert module_facts(second)["global_before"] is None, "state leaked between module runs"


def test_concurrent_runs_keep_their_own_vars_and_environment(
    launchers: warm.Launchers, run_warm: Run, tmp_path: Path
) -> None:
    ready(launchers, run_warm)

    def one(index: int) -> tuple[int, Any, Any]:
        result = run_warm(
            "inspect",
            private_data_dir=tmp_path / f"pdd-{index}",
            envvars={"WARM_TEST_VALUE": f"env-{index}"},
            extravars={"answer": f"var-{index}"},
        )
        controller = outputs(result)["Controller facts"]
        return index, module_facts(result)["value"], (controller["value"], controller["answer"])

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        seen = list(pool.map(one, range(4)))
    for index, module_value, controller in seen:
        assert module_value == f"env-{index}", seen
        assert controller == (f"env-{index}", f"var-{index}"), seen


def test_vault_password_file(launchers: warm.Launchers, run_warm: Run, tmp_path: Path) -> None:
    password = tmp_path / "vault-password"
    password.write_text("s3cret\n")
    project = tmp_path / "project"
    project.mkdir()
    plain = project / "vaulted_vars.yml"
    plain.write_text("secret: the vaulted value\n")
    vault = Path(sys.executable).parent / "ansible-vault"
    subprocess.run(
        [str(vault), "encrypt", "--vault-password-file", str(password), str(plain)],
        check=True,
        capture_output=True,
    )
    playbook = project / "vaulted.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  vars_files: [vaulted_vars.yml]\n"
        "  tasks:\n    - name: Show the secret\n      ansible.builtin.debug:\n"
        "        msg: '{{ secret }}'\n"
    )
    ready(launchers, run_warm)
    result = run_warm(playbook, cmdline=f"--vault-password-file {password}")
    assert not result.failed, result.failed_tasks
    assert started(result) == "warm"
    assert outputs(result)["Show the secret"] == "the vaulted value"


def test_different_ansible_settings_get_their_own_launcher(
    launchers: warm.Launchers, run_warm: Run
) -> None:
    ready(launchers, run_warm, envvars={"ANSIBLE_DISPLAY_ARGS_TO_STDOUT": "False"})
    ready(launchers, run_warm, envvars={"ANSIBLE_DISPLAY_ARGS_TO_STDOUT": "True"})
    assert launchers.running() == 3, "two program launchers (one per setting) and one module one"
    for setting in ("False", "True"):
        result = run_warm(
            "config",
            envvars={"ANSIBLE_DISPLAY_ARGS_TO_STDOUT": setting},
        )
        assert started(result) == "warm", started(result)
        shown = outputs(result)["Show the setting"]
        assert str(shown) == setting, f"expected the run's own setting {setting}, saw {shown}"


@pytest.mark.parametrize(
    "playbook",
    [
        pytest.param("inspect", id="role-with-library-module"),
        pytest.param("failing", id="failing-task"),
        pytest.param("tagged", id="tags"),
        pytest.param("rescued_then_failing", id="rescue"),
        pytest.param("tolerated", id="ignore-errors"),
        pytest.param("broken", id="syntax-error"),
    ],
)
def test_cold_and_warm_runs_report_the_same(
    playbook: str, launchers: warm.Launchers, run_warm: Run, run_cold: Run
) -> None:
    ready(launchers, run_warm)
    path = _playbook(playbook)
    warm_result, cold_result = run_warm(path), run_cold(path)
    assert started(warm_result) == "warm", started(warm_result)
    for field in ("ok", "changed", "skipped", "failures", "failed", "stats_missing", "status"):
        assert getattr(warm_result, field) == getattr(cold_result, field), (
            f"{field}: warm {getattr(warm_result, field)!r}, cold {getattr(cold_result, field)!r}"
        )
    assert [t.task for t in warm_result.failed_tasks] == [t.task for t in cold_result.failed_tasks]
    assert _shape(warm_result) == _shape(cold_result)


def _playbook(name: str) -> Path:
    own = PLAYBOOKS / f"{name}.yml"
    return own if own.exists() else ANSIBLE_PLAYBOOKS / f"{name}.yml"


def _shape(result: Any) -> list[tuple[str, str, bool]]:
    """The run as its events tell it, without times, ids and process details."""
    return [
        (
            e["event"],
            (e.get("event_data") or {}).get("task", ""),
            bool(((e.get("event_data") or {}).get("res") or {}).get("changed")),
        )
        for e in events(result)
        if e["event"] not in ("verbose", "debug")
    ]


def _left_behind(directory: Path) -> dict[str, str]:
    found = {}
    for path in sorted(directory.iterdir()):
        data = path.read_bytes()
        if path.suffix == ".gz":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                data = f"not a whole gzip file: {exc}".encode()
        found[path.name] = data.decode(errors="replace")
    return found


def test_a_module_ends_as_a_cold_one_with_what_it_left_open(
    launchers: warm.Launchers, run_warm: Run, run_cold: Run, tmp_path: Path
) -> None:
    """A warm child skips the interpreter's teardown; what teardown does that can be
    seen (threads waited for, atexit, open files closed, C buffers flushed, exit
    status) is done all the same."""
    results = {}
    for name, run in (("cold", run_cold), ("warm", run_warm)):
        directory = tmp_path / f"left-{name}"
        directory.mkdir()
        if name == "warm":
            ready(launchers, run_warm)
        result = run("ending", extravars={"ending_directory": str(directory)})
        assert started(result) == ("warm" if name == "warm" else "no launcher status"), (
            f"{name}: {started(result)}"
        )
        assert not result.failed, result.failed_tasks
        results[name] = (_left_behind(directory), outputs(result)["Report the exits"])
    expected_files = {
        "atexit.txt": "ran; thread done: True",
        "c-stdio.txt": "buffered by C",
        "packed.gz": "compressed",
        "text.txt": "buffered text",
        "thread.txt": "joined",
    }
    assert results["cold"][0] == expected_files, f"cold left {results['cold'][0]}"
    assert results["warm"][0] == expected_files, (
        f"expected warm to leave what cold leaves, {expected_files}, got {results['warm'][0]}"
    )
    assert (
        results["warm"][1]
        == results["cold"][1]
        == {
            "message": [1, "bye"],
            "status": [3, ""],
        }
    ), f"exits: warm {results['warm'][1]}, cold {results['cold'][1]}"
