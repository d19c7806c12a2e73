"""``bench.initial_list`` on the real cluster: a tiny run reads its objects in every mode.

Integration test (the ``cluster`` and ``namespace`` fixtures): 50 ConfigMaps, each mode
once, in the test's own namespace; the figures name all three modes, each informer held
the 50 objects and the namespace's ``kube-root-ca.crt``, and only ``stream`` streamed.
"""

from __future__ import annotations

import devcluster
from bench import initial_list

OBJECTS = 50


def test_a_tiny_run_reports_every_mode(cluster: devcluster.Cluster, namespace: str) -> None:
    figures = initial_list.measure(
        cluster=cluster, objects=OBJECTS, namespace=namespace, repeats=1, keep=True
    )
    runs = figures["runs"]
    modes = [mode.value for mode in initial_list.Mode]
    assert sorted(runs) == sorted(modes), f"expected runs of {modes}, saw {sorted(runs)}"
    for mode, (run,) in runs.items():
        assert run["objects"] == OBJECTS + 1, (
            f"expected the {mode} informer to hold {OBJECTS} + kube-root-ca.crt, held "
            f"{run['objects']}"
        )
        assert run["streamed"] == (mode == "stream"), f"{mode}: streamed={run['streamed']}"
        assert run["peak_mib"] > 0 and run["synced_s"] >= 0, f"{mode}: {run}"
    shown = initial_list.table(figures)
    assert all(f"| {mode} |" in shown for mode in modes), f"expected every mode in {shown}"
