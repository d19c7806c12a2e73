"""``down`` never deletes through a mount: whatever bytes the data dir's path holds, what
is mounted under the real node's directory is found in /proc/self/mountinfo, unmounted,
and only then is the directory deleted.

mountinfo escapes space, tab, newline and backslash as octal (``\\040``) and prints
every other byte as it is, UTF-8 or not. A mount point misread from it is a mount
``down`` does not see, and ``shutil.rmtree`` then deletes what the mount shows (a
hostPath, say). The parser is checked on kernel-shaped lines; a real bind mount under
a data dir named with non-ASCII (and non-UTF-8) bytes is checked as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import layout, leftovers, node


def mountinfo_line(point: bytes) -> bytes:
    """A /proc/self/mountinfo line as the kernel writes it for a bind mount at ``point``."""
    return b"812 29 254:1 /srv/precious " + point + b" rw,relatime shared:1 - ext4 /dev/vda1 rw\n"


@pytest.mark.parametrize(
    ("escaped", "expected"),
    [
        pytest.param(b"/data/plain/node/v", b"/data/plain/node/v", id="plain-ascii"),
        pytest.param(
            "/data/données-é/node/v".encode(), "/data/données-é/node/v".encode(), id="utf-8"
        ),
        pytest.param(b"/data/caf\xe9/node/v", b"/data/caf\xe9/node/v", id="not-utf-8"),
        pytest.param(b"/data/a\\040b/node/v", b"/data/a b/node/v", id="space"),
        pytest.param(b"/data/a\\011b/node/v", b"/data/a\tb/node/v", id="tab"),
        pytest.param(b"/data/a\\012b/node/v", b"/data/a\nb/node/v", id="newline"),
        pytest.param(b"/data/a\\134b/node/v", b"/data/a\\b/node/v", id="backslash"),
        pytest.param(
            "/data/é\\134\\040x/node/v".encode(), "/data/é\\ x/node/v".encode(), id="mixed"
        ),
    ],
)
def test_mount_points_are_decoded_as_bytes(escaped: bytes, expected: bytes) -> None:
    raw = mountinfo_line(b"/") + mountinfo_line(escaped)

    seen = [os.fsencode(p) for p in leftovers.mount_points(raw)]

    assert seen == [b"/", expected], f"expected mount points [b'/', {expected!r}], saw {seen}"


def test_mounts_under_matches_whole_path_components(tmp_path: Path) -> None:
    directory = tmp_path / "données-é"
    lines = [
        mountinfo_line(os.fsencode(directory / "node" / "v")),
        mountinfo_line(os.fsencode(directory) + b"-sibling/node"),  # shares a prefix only
        mountinfo_line(os.fsencode(directory / "node" / "v" / "deeper")),
    ]
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_bytes(b"".join(lines))

    seen = leftovers.mounts_under(directory, mountinfo=mountinfo)

    expected = [str(directory / "node" / "v" / "deeper"), str(directory / "node" / "v")]
    assert seen == expected, (
        f"expected the two mounts below it, deepest first: {expected}; saw {seen}"
    )


# -- a real bind mount (root) ------------------------------------------------------------

NAMES = [
    pytest.param("données-é", id="non-ascii"),
    pytest.param(os.fsdecode(b"caf\xe9 \\ x"), id="not-utf-8-space-backslash"),
]


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[list[Path]]:
    """Mount points the test makes; any still mounted afterwards is unmounted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a bind mount needs root and mount(8)")
    points: list[Path] = []
    yield points
    for point in reversed(points):
        subprocess.run(["umount", "--lazy", str(point)], capture_output=True, check=False)


@pytest.mark.integration
@pytest.mark.parametrize("name", NAMES)
def test_down_unmounts_a_bind_mount_instead_of_deleting_through_it(
    tmp_path: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("a hostPath's content\n")
    where = layout.Layout(tmp_path / name)
    volume = where.data_dir / "node" / "kubelet" / "pods" / "p" / "volumes" / "v"
    volume.mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(precious), str(volume)], check=True)
    mounted.append(volume)
    # Host-wide and beside the point here (another cluster's real node may own cgroups).
    monkeypatch.setattr(leftovers, "remove_cgroups", lambda: None)
    said: list[str] = []

    node.stop(where=where, out=said.append)

    kept = sorted(p.name for p in precious.iterdir())
    assert kept == ["keep.txt"], f"expected the mounted directory's file kept, saw {kept}"
    assert not os.path.ismount(volume), f"expected {volume!r} unmounted by down, saw it mounted"
    assert not (where.data_dir / "node").exists(), (
        f"expected node/ deleted once nothing was mounted below it; down said {said}"
    )


@pytest.mark.integration
def test_down_unmounts_mounts_stacked_on_one_point(
    tmp_path: Path, mounted: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = [tmp_path / "first", tmp_path / "second"]
    where = layout.Layout(tmp_path / "données-é")
    volume = where.data_dir / "node" / "netns" / "cni-1"
    volume.mkdir(parents=True)
    for source in sources:
        source.mkdir()
        (source / "keep.txt").write_text(f"{source.name}\n")
        subprocess.run(["mount", "--bind", str(source), str(volume)], check=True)
        mounted.append(volume)
    monkeypatch.setattr(leftovers, "remove_cgroups", lambda: None)
    said: list[str] = []

    node.stop(where=where, out=said.append)

    kept = [s.name for s in sources if (s / "keep.txt").exists()]
    assert kept == ["first", "second"], f"expected both mounted files kept, saw {kept}"
    assert not (where.data_dir / "node").exists(), (
        f"expected node/ deleted once both mounts were gone; down said {said}"
    )
