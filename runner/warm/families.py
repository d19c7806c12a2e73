"""Warm execution's families: the launchers' memory and count, how ansible-playbook
started (warm, cold, lost) and launchers replaced, read at scrape time.

Only the runtime imports this module (the manager's wiring), never a launcher
process: launchers must not load ``prometheus_client``, so
:mod:`runner.warm`'s ``__init__`` does not import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from runner.prometheus import registry as registry_mod


class LauncherCollector:
    """Warm launchers, read at scrape time; ``recycles``: launchers replaced, by reason
    (runs, rss), and ended after ``--warm-launcher-idle-seconds`` without a run (idle)."""

    def __init__(
        self,
        *,
        memory: Callable[[], int],
        running: Callable[[], int],
        outcomes: Callable[[], dict[str, int]],
        recycles: Callable[[], dict[str, int]] = dict,
    ) -> None:
        self._memory = memory
        self._running = running
        self._outcomes = outcomes
        self._recycles = recycles

    def collect(self) -> Iterator[registry_mod.Family]:
        rss = registry_mod.GaugeFamily(
            "playbook_operator_warm_launcher_memory_bytes",
            "Resident memory of the warm launcher processes.",
        )
        rss.add_metric([], self._memory())
        yield rss
        live = registry_mod.GaugeFamily(
            "playbook_operator_warm_launchers", "Warm launcher processes running."
        )
        live.add_metric([], self._running())
        yield live
        starts = registry_mod.CounterFamily(
            "playbook_operator_ansible_starts",
            "ansible-playbook starts: warm (forked), cold (exec'd), "
            "lost (launcher died mid-run; run again cold).",
            labels=["mode"],
        )
        for mode, count in sorted(self._outcomes().items()):
            starts.add_metric([mode], count)
        yield starts
        replaced = registry_mod.CounterFamily(
            "playbook_operator_warm_launcher_recycles",
            "Warm launchers replaced between runs: after --warm-launcher-max-runs "
            "runs (runs) or above --warm-launcher-max-rss (rss); or ended after "
            "--warm-launcher-idle-seconds without a run (idle).",
            labels=["reason"],
        )
        for reason, count in sorted(self._recycles().items()):
            replaced.add_metric([reason], count)
        yield replaced
