"""Job events fold into failures, a requeue period and stats, as operator-sdk reads them.

These feed :class:`~runner.ansible.events.Tally` the event dicts ansible-runner
produces; ``test_runs.py`` checks the same rules on real runs.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from runner.ansible import events
from runner.base import errors
from runner.config import sections
from tests.ansible.conftest import Captured


def event(name: str, **data: Any) -> dict[str, Any]:
    data.setdefault("host", "localhost")
    return {"event": name, "event_data": data, "stdout": "", "created": "2030-01-02T03:04:05+00:00"}


def stats(**counters: int) -> dict[str, Any]:
    return event("playbook_on_stats", **{k: {"localhost": v} for k, v in counters.items()})


def tally(
    *evs: dict[str, Any], level: sections.LogEvents = sections.LogEvents.TASKS
) -> events.Tally:
    logger = logging.getLogger("tests.ansible.events")
    result = events.Tally(log=logger, level=level, verbosity=0)
    for ev in evs:
        assert result.handle(ev) is True, "every event is kept in the artifacts"
    return result


@pytest.mark.parametrize(
    ("res", "message"),
    [
        pytest.param({"msg": "boom", "stderr": "x"}, "boom", id="msg-first"),
        pytest.param({"msg": "", "stderr": "bad thing\n"}, "bad thing", id="stderr-without-msg"),
        pytest.param({"module_stderr": "Traceback"}, "Traceback", id="module-stderr"),
        pytest.param({"censored": "hidden (no_log)"}, "hidden (no_log)", id="no-log"),
        pytest.param({"msg": ["a", "b"]}, '["a", "b"]', id="non-string-msg"),
        pytest.param({"rc": 2, "_ansible_no_log": False}, '{"rc": 2}', id="compact-result"),
        pytest.param({}, errors.UNKNOWN_FAILURE, id="empty-result"),
        pytest.param(None, errors.UNKNOWN_FAILURE, id="no-result"),
    ],
)
def test_failure_message_is_msg_else_a_compact_rendering(res: Any, message: str) -> None:
    t = tally(event("runner_on_failed", task="t", res=res), stats(failures=1))
    assert [f.message for f in t.failed_tasks()] == [message]


def test_long_failure_messages_are_clipped() -> None:
    t = tally(event("runner_on_failed", task="t", res={"msg": "x" * 10_000}), stats())
    (failed,) = t.failed_tasks()
    assert len(failed.message) <= 2000


def test_ignored_failures_do_not_count() -> None:
    t = tally(event("runner_on_failed", task="t", ignore_errors=True, res={"msg": "m"}), stats())
    assert t.failed_tasks() == ()


def test_the_first_rescued_failures_of_a_host_do_not_count() -> None:
    t = tally(
        event("runner_on_failed", task="rescued", res={"msg": "r"}),
        event("runner_on_failed", task="real", role="web", res={"msg": "m"}),
        event("runner_on_failed", task="other host", host="db", res={"msg": "d"}),
        stats(rescued=1, failures=1),
    )
    assert t.failed_tasks() == (
        events.FailedTask(task="real", role="web", message="m"),
        events.FailedTask(task="other host", role=None, message="d"),
    )


@pytest.mark.parametrize(
    ("counters", "counted"),
    [
        pytest.param({"dark": 1}, 1, id="unreachable-fails"),
        pytest.param({"dark": 0}, 0, id="ignore-unreachable"),
    ],
)
def test_unreachable_host_fails_the_run_unless_ignored(
    counters: dict[str, int], counted: int
) -> None:
    t = tally(event("runner_on_unreachable", task="t", res={"msg": "gone"}), stats(**counters))
    assert len(t.failed_tasks()) == counted


def test_without_stats_every_failure_counts() -> None:
    t = tally(event("runner_on_failed", task="t", res={"msg": "m"}))
    assert t.stats is None
    assert len(t.failed_tasks()) == 1


@pytest.mark.parametrize(
    "action",
    ["requeue_after", "playbook_operator.util.requeue_after", "operator_sdk.util.requeue_after"],
)
def test_requeue_period_is_read_from_the_first_requeue_task(action: str) -> None:
    t = tally(
        event("runner_on_ok", task="r", task_action=action, res={"period": "1m30s"}),
        event("runner_on_ok", task="r2", task_action=action, res={"period": "5s"}),
    )
    assert t.requeue_after == 90.0


def test_requeue_period_is_read_by_resolved_action() -> None:
    t = tally(
        event(
            "runner_on_ok",
            task="r",
            task_action="requeue_after",
            resolved_action="playbook_operator.util.requeue_after",
            res={"period": "250ms"},
        )
    )
    assert t.requeue_after == 0.25


def test_unparsable_requeue_period_fails_the_run() -> None:
    t = tally(event("runner_on_ok", task="r", task_action="requeue_after", res={"period": "soon"}))
    assert t.requeue_after is None
    (failed,) = t.failed_tasks()
    assert "soon" in failed.message


def test_stats_are_read_for_localhost() -> None:
    t = tally(stats(ok=3, changed=1, skipped=2, failures=0))
    counts = [t.count(key) for key in ("ok", "changed", "skipped", "failures")]
    assert counts == [3, 1, 2, 0]
    assert t.stats_created == "2030-01-02T03:04:05+00:00"


def logged(level: sections.LogEvents, *evs: dict[str, Any]) -> Captured:
    handler = Captured()
    logger = logging.getLogger(f"tests.ansible.events.{level.value}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    t = events.Tally(log=logger, level=level, verbosity=0)
    for ev in evs:
        t.handle(ev)
    return handler


RUN = (
    event("playbook_on_start"),
    event("playbook_on_task_start", task="Create it", role="web", task_action="k8s"),
    event("runner_on_ok", task="Create it", role="web", task_action="k8s", res={"changed": True}),
    event("playbook_on_task_start", task="Show", task_action="debug"),
    event("runner_on_ok", task="Show", task_action="debug", res={"msg": "hi"}),
    event("playbook_on_task_start", task="Fact", task_action="set_fact"),
    event("runner_on_failed", task="Break", task_action="fail", res={"msg": "boom"}),
    stats(ok=2),
)


def test_tasks_level_logs_task_starts_debug_output_and_failures() -> None:
    handler = logged(sections.LogEvents.TASKS, *RUN)
    info = [r for r in handler.records if r.levelno >= logging.INFO]
    assert [r.getMessage() for r in info] == ["[playbook task start]", "debug", "task failed"]
    finished = [r for r in handler.records if r.levelno == logging.DEBUG]
    assert [(r.getMessage(), r.__dict__["task"]) for r in finished] == [("task ok", "Create it")]
    started, debug, failed = info
    assert (started.__dict__["task"], started.__dict__["role"]) == ("Create it", "web")
    assert debug.__dict__["output"] == "hi"
    assert failed.levelno == logging.ERROR
    assert (failed.__dict__["task"], failed.__dict__["error"]) == ("Break", "boom")


def test_everything_level_logs_every_event() -> None:
    handler = logged(sections.LogEvents.EVERYTHING, *RUN)
    assert [r.__dict__["event"] for r in handler.records] == [e["event"] for e in RUN]


def test_nothing_level_logs_nothing() -> None:
    assert logged(sections.LogEvents.NOTHING, *RUN).records == []


def test_a_broken_event_is_logged_and_does_not_stop_the_run() -> None:
    handler = logged(sections.LogEvents.TASKS, {"event": "runner_on_ok", "event_data": "garbage"})
    assert handler.messages() == ["could not read an ansible event"]
