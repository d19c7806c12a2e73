"""Every flag of ``ansible-operator run`` (operator-sdk v1.31) is accepted, with its meaning.

The list is upstream's: internal/ansible/flags/flag.go, controller-runtime's zap
flags (pkg/log/zap) bound in internal/cmd/ansible-operator/run/cmd.go, and the
flags ansible-operator added since (secure metrics, HTTP/2).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from runner import cli
from runner.base import errors, logs
from runner.config import sections
from tests.cli.settings_from import build, one_watch


@pytest.fixture
def watches_file(tmp_path: Path) -> Path:
    return one_watch(tmp_path)


#: Each upstream flag with a value it takes (None: a boolean given bare).
UPSTREAM_FLAGS: dict[str, str | None] = {
    "--watches-file": "./watches.yaml",
    "--inject-owner-ref": "false",
    "--ansible-verbosity": "3",
    "--ansible-roles-path": "/opt/ansible/roles",
    "--ansible-collections-path": "/opt/ansible/collections",
    "--ansible-args": "'--skip-tags=slow'",
    "--reconcile-period": "1m",
    "--max-concurrent-reconciles": "2",
    "--config": "",
    "--metrics-addr": ":8443",
    "--metrics-bind-address": ":8443",
    "--health-probe-bind-address": ":6789",
    "--enable-leader-election": None,
    "--leader-elect": None,
    "--leader-election-id": "memcached-operator",
    "--leader-election-namespace": "operators",
    "--leader-elect-resource-lock": "configmapsleases",
    "--leader-elect-lease-duration": "30s",
    "--leader-elect-renew-deadline": "20s",
    "--graceful-shutdown-timeout": "1m",
    "--ansible-log-events": "tasks",
    "--proxy-port": "8888",
    "--enable-http2": "false",
    "--metrics-secure": None,
    "--metrics-require-rbac": None,
    "--zap-devel": None,
    "--zap-encoder": "console",
    "--zap-log-level": "2",
    "--zap-stacktrace-level": "error",
    "--zap-time-encoding": "rfc3339nano",
}


@pytest.mark.parametrize(
    ("flag", "value"), [pytest.param(f, v, id=f[2:]) for f, v in UPSTREAM_FLAGS.items()]
)
def test_every_upstream_flag_is_accepted(flag: str, value: str | None) -> None:
    given = flag if value is None else f"{flag}={value}"
    args = cli.parse(["run", given])
    assert flag in args.given, f"{given} was not read as {flag}"


@pytest.mark.parametrize(
    ("flags", "attribute", "expected"),
    [
        pytest.param(("--zap-log-level=2",), "logging.level", logging.DEBUG - 1, id="zap-level-2"),
        pytest.param(("--zap-log-level=5",), "logging.level", logging.DEBUG - 4, id="zap-level-5"),
        pytest.param(("--zap-log-level=1",), "logging.level", logging.DEBUG, id="zap-level-1"),
        pytest.param(("--zap-log-level=debug",), "logging.level", logging.DEBUG, id="zap-debug"),
        pytest.param(("--zap-log-level=Error",), "logging.level", logging.ERROR, id="zap-error"),
        pytest.param(("--zap-log-level=panic",), "logging.level", logging.CRITICAL, id="zap-panic"),
        pytest.param(("--log-level=warning",), "logging.level", logging.WARNING, id="log-level"),
        pytest.param((), "logging.level", logging.INFO, id="level-default"),
        pytest.param(
            ("--zap-stacktrace-level=error",),
            "logging.stacktrace_level",
            logging.ERROR,
            id="stacktrace-level",
        ),
        pytest.param((), "logging.stacktrace_level", None, id="stacktrace-default"),
        pytest.param(
            ("--zap-time-encoding=epoch",),
            "logging.time_encoding",
            logs.TimeEncoding.EPOCH,
            id="time-encoding",
        ),
        pytest.param(
            ("--zap-encoder=console",),
            "logging.format",
            logs.LogFormat.CONSOLE,
            id="zap-encoder",
        ),
        pytest.param(("--zap-devel",), "logging.format", logs.LogFormat.CONSOLE, id="devel-fmt"),
        pytest.param(("--zap-devel",), "logging.level", logging.DEBUG, id="devel-level"),
        # No stack trace on warnings, unlike controller-runtime's devel mode.
        pytest.param(("--zap-devel",), "logging.stacktrace_level", None, id="devel-stacktrace"),
        pytest.param(
            ("--zap-devel",), "ansible.log_events", sections.LogEvents.CHANGES, id="devel-events"
        ),
        pytest.param(
            ("--zap-devel", "--ansible-log-events=Tasks"),
            "ansible.log_events",
            sections.LogEvents.TASKS,
            id="devel-events-given",
        ),
        pytest.param(
            ("--zap-devel", "--zap-encoder=json"),
            "logging.format",
            logs.LogFormat.JSON,
            id="devel-then-encoder",
        ),
        pytest.param(
            ("--zap-devel", "--zap-log-level=info"),
            "logging.level",
            logging.INFO,
            id="devel-then-level",
        ),
        pytest.param(
            ("--leader-elect-lease-duration=30s",),
            "election.lease_duration",
            30.0,
            id="lease-duration",
        ),
        pytest.param(
            ("--leader-elect-renew-deadline=20s",),
            "election.renew_deadline",
            20.0,
            id="renew-deadline",
        ),
        pytest.param(
            ("--enable-leader-election",), "election.leader_elect", True, id="enable-election"
        ),
        pytest.param(
            ("--metrics-addr=:9443",), "serving.metrics_bind_address", ":9443", id="metrics-addr"
        ),
        pytest.param(
            ("--ansible-log-events=everything",),
            "ansible.log_events",
            sections.LogEvents.EVERYTHING,
            id="log-events-any-case",
        ),
        pytest.param(
            (), "ansible.runner_dir", Path("/tmp/ansible-operator/runner"), id="runner-dir"
        ),
    ],
)
def test_flag_meaning(
    watches_file: Path, flags: tuple[str, ...], attribute: str, expected: object
) -> None:
    seen: object = build(watches_file, *flags)
    for part in attribute.split("."):  # a section, then its field
        seen = getattr(seen, part)
    assert seen == expected, f"{' '.join(flags) or 'no flag'}: {attribute} is {seen!r}"


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        pytest.param("--zap-log-level", "0", id="level-zero"),
        pytest.param("--zap-log-level", "loud", id="level-word"),
        pytest.param("--zap-stacktrace-level", "debug", id="stacktrace-debug"),
        pytest.param("--zap-time-encoding", "unix", id="time-encoding"),
        pytest.param("--zap-encoder", "logfmt", id="encoder"),
        pytest.param("--ansible-log-events", "some", id="log-events"),
    ],
)
def test_values_upstream_refuses_are_refused(flag: str, value: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.parse(["run", f"{flag}={value}"])
    assert stopped.value.code == 2, f"{flag}={value}: exit {stopped.value.code}"


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(("--leader-elect", "--enable-leader-election"), id="leader-elect"),
        pytest.param(("--metrics-addr=:1", "--metrics-bind-address=:2"), id="metrics"),
    ],
)
def test_a_flag_and_its_deprecated_name_together_are_refused(
    watches_file: Path, flags: tuple[str, ...]
) -> None:
    with pytest.raises(errors.ConfigError, match="only one of"):
        build(watches_file, *flags)


MANAGER_CONFIG = """\
apiVersion: controller-runtime.sigs.k8s.io/v1alpha1
kind: ControllerManagerConfig
health:
  healthProbeBindAddress: :7000
metrics:
  bindAddress: 127.0.0.1:7001
leaderElection:
  leaderElect: true
  resourceName: 811c9dc5.example.com
  resourceNamespace: operators
  leaseDuration: 40s
  renewDeadline: 30s
  retryPeriod: 5s
  resourceLock: leases
gracefulShutDown:
  timeout: 45s
cacheNamespace: team-a
"""


def test_a_manager_config_file_gives_settings_flags_win(watches_file: Path, tmp_path: Path) -> None:
    config = tmp_path / "controller_manager_config.yaml"
    config.write_text(MANAGER_CONFIG)
    built = build(watches_file, f"--config={config}", "--metrics-bind-address=:7777")
    seen = {
        "health_probe_bind_address": built.serving.health_probe_bind_address,
        "metrics_bind_address": built.serving.metrics_bind_address,
        "leader_elect": built.election.leader_elect,
        "leader_election_id": built.election.lease_name,
        "leader_election_namespace": built.election.namespace,
        "lease_duration": built.election.lease_duration,
        "renew_deadline": built.election.renew_deadline,
        "retry_period": built.election.retry_period,
        "graceful_shutdown_timeout": built.graceful_shutdown_timeout,
        "watch_namespaces": built.watch_namespaces,
    }
    assert seen == {
        "health_probe_bind_address": ":7000",
        "metrics_bind_address": ":7777",  # the flag wins over the file
        "leader_elect": True,
        "leader_election_id": "811c9dc5.example.com",
        "leader_election_namespace": "operators",
        "lease_duration": 40.0,
        "renew_deadline": 30.0,
        "retry_period": 5.0,
        "graceful_shutdown_timeout": 45.0,
        "watch_namespaces": ("team-a",),
    }
    watching = build(watches_file, f"--config={config}", environ={"WATCH_NAMESPACE": "b"})
    assert watching.watch_namespaces == ("b",), "WATCH_NAMESPACE wins over cacheNamespace"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("webhook:\n  port: 9443\n", "webhook options are not supported", id="webhook"),
        pytest.param("leaderElection:\n  leaseDuration: soon\n", "leaseDuration", id="duration"),
        pytest.param("- a\n", "expected a mapping", id="not-a-mapping"),
    ],
)
def test_a_bad_manager_config_is_a_config_error(
    watches_file: Path, tmp_path: Path, content: str, expected: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(content)
    with pytest.raises(errors.ConfigError, match=expected):
        build(watches_file, f"--config={config}")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("true", True, id="true"),
        pytest.param("TRUE", True, id="TRUE"),
        pytest.param("1", True, id="1"),
        pytest.param("False", False, id="False"),
        pytest.param("yes", False, id="not-a-go-bool"),
    ],
)
def test_ansible_debug_logs_reads_go_booleans(
    watches_file: Path, value: str, expected: bool
) -> None:
    built = build(watches_file, environ={"ANSIBLE_DEBUG_LOGS": value})
    assert built.ansible.debug_logs is expected, f"ANSIBLE_DEBUG_LOGS={value}"


def test_a_missing_ansible_inventory_stops_the_runner(watches_file: Path, tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match=r"\$ANSIBLE_INVENTORY: no such file"):
        build(watches_file, environ={"ANSIBLE_INVENTORY": str(tmp_path / "nothere")})


# 2024-05-06T07:08:09.123456Z
MOMENT = 1714979289.123456


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        pytest.param(logs.TimeEncoding.EPOCH, MOMENT, id="epoch"),
        pytest.param(logs.TimeEncoding.MILLIS, MOMENT * 1000, id="millis"),
        pytest.param(logs.TimeEncoding.NANO, int(MOMENT * 1e9), id="nano"),
        pytest.param(logs.TimeEncoding.ISO8601, "2024-05-06T07:08:09.123Z", id="iso8601"),
        pytest.param(logs.TimeEncoding.RFC3339, "2024-05-06T07:08:09Z", id="rfc3339"),
        pytest.param(
            logs.TimeEncoding.RFC3339NANO, "2024-05-06T07:08:09.123456Z", id="rfc3339nano"
        ),
    ],
)
def test_zap_time_encodings(encoding: logs.TimeEncoding, expected: object) -> None:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "hello", None, None)
    record.created = MOMENT
    line = json.loads(logs.JsonFormatter(time_encoding=encoding).format(record))
    assert line["ts"] == pytest.approx(expected), f"{encoding.value}: ts is {line['ts']!r}"


@pytest.mark.parametrize(
    ("level", "stacktrace"),
    [
        pytest.param(logging.ERROR, True, id="error-has-it"),
        pytest.param(logging.WARNING, False, id="warning-has-not"),
    ],
)
def test_zap_stacktrace_level(level: int, stacktrace: bool) -> None:
    formatter = logs.JsonFormatter(stacktrace_level=logging.ERROR)
    record = logging.LogRecord("t", level, __file__, 1, "hello", None, None)
    line = json.loads(formatter.format(record))
    assert ("test_zap_stacktrace_level" in line.get("stacktrace", "")) is stacktrace, line
