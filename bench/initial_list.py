"""Starting against many objects: the runner's memory while an informer reads a big kind.

    .venv/bin/python -m bench.initial_list [--objects 20000] [--repeats 3] [--json FILE] [--keep]

``--objects`` ConfigMaps (384 characters of data each, no two alike) are created in a
namespace of their own on the embedded cluster (``bench-initial-list-<objects>``; 12
threads sharing the project's client; the time and rate are printed; objects already
there are not created again, so a re-run with ``--keep`` starts at once). Then, for each
way to read a kind's initial state, a fresh process (``--child MODE``) builds the
runner's own informer (:class:`runner.watch.source.Informer`, a no-op handler) on that
namespace's ConfigMaps and waits until it is synced:

- ``stream``: WatchList, as the 1.36 API server offers it (``sendInitialEvents=true``,
  objects one at a time up to the end bookmark; :mod:`runner.watch.initial`);
- ``pages``: the fallback, LIST in pages of 500 (:func:`runner.watch.budget.pages`),
  reached as on a server without WatchList: the client refuses streamed lists;
- ``whole``: one LIST without ``limit``, decoded whole, as the informer read before
  paging: the client also drops ``limit`` from the LIST.

Each process reports the time from the informer's start to synced, its peak RSS
(``ru_maxrss``), its RSS just before the informer started and after the sync (after a
``gc.collect()``, the informer holding every object), and what the store holds
(objects, MiB of compact JSON: :func:`runner.watch.budget.measure`). Meanwhile the API
server's RSS is sampled (10 per second) and its rise over the figure before the process
is kept: the cluster is shared, so that one is indicative. The modes run ``--repeats``
times in turn (stream, pages, whole, stream, ...); the table shows medians (min-max) and
each mode's peak over ``whole``'s. The namespace is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import enum
import gc
import json
import logging
import operator
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import devcluster
from bench import accounting, embedded, tables
from devcluster import binaries, processes
from runner.kube import client as kube_client
from runner.kube import config as kube_config
from runner.kube import decode
from runner.kube import errors as kube_errors
from runner.kube.transport import Query
from runner.kube.types import WatchEvent
from runner.watch import budget, source
from testkit.helpers import wait_for

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024
LABEL = ("playbook-operator.dev/bench", "initial-list")
THREADS = 12
SYNC_TIMEOUT = 900.0


class Mode(enum.Enum):
    """How the informer reads the kind's initial state."""

    STREAM = "stream"  # WatchList
    PAGES = "pages"  # LIST with limit/continue: a server without WatchList
    WHOLE = "whole"  # one LIST, no limit: the informer before paging


class Offered(kube_client.Client):
    """The project's client, answering as a server that offers only what ``mode`` reads.

    The informer is the runner's own, unchanged: it falls back to pages on the refusal
    (:data:`runner.watch.initial.REFUSED`), as it would on a server without WatchList.
    """

    def __init__(self, config: kube_config.ClientConfig, *, mode: Mode) -> None:
        super().__init__(config)
        self.mode = mode

    def stream(
        self, path: str, *, query: Query, read_timeout: float
    ) -> Iterator[WatchEvent | decode.Rejected]:
        if self.mode is not Mode.STREAM and "sendInitialEvents" in query:
            body = {"message": f"streamed lists are off for this benchmark ({self.mode.value})"}
            raise kube_errors.api_error(status=422, method="WATCH", path=path, body=body)
        return super().stream(path, query=query, read_timeout=read_timeout)

    def list_objects(self, path: str, *, query: Query | None = None) -> decode.Listing:
        if self.mode is Mode.WHOLE and query:
            query = {k: v for k, v in query.items() if k not in ("limit", "continue")}
        return super().list_objects(path, query=query)


# -- the child: one informer, one sync ------------------------------------------------


def _rss() -> int:
    gc.collect()
    return accounting.rss_bytes([os.getpid()])


def child(*, mode: Mode, kubeconfig: Path, namespace: str) -> dict[str, Any]:
    """Build the runner's informer in this process, wait until synced; the figures."""
    client = Offered(kube_config.from_kubeconfig(str(kubeconfig)), mode=mode)
    served = client.resource(embedded.CONFIGMAP)
    informer = source.Informer(
        client=client,
        resource=served,
        namespace=namespace,
        handler=lambda event: None,
        log=logging.getLogger("bench.initial_list"),
    )
    start = _rss()
    stop = threading.Event()
    began = time.monotonic()
    threading.Thread(target=informer.run, args=(stop,), daemon=True).start()
    if not informer.synced.wait(SYNC_TIMEOUT):
        raise TimeoutError(f"the {mode.value} informer did not sync within {SYNC_TIMEOUT:.0f} s")
    synced = time.monotonic() - began
    stop.set()
    after = _rss()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    held = informer.held()
    return {
        "mode": mode.value,
        "synced_s": round(synced, 2),
        "peak_mib": round(peak / MiB, 1),
        "start_mib": round(start / MiB, 1),
        "above_start_mib": round((peak - start) / MiB, 1),
        "after_sync_mib": round(after / MiB, 1),
        "objects": held.objects,
        "held_json_mib": round(held.bytes / MiB, 1),
        "streamed": informer.streams_lists,
    }


# -- the parent: objects, processes, table ------------------------------------------


def _name(index: int) -> str:
    return f"cm-{index:05d}"


def _terminating(client: kube_client.Client, name: str) -> bool:
    try:
        namespace = client.get(embedded.NAMESPACE, name=name)
    except kube_errors.NotFoundError:
        return False
    return bool(namespace["metadata"].get("deletionTimestamp"))


def ensure_namespace(client: kube_client.Client, name: str) -> None:
    """``name`` exists and takes objects (one an earlier run deleted: once it is gone)."""
    wait_for(
        lambda: _terminating(client, name),
        until=operator.not_,
        describe=f"namespace {name} of an earlier run to be gone",
        timeout=600,
        interval=2,
    )
    with contextlib.suppress(kube_errors.ConflictError):
        embedded.create_namespace(client, name)


def populate(client: kube_client.Client, *, namespace: str, count: int) -> dict[str, Any]:
    """Create the ConfigMaps ``namespace`` lacks of ``count``; how many, in how long."""
    path = client.resource(embedded.CONFIGMAP).path(namespace=namespace)
    query: Query = {"labelSelector": "=".join(LABEL)}
    have = {
        str(item["metadata"]["name"])
        for listing in budget.pages(client, path, query=query)
        for item in listing.items
    }
    missing = [_name(i) for i in range(count) if _name(i) not in have]

    def create(name: str) -> None:
        payload = base64.b64encode(os.urandom(288)).decode()  # 384 characters, unshared
        meta = {"name": name, "namespace": namespace, "labels": dict([LABEL])}
        body = {"metadata": meta, "data": {"payload": payload, "name": name}}
        with contextlib.suppress(kube_errors.ConflictError):
            client.create(embedded.CONFIGMAP, body, namespace=namespace)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        for done in pool.map(create, missing):
            del done
    seconds = time.monotonic() - started
    rate = len(missing) / seconds if missing and seconds else 0.0
    return {"created": len(missing), "create_s": round(seconds, 1), "per_s": round(rate, 1)}


def apiserver_pids(cluster: devcluster.Cluster) -> list[int]:
    """The API server's process (none if its pidfile cannot be read)."""
    handle = processes.read(cluster.layout.pid_file(binaries.APISERVER))
    return [handle.pid] if handle is not None else []


def run_child(*, cluster: devcluster.Cluster, mode: Mode, namespace: str) -> dict[str, Any]:
    """One ``--child`` process; its figures and the API server's RSS rise meanwhile."""
    argv = [sys.executable, "-m", "bench.initial_list", "--child", mode.value]
    argv += ["--kubeconfig", str(cluster.kubeconfig), "--namespace", namespace]
    apiserver = apiserver_pids(cluster)
    before = accounting.rss_bytes(apiserver)
    with accounting.PeakSampler(lambda: accounting.rss_bytes(apiserver), interval=0.1) as server:
        done = subprocess.run(
            argv, cwd=ROOT, capture_output=True, text=True, timeout=SYNC_TIMEOUT + 60, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"--child {mode.value} exited {done.returncode}: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if figures["streamed"] != (mode is Mode.STREAM):  # e.g. a server without WatchList
        read = "streamed" if figures["streamed"] else "in pages"
        raise RuntimeError(f"--child {mode.value} read the list {read}: not what it measures")
    figures["apiserver_rise_mib"] = round(max(server.peak - before, 0) / MiB, 1)
    return figures


def measure(
    *, cluster: devcluster.Cluster, objects: int, namespace: str, repeats: int, keep: bool
) -> dict[str, Any]:
    """Create the objects (if need be), run every mode ``repeats`` times in turn."""
    client = embedded.patient(
        kube_client.Client(kube_config.from_kubeconfig(str(cluster.kubeconfig)))
    )
    figures: dict[str, Any] = {"objects": objects, "namespace": namespace}
    ensure_namespace(client, namespace)
    try:
        figures["creation"] = populate(client, namespace=namespace, count=objects)
        print(f"objects: {figures['creation']}", flush=True)
        runs: dict[str, list[dict[str, Any]]] = {mode.value: [] for mode in Mode}
        for _ in range(repeats):
            for mode in Mode:
                runs[mode.value].append(run_child(cluster=cluster, mode=mode, namespace=namespace))
                print(runs[mode.value][-1], flush=True)
        figures["runs"] = runs
    finally:
        if not keep:
            embedded.delete_namespaces(client, [namespace])
    return figures


def table(figures: dict[str, Any]) -> str:
    """The figures as docs/performance.md shows them."""
    runs: dict[str, list[dict[str, Any]]] = figures["runs"]

    def values(mode: str, key: str) -> list[float]:
        return [float(run[key]) for run in runs[mode]]

    whole_peak = tables.median(values(Mode.WHOLE.value, "peak_mib"))
    whole_above = tables.median(values(Mode.WHOLE.value, "above_start_mib"))
    rows = [
        [
            mode,
            f"{runs[mode][0]['objects']} ({runs[mode][0]['held_json_mib']} MiB of JSON)",
            tables.spread(values(mode, "synced_s")),
            tables.spread(values(mode, "peak_mib"), "MiB"),
            tables.spread(values(mode, "above_start_mib"), "MiB"),
            tables.spread(values(mode, "after_sync_mib"), "MiB"),
            tables.ratio(tables.median(values(mode, "peak_mib")), whole_peak),
            tables.ratio(tables.median(values(mode, "above_start_mib")), whole_above),
            tables.spread(values(mode, "apiserver_rise_mib"), "MiB"),
        ]
        for mode in runs
    ]
    header = [
        "mode",
        "held",
        "time to synced",
        "peak RSS",
        "peak over start",
        "RSS after sync",
        "peak / whole",
        "over start / whole",
        "API server RSS rise",
    ]
    return tables.table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=20_000, help="ConfigMaps (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode (default 3)")
    parser.add_argument("--namespace", help="default: bench-initial-list-<objects>")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="leave the objects for a re-run")
    parser.add_argument("--child", choices=[m.value for m in Mode], help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    namespace = args.namespace or f"bench-initial-list-{args.objects}"
    if args.child:
        figures = child(mode=Mode(args.child), kubeconfig=args.kubeconfig, namespace=namespace)
        print(json.dumps(figures))
        return 0
    cluster, _ = embedded.connect()
    figures = measure(
        cluster=cluster,
        objects=args.objects,
        namespace=namespace,
        repeats=args.repeats,
        keep=args.keep,
    )
    print(table(figures))
    tables.dump(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
