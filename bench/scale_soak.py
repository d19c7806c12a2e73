"""The soak: does a runner under steady churn stay flat?

    .venv/bin/python -m bench.scale_soak [--crs 2000] [--duration 1800] [--noise on|off]
                                         [--churn-rate 0.3] [--out DIR]

One runner watching all namespaces (the Memcached operator of this repository, under
an API group of this benchmark's own, ``soak.bench.example.com``, so that it neither
takes over nor counts other benchmarks' or tests' CRs) runs on the embedded cluster:

1. ``--noise on`` (default): 20,000 ConfigMaps and 5,000 Secrets of 1 KiB in 20
   namespaces no operator owns (``bench/cache_budget.py``'s noise, created by its code
   and deleted at the end unless ``--keep-noise``);
2. ``--crs`` Memcacheds of one pod, created at ``--create-rate`` per second, their pods
   on a kwok node of their own (``testkit/pool.py``), then waited for until all are
   Successful at their generation with their pods reported, at once (or
   ``--settle-timeout`` passes: the soak goes on);
3. churn for ``--duration`` seconds: ``--churn-rate`` times a second a random CR's
   ``spec.size`` flips between 1 and 2 (a new generation, a Deployment change, a pod
   created or deleted: what a busy cluster does to an operator). Each patch costs two
   runs (the new generation, then the Deployment's readiness); two cores make about one
   Memcached run a second, so the default, 0.3, keeps the runner busy below saturation:
   a steady state, not a backlog.

Every ``--interval`` seconds (10) a sample is taken from ``/proc`` and the runner's
metrics: RSS of the runner, of the runner and its warm launchers (its children) and of
its whole tree (runs in flight included), the runner's threads and open fds, the size
of its ``--runner-dir`` (allocated blocks, as ``du``), the tree's CPU-seconds, runs so
far (``playbook_operator_runs_total``), failed runs, keys in the queue (delayed ones
included) and ready for a worker (``workqueue_depth``), runs in flight and
the bytes the informers hold. The samples go to ``DIR/samples.csv`` and
``DIR/samples.json``; the summary (churn phase: first vs last quarter, and the
least-squares slope per hour) is printed and written to ``DIR/summary.md``; the series
are drawn in ``DIR/soak.svg`` (a small SVG writer of its own: matplotlib is not a
dependency). Flat means: last quarter ≈ first quarter, slope ≈ 0.
A quick check: ``--crs 50 --duration 120 --noise off``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (
    accounting,
    cache_budget,
    convergence,
    embedded,
    memcached_scale,
    tables,
    workloads,
)
from runner.kube import client as kube_client
from testkit import pool
from testkit.harness import OperatorProcess

MiB = 1024 * 1024
GROUP = "soak.bench.example.com"
CIDR = "10.250.0.0/16"  # the pool's pod addresses: other benchmarks use 10.247-10.249
SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)")
#: (column, title, unit) of the summary and the plot, in that order
SERIES = (
    ("runner_mib", "runner RSS", "MiB"),
    ("launchers_mib", "runner + warm launchers RSS", "MiB"),
    ("tree_mib", "whole tree RSS (runs in flight included)", "MiB"),
    ("threads", "runner threads", ""),
    ("fds", "runner open fds", ""),
    ("runner_dir_mib", "runner dir", "MiB"),
    ("runs_per_min", "runs per minute", "/min"),
    ("queue_depth", "keys in the queue (delayed requeues included)", ""),
    ("ready_depth", "keys ready, waiting for a worker", ""),
    ("informer_mib", "informer bytes", "MiB"),
)


# -- one sample ---------------------------------------------------------------


def metric_sums(text: str) -> dict[str, float]:
    """Every metric of a /metrics text summed over its labels; ``name{result="failed"}``
    also summed apart for the run counter (failed runs)."""
    sums: dict[str, float] = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)  # comments (# HELP, # TYPE) do not match
        if match is None:
            continue
        name, labels, value = match.groups()
        with contextlib.suppress(ValueError):
            sums[name] = sums.get(name, 0.0) + float(value)
            if 'result="failed"' in (labels or ""):
                sums[name + ":failed"] = sums.get(name + ":failed", 0.0) + float(value)
    return sums


def proc_count(pid: int, *, what: str) -> int:
    """Threads (``status``) or open fds (``fd``) of one process; 0 once it is gone."""
    with contextlib.suppress(OSError, ValueError):
        if what == "fd":
            return len(os.listdir(f"/proc/{pid}/fd"))
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def disk_bytes(root: Path) -> int:
    """Allocated bytes under ``root`` (``du``'s figure); files may vanish meanwhile."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


class Sampler(accounting.Sampling):
    """Samples the runner every ``interval`` seconds in a thread, until stopped.

    ``phase`` and ``patches`` are set by the soak as it goes; each sample carries them.
    """

    def __init__(self, operator: OperatorProcess, *, interval: float) -> None:
        super().__init__(interval=interval)
        self.operator = operator
        self.phase = "start"
        self.patches = 0
        self.samples: list[dict[str, Any]] = []
        self._began = time.monotonic()

    def sample(self) -> None:
        try:
            self.samples.append(self.take())
        except (OSError, AssertionError) as exc:  # the runner is gone, or not serving
            print(f"sample skipped: {exc}", file=sys.stderr, flush=True)

    def take(self) -> dict[str, Any]:
        runner = memcached_scale.operator_pid(self.operator)
        tree = accounting.descendants(runner)
        children = [pid for pid in tree if accounting.parent(pid) == runner]
        sums = metric_sums(self.operator.metrics())
        runs = sums.get("playbook_operator_runs_total")
        if runs is None:  # a runner without the trigger-labelled counter
            runs = sums.get("playbook_operator_ansible_run_duration_seconds_count", 0.0)
        return {
            "t_s": round(time.monotonic() - self._began, 1),
            "phase": self.phase,
            "runner_mib": round(accounting.rss_bytes([runner]) / MiB, 1),
            "launchers_mib": round(accounting.rss_bytes([runner, *children]) / MiB, 1),
            "tree_mib": round(accounting.rss_bytes(tree) / MiB, 1),
            "launchers": len(children),
            "threads": proc_count(runner, what="status"),
            "fds": proc_count(runner, what="fd"),
            "runner_dir_mib": round(disk_bytes(self.operator.workdir / "runner") / MiB, 2),
            "cpu_s": round(accounting.cpu_seconds(runner), 1),
            "runs": int(runs),
            "failed_runs": int(sums.get("playbook_operator_runs_total:failed", 0.0)),
            "queue_depth": int(sums.get("playbook_operator_queue_depth", 0.0)),
            "ready_depth": int(sums.get("workqueue_depth", 0.0)),
            "in_flight": int(sums.get("playbook_operator_runs_in_flight", 0.0)),
            "informer_mib": round(sums.get("playbook_operator_informer_bytes", 0.0) / MiB, 2),
            "patches": self.patches,
        }


# -- figures ------------------------------------------------------------------


def with_rates(samples: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples with ``runs_per_min`` over the interval that ends at each."""
    rated: list[dict[str, Any]] = []
    for index, sample in enumerate(samples):
        before, rate = samples[index - 1] if index else None, 0.0
        if before is not None and sample["t_s"] > before["t_s"]:
            rate = (sample["runs"] - before["runs"]) * 60 / (sample["t_s"] - before["t_s"])
        rated.append({**sample, "runs_per_min": round(rate, 1)})
    return rated


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of ``(seconds, value)`` points, per hour."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 3600


def summary(samples: Sequence[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The Markdown table (churn phase, first vs last quarter) and its figures."""
    churn = [s for s in samples if s["phase"] == "churn"] or list(samples)
    quarter = max(len(churn) // 4, 1)
    first, last = churn[:quarter], churn[-quarter:]
    rows, figures = [], {}
    for column, title, unit in SERIES:
        mean_first = sum(s[column] for s in first) / len(first)
        mean_last = sum(s[column] for s in last) / len(last)
        slope = slope_per_hour([(s["t_s"], s[column]) for s in churn])
        figures[column] = {
            "first_quarter": round(mean_first, 2),
            "last_quarter": round(mean_last, 2),
            "slope_per_hour": round(slope, 2),
        }
        rows.append(
            [
                f"{title} ({unit})" if unit else title,
                f"{mean_first:.1f}",
                f"{mean_last:.1f}",
                tables.ratio(mean_last, mean_first),
                f"{slope:+.1f}",
            ]
        )
    header = ["over the churn", "first quarter", "last quarter", "last/first", "slope per hour"]
    return tables.table(header, rows), figures


SVG_WIDTH, SVG_PANEL, SVG_PAD, SVG_TOP = 760, 100, 48, 30


def panel(
    samples: Sequence[dict[str, Any]], *, series: tuple[str, str, str], top: int, span: float
) -> list[str]:
    """One series as a polyline in a box of its own, ``top`` pixels down."""
    column, name, unit = series
    values = [float(s[column]) for s in samples]
    low = min(0.0, *values) if values else 0.0
    high = max(values, default=1.0)
    high = high if high > low else low + 1
    width, box = SVG_WIDTH - 2 * SVG_PAD, top + 18
    points = " ".join(
        f"{SVG_PAD + s['t_s'] / span * width:.1f},"
        f"{box + SVG_PANEL - (v - low) / (high - low) * SVG_PANEL:.1f}"
        for s, v in zip(samples, values, strict=True)
    )
    parts = [
        f'<text x="{SVG_PAD}" y="{top + 12}" font-size="12">{name} ({unit or "count"}): '
        f"{low:g} to {high:g}</text>",
        f'<rect x="{SVG_PAD}" y="{box}" width="{width}" height="{SVG_PANEL}" '
        'fill="none" stroke="#ccc"/>',
        f'<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>',
    ]
    churn_at = next((s["t_s"] for s in samples if s["phase"] == "churn"), None)
    if churn_at is not None:
        at = SVG_PAD + churn_at / span * width
        parts.append(
            f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{box}" y2="{box + SVG_PANEL}" '
            'stroke="#d62728" stroke-dasharray="4 3"/>'
        )
    return parts


def svg(samples: Sequence[dict[str, Any]], *, title: str) -> str:
    """The series as small multiples (a plot without matplotlib), churn start dashed."""
    span = max((s["t_s"] for s in samples), default=1.0) or 1.0
    step = SVG_PANEL + 44
    parts = [f'<text x="{SVG_PAD}" y="18" font-size="14">{title}</text>']
    for index, series in enumerate(SERIES):
        parts += panel(samples, series=series, top=SVG_TOP + index * step, span=span)
    height = SVG_TOP + len(SERIES) * step + 20
    parts.append(
        f'<text x="{SVG_PAD}" y="{height - 6}" font-size="11">time: 0 to {span:.0f} s; '
        "dashed: churn starts</text>"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_WIDTH}" height="{height}" '
        'font-family="sans-serif">\n' + "\n".join(parts) + "\n</svg>\n"
    )


def write(out: Path, samples: list[dict[str, Any]], *, figures: dict[str, Any]) -> str:
    """Samples (CSV, JSON), summary and plot into ``out``; returns the summary text."""
    out.mkdir(parents=True, exist_ok=True)
    rated = with_rates(samples)
    if rated:
        with (out / "samples.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rated[0]))
            writer.writeheader()
            writer.writerows(rated)
    table, trend = summary(rated) if rated else ("(no samples)", {})
    figures["trend"] = trend
    (out / "samples.json").write_text(json.dumps({"figures": figures, "samples": rated}))
    (out / "summary.md").write_text(table + "\n")
    title = f"{figures['crs']} CRs, churn {figures['churn_rate']}/s, noise {figures['noise']}"
    (out / "soak.svg").write_text(svg(rated, title=title))
    return table


# -- the soak -----------------------------------------------------------------


def paced(count: int, *, rate: float, act: Callable[[int], None], until: float) -> int:
    """Call ``act(i)`` for i < ``count`` at ``rate`` per second (a schedule, not a burst)
    until the monotonic time ``until``; returns how many calls were made."""
    began = time.monotonic()
    done = 0
    while done < count and time.monotonic() < until:
        wait = began + done / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # pacing the load, not waiting on the cluster
        act(done)
        done += 1
    return done


def settled(client: kube_client.Client, workload: workloads.Workload, namespace: str) -> int:
    """CRs Successful at their generation with their pods reported (the run after the
    Deployment's readiness, not only the first): one list, at the sampling pace."""
    items = client.list(workload.gvk, namespace=namespace)["items"]
    return sum(
        1 for obj in items if convergence.at_generation(obj) and workloads.pods_reported(obj)
    )


def soak(
    *,
    args: argparse.Namespace,
    sampler: Sampler,
    client: kube_client.Client,
    workload: workloads.Workload,
    namespace: str,
    node: str,
) -> dict[str, Any]:
    """Create the CRs, wait until they settle, churn; the sampler runs throughout."""
    figures: dict[str, Any] = {}
    names = [f"memcached-{i:05d}" for i in range(args.crs)]
    sizes = dict.fromkeys(names, 1)
    choose = random.Random(args.seed)
    sampler.operator.start()
    with sampler:
        sampler.phase = "create"
        started = time.monotonic()

        def create(i: int) -> None:
            obj = workload.obj(names[i], namespace, size=1, **pool.placement(node))
            client.create(workload.gvk, obj, namespace=namespace)

        paced(args.crs, rate=args.create_rate, act=create, until=float("inf"))
        figures["create_s"] = round(time.monotonic() - started, 1)
        sampler.phase = "settle"
        deadline = time.monotonic() + args.settle_timeout
        while (done := settled(client, workload, namespace)) < args.crs:
            if time.monotonic() > deadline:
                print(f"{done}/{args.crs} settled; churning anyway", flush=True)
                break
            time.sleep(args.interval)  # polling the CRs' status at the sampling pace
        figures["settled_s"] = round(time.monotonic() - started, 1)
        sampler.phase = "churn"

        def churn(_: int) -> None:
            name = choose.choice(names)
            sizes[name] = 3 - sizes[name]
            body = {"spec": {"size": sizes[name]}}
            client.patch(workload.gvk, name=name, namespace=namespace, body=body)
            sampler.patches += 1

        paced(10**9, rate=args.churn_rate, act=churn, until=time.monotonic() + args.duration)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crs", type=int, default=2000, help="Memcached CRs (default 2000)")
    parser.add_argument("--duration", type=float, default=1800, help="churn, seconds (1800)")
    parser.add_argument("--churn-rate", type=float, default=0.3, help="patches/s (default 0.3)")
    parser.add_argument("--create-rate", type=float, default=20.0, help="creates/s (20)")
    parser.add_argument("--settle-timeout", type=float, default=3600, help="seconds (3600)")
    parser.add_argument("--noise", choices=("on", "off"), default="on", help="default on")
    parser.add_argument("--keep-noise", action="store_true", help="leave the noise in place")
    parser.add_argument("--interval", type=float, default=10.0, help="sampling, seconds (10)")
    parser.add_argument("--seed", type=int, default=21, help="which CRs the churn picks")
    parser.add_argument("--out", type=Path, help="samples, summary, plot (default: a temp dir)")
    args = parser.parse_args(argv)
    if min(args.churn_rate, args.create_rate, args.interval) <= 0:
        parser.error("--churn-rate, --create-rate and --interval must be above 0")
    out = args.out or Path(tempfile.mkdtemp(prefix="scale-soak-"))
    figures: dict[str, Any] = {"crs": args.crs, "duration_s": args.duration}
    figures |= {"churn_rate": args.churn_rate, "noise": args.noise}
    cluster, client = embedded.connect()
    namespace = embedded.create_namespace(client, f"bench-{int(time.time()) % 100000}-soak")
    try:
        if args.noise == "on":
            print("creating the noise (bench.cache_budget's) ...", flush=True)
            figures["noise_s"] = round(cache_budget.make_noise(cluster, client), 1)
        with (
            embedded.service_room(client),
            tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp,
            pool.node_pool(cluster, client, workdir=Path(tmp), cidr=CIDR) as node,
        ):
            workload = cache_budget._private(workloads.memcached(Path(tmp)), GROUP)
            memcached_scale.install(client, workload)
            (Path(tmp) / "operator").mkdir()
            operator = OperatorProcess(
                workdir=Path(tmp) / "operator",
                kubeconfig=Path(cluster.kubeconfig),
                namespace=namespace,
                watches=memcached_scale.watches(workload),
                args=("--log-level=info",),
                env={
                    "WATCH_NAMESPACE": "",  # all namespaces: the caches see the noise
                    "ANSIBLE_ROLES_PATH": str(workload.roles_dir),
                    "ANSIBLE_GATHERING": "explicit",
                },
            )
            sampler = Sampler(operator, interval=args.interval)
            try:
                figures |= soak(
                    args=args,
                    sampler=sampler,
                    client=client,
                    workload=workload,
                    namespace=namespace,
                    node=node,
                )
            finally:  # an interrupted soak still leaves its samples
                operator.stop()
                last = sampler.samples[-1] if sampler.samples else {}
                figures |= {k: last.get(k) for k in ("runs", "failed_runs", "patches", "cpu_s")}
                table = write(out, sampler.samples, figures=figures)
                print(f"\n{json.dumps(figures | {'trend': '...'})}\n\n{table}\n")
                print(f"samples, summary and plot in {out}", flush=True)
                embedded.delete_namespaces(client, [namespace])
                # The pool's kwok deletes the pods; let it before it stops.
                deadline = time.monotonic() + 300
                while (
                    time.monotonic() < deadline
                    and client.list(memcached_scale.POD, namespace=namespace)["items"]
                ):
                    time.sleep(2)
    finally:
        embedded.delete_namespaces(client, [namespace])
        if args.noise == "on" and not args.keep_noise:
            cache_budget.delete_noise(client)
    return 0


if __name__ == "__main__":
    sys.exit(main())
