"""Turning sharded mode on: the flag or $SHARDED, the replica id, and its exclusion of
leader election."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from runner.base import errors
from runner.operations.sharding import replica_problem
from tests.cli.settings_from import build, one_watch


@pytest.fixture
def watches_file(tmp_path: Path) -> Path:
    return one_watch(tmp_path)


@pytest.mark.parametrize(
    ("flags", "environ", "sharded"),
    [
        pytest.param((), {}, False, id="off-by-default"),
        pytest.param(("--sharded",), {}, True, id="flag"),
        pytest.param((), {"SHARDED": "true"}, True, id="env"),
        pytest.param(("--sharded=false",), {"SHARDED": "true"}, False, id="flag-wins"),
    ],
)
def test_sharded_mode_from_flag_or_environment(
    watches_file: Path, flags: tuple[str, ...], environ: dict[str, str], sharded: bool
) -> None:
    found = build(watches_file, *flags, environ=environ).election.sharded
    assert found is sharded, f"expected sharded={sharded}; saw {found}"


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(("--sharded", "--leader-elect"), id="flags"),
        pytest.param(("--sharded", "--enable-leader-election"), id="deprecated-flag"),
    ],
)
def test_sharded_mode_and_leader_election_exclude_each_other(
    watches_file: Path, flags: tuple[str, ...]
) -> None:
    with pytest.raises(errors.ConfigError, match="mutually exclusive"):
        build(watches_file, *flags)


def test_a_bad_sharded_environment_value_is_a_config_error(watches_file: Path) -> None:
    with pytest.raises(errors.ConfigError, match=r"\$SHARDED"):
        build(watches_file, environ={"SHARDED": "maybe"})


@pytest.mark.parametrize(
    ("flags", "environ", "replica"),
    [
        pytest.param(("--replica-id=r-1",), {"POD_NAME": "pod-7"}, "r-1", id="flag"),
        pytest.param((), {"POD_NAME": "pod-7"}, "pod-7", id="pod-name"),
        pytest.param((), {}, socket.gethostname(), id="host-name"),
    ],
)
def test_the_replica_id(
    watches_file: Path, flags: tuple[str, ...], environ: dict[str, str], replica: str
) -> None:
    found = build(watches_file, "--sharded", *flags, environ=environ).election.replica
    assert found == replica, f"expected replica id {replica!r}; saw {found!r}"


@pytest.mark.parametrize(
    ("flags", "environ", "group"),
    [
        pytest.param(("--shard-group=cache",), {}, "cache", id="flag"),
        pytest.param(
            ("--leader-election-id=memcached-operator",),
            {},
            "memcached-operator",
            id="leader-election-id",
        ),
        pytest.param((), {"OPERATOR_NAME": "op"}, "op", id="operator-name"),
        pytest.param((), {}, "playbook-operator", id="default"),
    ],
)
def test_the_shard_group(
    watches_file: Path, flags: tuple[str, ...], environ: dict[str, str], group: str
) -> None:
    found = build(watches_file, "--sharded", *flags, environ=environ).election.shard_group
    assert found == group, f"expected shard group {group!r}; saw {found!r}"


@pytest.mark.parametrize(
    ("replica", "problem"),
    [
        pytest.param("memcached-operator-7d9f-abcde", None, id="pod-name"),
        pytest.param("", "empty", id="empty"),
        pytest.param("Replica_1", "not lower-case", id="upper-case"),
        pytest.param("a,b", "not lower-case", id="comma"),
        pytest.param("r" * 64, "longer than 63", id="too-long"),
    ],
)
def test_replica_ids_that_cannot_name_a_lease_are_refused(
    replica: str, problem: str | None
) -> None:
    found = replica_problem(replica)
    if problem is None:
        assert found is None, f"expected {replica!r} accepted; saw {found!r}"
    else:
        assert found is not None and problem in found, f"expected {problem!r}; saw {found!r}"
