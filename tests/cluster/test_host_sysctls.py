"""The host's sysctls a real node changes are recorded before it starts and put back by
``down``: the first value recorded wins, a sysctl the kernel lacks is skipped, one that
cannot be written back stays recorded for the next ``down`` (unit tests on a fake
/proc/sys; the real node's own check is in test_real_node_leaves_host.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devcluster import sysctls


@pytest.fixture
def proc_sys(tmp_path: Path) -> Path:
    """A fake /proc/sys with the host's values before a node."""
    root = tmp_path / "proc-sys"
    for name, value in {
        "net/ipv4/ip_forward": "0",
        "kernel/panic": "1",
        "kernel/panic_on_oops": "0",
        "net/ipv4/tcp_rmem": "4096\t131072\t6291456",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{value}\n")
    return root


def read(root: Path, name: str) -> str:
    return (root / name).read_text().strip()


def test_a_changed_sysctl_is_put_back(proc_sys: Path, tmp_path: Path) -> None:
    record = tmp_path / "sysctls.json"
    sysctls.record(names=["net/ipv4/ip_forward", "kernel/panic"], root=proc_sys, file=record)
    (proc_sys / "net/ipv4/ip_forward").write_text("1\n")  # the bridge plugin
    (proc_sys / "kernel/panic").write_text("10\n")  # the kubelet

    restored = sysctls.restore(root=proc_sys, file=record)

    seen = {n: read(proc_sys, n) for n in ("net/ipv4/ip_forward", "kernel/panic")}
    assert seen == {"net/ipv4/ip_forward": "0", "kernel/panic": "1"}, (
        f"expected the values from before the node, saw {seen}"
    )
    assert [(r.name, r.found) for r in restored] == [
        ("kernel/panic", "10"),
        ("net/ipv4/ip_forward", "1"),
    ], f"expected both reported as put back, saw {restored}"
    assert not record.exists(), "expected the record forgotten once everything was put back"


def test_the_first_value_recorded_wins(proc_sys: Path, tmp_path: Path) -> None:
    record = tmp_path / "sysctls.json"
    sysctls.record(names=["kernel/panic"], root=proc_sys, file=record)
    (proc_sys / "kernel/panic").write_text("10\n")
    # The node starts again after a crash: the sysctl is still the node's.
    sysctls.record(names=["kernel/panic", "kernel/panic_on_oops"], root=proc_sys, file=record)

    sysctls.restore(root=proc_sys, file=record)

    seen = read(proc_sys, "kernel/panic")
    assert seen == "1", f"expected kernel/panic back to 1 (before any node), saw {seen}"


@pytest.mark.parametrize(
    ("name", "now", "expected_reported"),
    [
        pytest.param("kernel/panic_on_oops", "0", False, id="unchanged-is-left-alone"),
        pytest.param("net/ipv4/tcp_rmem", "4096 131072 6291456", False, id="same-fields"),
        pytest.param("net/ipv4/tcp_rmem", "4096 87380 6291456", True, id="multi-value"),
    ],
)
def test_only_what_changed_is_written(
    proc_sys: Path, tmp_path: Path, name: str, now: str, expected_reported: bool
) -> None:
    record = tmp_path / "sysctls.json"
    before = read(proc_sys, name)
    sysctls.record(names=[name], root=proc_sys, file=record)
    (proc_sys / name).write_text(f"{now}\n")

    restored = sysctls.restore(root=proc_sys, file=record)

    assert bool(restored) == expected_reported, (
        f"expected reported={expected_reported}, saw {restored}"
    )
    seen = read(proc_sys, name)
    expected = before if expected_reported else now
    assert seen == expected, f"expected {name} = {expected!r}, saw {seen!r}"


def test_a_sysctl_the_kernel_lacks_is_skipped(proc_sys: Path, tmp_path: Path) -> None:
    record = tmp_path / "sysctls.json"

    values = sysctls.record(names=["kernel/panic", "net/nowhere/x"], root=proc_sys, file=record)

    assert values == {"kernel/panic": "1"}, f"expected only kernel/panic recorded, saw {values}"


def test_a_failed_write_is_reported_and_kept(
    proc_sys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "sysctls.json"
    sysctls.record(names=["kernel/panic", "net/ipv4/ip_forward"], root=proc_sys, file=record)
    (proc_sys / "kernel/panic").write_text("10\n")
    (proc_sys / "net/ipv4/ip_forward").write_text("1\n")
    refused = proc_sys / "kernel/panic"
    real_write = Path.write_text

    def write_text(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self == refused:
            raise PermissionError(13, "Permission denied", str(self))
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_text", write_text)
    first = sysctls.restore(root=proc_sys, file=record)
    monkeypatch.undo()

    errors = {r.name: bool(r.error) for r in first}
    assert errors == {"kernel/panic": True, "net/ipv4/ip_forward": False}, (
        f"expected kernel/panic reported as failed and ip_forward put back, saw {first}"
    )
    kept = json.loads(record.read_text())
    assert kept == {"kernel/panic": "1"}, f"expected only kernel/panic kept, saw {kept}"

    second = sysctls.restore(root=proc_sys, file=record)

    assert [(r.name, r.error) for r in second] == [("kernel/panic", "")], (
        f"expected the next down to put kernel/panic back, saw {second}"
    )
    assert read(proc_sys, "kernel/panic") == "1", "expected kernel/panic back to 1"
    assert not record.exists(), "expected the record forgotten once everything was put back"


def test_what_the_node_changes_is_recorded() -> None:
    expected = {
        "net/ipv4/ip_forward",  # bridge CNI plugin, isGateway
        "vm/overcommit_memory",  # kubelet's kernel tunables (container_manager_linux.go)
        "vm/panic_on_oom",
        "kernel/panic",
        "kernel/panic_on_oops",
        "kernel/keys/root_maxkeys",
        "kernel/keys/root_maxbytes",
    }

    missing = expected - set(sysctls.CHANGED_BY_NODE)

    assert missing == set(), f"expected every sysctl the node writes recorded, missing {missing}"
