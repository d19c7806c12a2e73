"""Where each test runs: the ``make check`` set, the integration set, the slow lane, and
which integration tests may not run at the same time as each other.

``tests/conftest.py`` applies this table at collection (tests never mark themselves for
it), so the split stays in one place and test files stay as they are:

- ``integration``: needs the embedded cluster, or runs real Ansible or other processes
  (seconds per test). ``make check`` (``-m 'not integration'``) leaves these out and
  stays a pure-Python loop of about a minute; ``make test`` runs them.
- ``lane``: the slowest end-to-end scenarios (the real node; the operator image built
  with podman and deployed). ``make test`` leaves them out; ``make test-lanes`` (and so
  ``make test-all``, what CI runs) runs them, one at a time.
- ``exclusive``: tests that take a shared component of the cluster away (the API server
  restarted) would fail every test running beside them, and tests that check a
  machine-wide directory would see the others' files; ``make test`` runs them alone,
  after the parallel phase.
- groups: ``make test`` runs the integration set on parallel workers (pytest-xdist,
  ``--dist loadgroup``) against the one shared cluster. Every test has its own
  namespace, free ports and temporary directories, so tests are independent, except
  those that share cluster-scoped state: tests of one group run on one worker, one after
  the other. Groups go by test id (``group_of``), because xdist's controller, which
  hands tests to workers, sees only ids (``testkit.scheduling``).
"""

from __future__ import annotations

from dataclasses import dataclass

# Fixtures that run real Ansible (ansible-runner, cold or through warm launchers).
ANSIBLE_FIXTURES = frozenset(
    {"runner", "fresh_runner", "run_playbook", "launchers", "run_warm", "run_cold"}
)

# Modules and tests that run real Ansible or start processes without one of those
# fixtures (measured: 0.5 to 30 s a test on 2 cores, most of make check's old 3 to 7 min).
PROCESS_TESTS = (
    "tests/warm/test_recycle.py",
    "tests/warm/test_templates.py",
    "tests/warm/test_lifecycle.py",
    "tests/warm/test_shortcut.py",
    "tests/warm/test_gates.py",
    "tests/warm/test_client.py",
    "tests/memcached/test_webhook_roles.py",
    "tests/tools/scaffold/test_create_webhook.py::test_generated_roles_run",
    "tests/testloop/test_scheduling.py",
    # kubectl kustomize: the control-plane binaries, which make check does not build.
    "tests/operations/sharding/test_deployment.py",
    "tests/memcached/test_levels.py::test_prometheus_manifests_scrape_the_exporters_and_alert",
    # make bundle, scorecard, catalog with the Go tools (built into bin/ once).
    "tests/tools/publish/test_bundle.py",
)

# The slow lane: the real node (one per machine) and the operator image (podman builds).
LANE_TESTS = (
    "tests/cluster/test_real_node.py",
    "tests/cluster/test_real_node_leaves_host.py",
    "tests/cluster/test_real_node_only.py",
    "tests/image/test_container.py",
    "tests/image/test_deploy_real_node.py",
)

# Alone, after the parallel phase: tests that restart a component of the shared cluster,
# and tests that check a machine-wide place no other run may write meanwhile (the timed-out
# run's check that nothing was left in ~/.ansible/tmp, where any plain ansible-playbook
# of another worker writes too).
EXCLUSIVE_TESTS = (
    "tests/runner/test_reconcile.py::test_reconciles_after_apiserver_restart",
    "tests/warm/test_lifecycle.py::test_a_run_killed_by_its_timeout_leaves_no_process_and_no_temp_dir",
)

# tests/memcached/test_deploy.py applies config/default and deletes it when it ends,
# the Memcached CRD with it: every test that needs that CRD runs on the same worker. A
# test using these fixtures outside MEMCACHED_CRD_TESTS is refused at collection.
MEMCACHED_CRD_FIXTURES = frozenset({"memcached_crd", "deployed"})
MEMCACHED_CRD_TESTS = (
    "tests/memcached/test_deploy.py",
    "tests/memcached/test_kstatus.py",
    "tests/memcached/test_levels.py",
    "tests/memcached/test_nonblocking.py",
    "tests/memcached/test_runs_per_rollout.py",
    "tests/memcached/test_webhook_roles.py::test_make_run_wiring_serves_the_roles",
    "tests/tools/preview/test_preview.py",
)
MEMCACHED_CRD = "memcached-crd"
# The lane's tests share the real node and config/crd: one worker, in turn.
CLUSTER_WIDE = "cluster-wide"
# Runners started without --runner-dir share /tmp/ansible-operator/runner; a second one
# moves to a directory of its own and logs a warning these tests do not expect to see.
DEFAULT_RUNNER_DIR_TESTS = (
    "tests/proxy/test_proxy_port.py",
    "tests/compat/test_artifacts.py",
    "tests/cli/test_empty_watches.py",
    "tests/cli/test_start_up.py",
)
DEFAULT_RUNNER_DIR = "default-runner-dir"


@dataclass(frozen=True)
class Placement:
    """Where one test runs."""

    integration: bool
    lane: bool
    exclusive: bool
    group: str | None


def _matches(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


def group_of(nodeid: str) -> str | None:
    """The group of test ``nodeid``: tests of one group run on one worker, in turn."""
    if _matches(nodeid, LANE_TESTS):
        return CLUSTER_WIDE
    if _matches(nodeid, MEMCACHED_CRD_TESTS):
        return MEMCACHED_CRD
    if _matches(nodeid, DEFAULT_RUNNER_DIR_TESTS):
        return DEFAULT_RUNNER_DIR
    return None


def place(nodeid: str, *, fixtures: frozenset[str], cluster_fixtures: frozenset[str]) -> Placement:
    """The placement of test ``nodeid`` (as pytest names it) that uses ``fixtures``.

    Raises ``LookupError`` for a test on the Memcached CRD that is not in its group.
    """
    integration = bool(fixtures & (cluster_fixtures | ANSIBLE_FIXTURES)) or _matches(
        nodeid, PROCESS_TESTS
    )
    # A lane module's pure tests (test_real_node.py's preflight checks) stay in make check.
    lane = integration and _matches(nodeid, LANE_TESTS)
    group = group_of(nodeid)
    if fixtures & MEMCACHED_CRD_FIXTURES and group != MEMCACHED_CRD:
        raise LookupError(
            f"{nodeid} uses the Memcached CRD, which tests/memcached/test_deploy.py deletes: "
            "add it to MEMCACHED_CRD_TESTS in testkit/lanes.py so they never run at once"
        )
    exclusive = integration and _matches(nodeid, EXCLUSIVE_TESTS)
    return Placement(integration=integration, lane=lane, exclusive=exclusive, group=group)
