"""Warm execution: ``ansible-playbook`` and Ansible modules forked from processes
that imported their libraries once, instead of started cold for every run and task.

Where it sits: the Ansible stage (watch → queue → reconcile → **ansible** →
status) asks :class:`Launchers` for the command that starts ``ansible-playbook``
and for the interpreter that starts modules; everything else about a run is
unchanged. Modules:

- :mod:`runner.warm.pool` — the runtime's side: starts, restarts and stops launchers;
- :mod:`runner.warm.spawn` — starting one launcher process, and the lifeline;
- :mod:`runner.warm.succession` — the pool's side of replacing a launcher between runs,
  and of ending every launcher once the pool has been idle;
- :mod:`runner.warm.zygote` — a launcher process: imports once, forks a child per start;
- :mod:`runner.warm.sameness` — whether a request's import-time inputs are a launcher's;
- :mod:`runner.warm.child` — what a forked child becomes, and running its program;
- :mod:`runner.warm.recycle` — when a launcher is replaced (runs, RSS) and how the
  replacement takes over between runs;
- :mod:`runner.warm.wire` — the protocol, and the tiny client placed in front of
  ``ansible-playbook`` and used as the module interpreter;
- :mod:`runner.warm.reuse` — what a run takes over from earlier runs (module
  payloads, compiled module code, parsed metadata), only while its inputs are
  unchanged;
- :mod:`runner.warm.arrivals` — ``ansible-playbook`` waits for its workers' results
  instead of polling for them;
- :mod:`runner.warm.gates` — what each of those relies on in ansible-core, checked per
  launcher: a mechanism without its ground is off, logged once with why.

Import contract: this package imports nothing else of the runtime (checked by
import-linter); :mod:`~runner.warm.wire` imports only the standard library.

Public API (``__all__``, what the rest of the runtime imports from here):
:class:`Launchers` and the launch modes ``COLD``, ``LOST`` and ``WARM``.
"""

from runner.warm.pool import COLD, LOST, WARM, Launchers

__all__ = ["COLD", "LOST", "WARM", "Launchers"]
