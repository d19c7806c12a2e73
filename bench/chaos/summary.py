"""The chaos benchmark's tables: the faults one by one, the figures, the checks.

Part of ``make chaos``: ``python -m bench.chaos`` prints :func:`report` of the
:class:`~bench.chaos.scenario.Outcome` a run returned.
"""

from __future__ import annotations

import sys

from bench import tables
from bench.chaos import scenario


def report(outcome: scenario.Outcome) -> str:
    f = outcome.figures
    seconds = [s for s in (x.converge_seconds for x in outcome.faults) if s is not None]
    fault_rows = [
        [
            str(index),
            fault.kind,
            f"{raw['at']:.0f}",
            f"{fault.outage:.1f}",
            "-" if fault.converge_seconds is None else f"{fault.converge_seconds:.1f}",
            "-" if fault.leader_seconds is None else f"{fault.leader_seconds:.1f}",
            f"{fault.leader_before} → {fault.leader_after}",
            str(fault.runs_after - fault.runs_before),
            fault.note or "-",
        ]
        for index, (fault, raw) in enumerate(zip(outcome.faults, f["faults"], strict=True), 1)
    ]
    exits = ", ".join(f"{e['instance']}={e['code']}" for e in f["replica_exits"]) or "none"
    for e in f["replica_exits"]:
        if "log_tail" in e:
            print(
                f"{e['instance']} exited {e['code']}; last lines:\n{e['log_tail']}", file=sys.stderr
            )
    summary = [
        ["CRs / churn", f"{f['crs']} CRs, {f['churn_seconds']:.0f} s of churn"],
        ["spec writes", f"{f['patches_written']} ({f['patches_failed']} refused during faults)"],
        ["faults injected", str(f["faults_injected"])],
        ["runs", f"{f['runs']} ({f['runs_killed']} killed mid-run)"],
        ["first convergence", f"{f['initial_converge_seconds']:.1f} s"],
        ["time to converge after a fault", tables.spread(seconds)],
        [
            "final convergence",
            "-" if f["final_converge_seconds"] is None else f"{f['final_converge_seconds']:.1f} s",
        ],
        ["CRs converged", f"{f['crs_converged']}/{f['crs']}"],
        ["untruthful statuses seen", str(f["untruthful_statuses"])],
        ["overlaps", f"{f['overlaps']} (+{f['overlaps_within_polling_gap']} within 0.2 s)"],
        ["orphans", str(f["orphans"])],
        ["replica exits (code)", exits],
        ["RSS idle", f"{f['rss_baseline_mib']:.0f} → {f['rss_end_mib']:.0f} MiB"],
    ]
    checks = [
        [name, "ok" if ok else "FAILED", detail.replace("\n", "<br>")]
        for name, (ok, detail) in outcome.checks.items()
    ]
    return "\n\n".join(
        [
            tables.table(
                [
                    "#",
                    "fault",
                    "at (s)",
                    "outage (s)",
                    "converged after (s)",
                    "leading after (s)",
                    "leader",
                    "runs",
                    "note",
                ],
                fault_rows,
            ),
            tables.table(["figure", "value"], summary),
            tables.table(["check", "result", "detail"], checks),
        ]
    )
