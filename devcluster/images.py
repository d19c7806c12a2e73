"""Images for the real node without a registry: built here, loaded into its containerd.

No registry answers on these machines, so nothing is ever pulled. The node's
containerd gets every image from an archive: the pause image (the static ``pause``
program ``devcluster build --node real`` compiles, packed here into a one-layer
image), stand-ins for the images the project's roles name (``hack/node/*.sh`` build
them with podman from Debian packages or our own Go source, under the exact names the
roles use), and any local podman image (``devcluster load``, like ``kind load
docker-image``).

Archives are docker-archive tars (``manifest.json`` with ``RepoTags``): containerd's
importer takes their names as they are, where an OCI archive would need a base name.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devcluster import errors, nodeconfig, pins

#: The stand-in builders under hack/node/, each printing, on its last line, the name of
#: the image it built and then the other names it goes by: memcached from Debian's
#: package (under the tags memcached samples use), its exporter sidecar from our own
#: stdlib-only Go exporter (hack/node/memcached-exporter/; upstream's module is refused
#: by the proxy), and busybox from Debian's busybox-static.
STAND_INS = ("memcached.sh", "memcached-exporter.sh", "busybox.sh")
NAMESPACE = "k8s.io"  # the CRI plugin's containerd namespace
#: The podman image id a loaded image came from (a label on the containerd image), so
#: loading the same image again is skipped instead of copying hundreds of megabytes.
PODMAN_ID_LABEL = "io.devcluster.podman-id"


def _tar_member(archive: tarfile.TarFile, name: str, data: bytes, *, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    archive.addfile(info, io.BytesIO(data))


def pause_archive(*, binary: Path, name: str, out: Path) -> Path:
    """Write a docker-archive of a one-file image running ``binary`` as ``/pause``."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w", format=tarfile.GNU_FORMAT) as layer:
        _tar_member(layer, "pause", binary.read_bytes(), mode=0o755)
    layer_bytes = layer_buffer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        },
        sort_keys=True,
    ).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": ["layer.tar"]}]
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, mode="w", format=tarfile.GNU_FORMAT) as archive:
        _tar_member(archive, "layer.tar", layer_bytes)
        _tar_member(archive, config_name, config)
        _tar_member(archive, "manifest.json", json.dumps(manifest).encode())
    return out


def _run(command: list[str], *, what: str, timeout: float) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)
    except FileNotFoundError as exc:
        raise errors.NodeUnavailableError(f"{what}: `{command[0]}` is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise errors.StartError(f"{what}: `{' '.join(command)}` took over {timeout:.0f}s") from exc
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-12:]
        raise errors.StartError(
            f"{what}: `{' '.join(command)}` exited {done.returncode}:\n" + "\n".join(detail)
        )
    return done.stdout


def import_archive(*, socket: Path, archive: Path) -> None:
    """Load a docker-archive into the node's containerd (unpacked for the CRI plugin)."""
    ctr = shutil.which("ctr") or "ctr"
    _run(
        [ctr, f"--address={socket}", f"--namespace={NAMESPACE}", "images", "import", str(archive)],
        what=f"importing {archive.name} into the real node",
        timeout=300.0,
    )


def podman_archive(*, image: str, out: Path) -> Path:
    """``podman save`` a local image as a docker-archive (its name kept in RepoTags)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    _run(
        ["podman", "save", "--format=docker-archive", f"--output={out}", image],
        what=f"saving {image} from podman",
        timeout=300.0,
    )
    return out


def docker_name(image: str) -> str:
    """``image`` as a kubelet asks containerd for it: Docker Hub's rules fill in the
    registry and the ``latest`` tag (``memcached`` → ``docker.io/library/memcached:latest``)."""
    first, _, rest = image.partition("/")
    if not rest:
        image = f"docker.io/library/{image}"
    elif not ("." in first or ":" in first or first == "localhost"):
        image = f"docker.io/{image}"
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last or "@" in last else f"{image}:latest"


def archive_names(archive: Path) -> list[str]:
    """The names a docker-archive carries (its manifest's ``RepoTags``)."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("manifest.json")
        manifest = json.loads(member.read()) if member else []
    return [str(tag) for entry in manifest for tag in entry.get("RepoTags") or []]


def tag(*, socket: Path, source: str, target: str) -> None:
    ctr = shutil.which("ctr") or "ctr"
    base = [ctr, f"--address={socket}", f"--namespace={NAMESPACE}"]
    _run(
        [*base, "images", "tag", "--force", source, target],
        what=f"naming {source} {target} in the real node",
        timeout=60.0,
    )


def _ctr(socket: Path) -> list[str]:
    return [shutil.which("ctr") or "ctr", f"--address={socket}", f"--namespace={NAMESPACE}"]


def loaded_from(*, socket: Path, name: str) -> str | None:
    """The podman image id the node's image ``name`` was loaded from, if it carries one."""
    listing = _run(
        [*_ctr(socket), "images", "ls", f"name=={name}"],
        what=f"listing {name} in the real node",
        timeout=60.0,
    )
    for line in listing.splitlines()[1:]:
        # The last column holds the labels, comma-separated key=value pairs.
        for label in line.split()[-1].split(",") if line.split() else []:
            key, _, value = label.partition("=")
            if key == PODMAN_ID_LABEL:
                return value
    return None


def load(*, image: str, paths: nodeconfig.Paths, aliases: Sequence[str] = ()) -> bool:
    """Load the local podman image ``image`` into the real node's containerd.

    podman names a short name ``localhost/<name>``; a pod that names the image as it
    was given finds it under Docker's normalisation, so that name is added too, and so
    is each of ``aliases`` (no copy: names of the same image). Returns False when the
    node already holds this very image (same podman id) under that name, and nothing
    was copied.
    """
    if not paths.socket.exists():
        raise errors.NodeUnavailableError(
            f"no real node runs in {paths.directory.parent}; start one with "
            "`devcluster up --node real`"
        )
    wanted = docker_name(image)
    podman_id = _run(
        ["podman", "image", "inspect", "--format={{.Id}}", image],
        what=f"finding {image} in podman",
        timeout=60.0,
    ).strip()
    if podman_id and loaded_from(socket=paths.socket, name=wanted) == podman_id:
        _name_aliases(socket=paths.socket, name=wanted, aliases=aliases)
        return False
    safe = hashlib.sha256(image.encode()).hexdigest()[:16]
    archive = podman_archive(image=image, out=paths.images_dir / f"load-{safe}.tar")
    try:
        import_archive(socket=paths.socket, archive=archive)
        names = [docker_name(n) for n in archive_names(archive)]
    finally:
        archive.unlink(missing_ok=True)
    if names and wanted not in names:
        tag(socket=paths.socket, source=names[0], target=wanted)
    if podman_id:
        _run(
            [*_ctr(paths.socket), "images", "label", wanted, f"{PODMAN_ID_LABEL}={podman_id}"],
            what=f"labelling {wanted} in the real node",
            timeout=60.0,
        )
    _name_aliases(socket=paths.socket, name=wanted, aliases=aliases)
    return True


def _name_aliases(*, socket: Path, name: str, aliases: Sequence[str]) -> None:
    for alias in aliases:
        target = docker_name(alias)
        if target != name:
            tag(socket=socket, source=name, target=target)


@dataclass(frozen=True)
class StandIn:
    """A stand-in image in podman: the name it was built as, and its other names."""

    name: str
    aliases: tuple[str, ...] = ()


def stand_ins(*, timeout: float = 900.0) -> list[StandIn]:
    """Build (or find already built) each stand-in image in podman.

    The first build bootstraps a Debian base (debootstrap, minutes); later ones find
    the images in podman's storage by their recipe label and take about a second.
    """
    found = []
    for script in STAND_INS:
        path = pins.repo_root() / "hack" / "node" / script
        output = _run([str(path)], what=f"building the stand-in image ({script})", timeout=timeout)
        name, *aliases = output.strip().splitlines()[-1].split()
        found.append(StandIn(name=name, aliases=tuple(aliases)))
    return found


def build_stand_ins(*, timeout: float = 900.0) -> list[str]:
    """The names the stand-in images were built as (see :func:`stand_ins`)."""
    return [each.name for each in stand_ins(timeout=timeout)]
