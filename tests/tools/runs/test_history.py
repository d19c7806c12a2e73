"""``playbook-operator runs kind/name`` lists a CR's recent runs from the artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import cli
from runner.queue import trigger


def artifact(
    runner_dir: Path, *, namespace: str, name: str, ident: str, kind: str = "Memcached"
) -> Path:
    path = runner_dir / "cache.example.com" / "v1alpha1" / kind / namespace / name
    run_dir = path / "artifacts" / ident
    run_dir.mkdir(parents=True)
    return run_dir


@pytest.fixture
def runner_dir(tmp_path: Path) -> Path:
    base = tmp_path / "runner"
    first = artifact(base, namespace="ns", name="m", ident="aaa")
    trigger.save(
        first,
        trigger.Trigger(trigger.Kind.CREATED),
        started=1_700_000_000.0,
        seconds=2.5,
        result="succeeded",
        failed_task=None,
    )
    second = artifact(base, namespace="ns", name="m", ident="bbb")
    trigger.save(
        second,
        trigger.dependent(kind="Deployment", namespace="ns", name="m-memcached", change="deleted"),
        started=1_700_000_100.0,
        seconds=1.25,
        result="failed",
        failed_task="Apply the memcached Deployment",
    )
    # A run without the runner's record (older runner, ansible-operator): status and events.
    legacy = artifact(base, namespace="other", name="m", ident="ccc")
    (legacy / "status").write_text("failed")
    (legacy / "job_events").mkdir()
    event = {"event": "runner_on_failed", "event_data": {"task": "Boom", "ignore_errors": False}}
    (legacy / "job_events" / "3-x.json").write_text(json.dumps(event))
    return base


def test_runs_lists_trigger_start_duration_result_and_failed_task(
    runner_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["runs", "memcached/m", "-n", "ns", f"--runner-dir={runner_dir}"])
    out = capsys.readouterr().out
    assert code == 0, f"expected exit 0, saw {code}; output:\n{out}"
    lines = out.strip().splitlines()
    assert len(lines) == 3, f"expected a header and two runs, saw:\n{out}"
    newest, oldest = lines[1], lines[2]
    for want in (
        "2023-11-14T22:15:00Z",
        "1.2",
        "failed",
        "dependent changed: Deployment ns/m-memcached deleted",
        "Apply the memcached Deployment",
    ):
        assert want in newest, f"expected {want!r} in the newest run's line, saw {newest!r}"
    for want in ("2023-11-14T22:13:20Z", "2.5", "succeeded", "created"):
        assert want in oldest, f"expected {want!r} in the oldest run's line, saw {oldest!r}"


@pytest.mark.parametrize(
    ("namespace", "idents"),
    [
        pytest.param("other", ["ccc"], id="one-namespace"),
        pytest.param(None, ["ccc", "bbb", "aaa"], id="any-namespace"),
    ],
)
def test_runs_json_and_runs_without_a_record(
    runner_dir: Path, namespace: str | None, idents: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["runs", "Memcached.cache.example.com/m", f"--runner-dir={runner_dir}", "-o", "json"]
    code = cli.main(argv + (["-n", namespace] if namespace else []))
    runs = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["ident"] for r in runs] == idents, f"saw {code}, {runs}"
    legacy = next(r for r in runs if r["ident"] == "ccc")
    assert (legacy["result"], legacy["failed_task"], legacy["trigger"]) == ("failed", "Boom", ""), (
        f"expected the legacy run read from status and job events, saw {legacy}"
    )


def test_no_runs_says_where_it_looked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["runs", "memcached/none", f"--runner-dir={tmp_path}"])
    err = capsys.readouterr().err
    assert code == 1 and str(tmp_path) in err, f"expected exit 1 naming the dir, saw {code}: {err}"
