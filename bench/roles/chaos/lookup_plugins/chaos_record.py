"""Lookup ``chaos_record``: append the start or end of this run to its CR's record file.

Part of the chaos benchmark's role (``bench/chaos/``). Lookups run inside
ansible-playbook, so the record names the process of the run itself: ``pid`` is
the ansible-playbook process (the parent of the task's worker), whose death the
benchmark watches for when a run ends without an ``end`` record (killed).

One JSON line per event in ``<directory>/<namespace>.<name>.jsonl``, written with
one ``write`` on an ``O_APPEND`` descriptor, so concurrent writers never interleave:
``{"event": "start"|"end", "t": time.time(), "pid": ..., "run": ..., "uid": ...,
"generation": ...}``. Returns the run's token (``start``) or the line written.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import secrets
import time
from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase


def _run_pid() -> int:
    """The ansible-playbook process of this run (tasks run in forked workers)."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getpid()


class LookupModule(LookupBase):  # type: ignore[misc]  # ansible-core is untyped
    def run(self, terms: list[Any], variables: Any = None, **kwargs: Any) -> list[str]:
        if len(terms) != 1 or terms[0] not in ("start", "end"):
            raise AnsibleError("chaos_record takes one term: start or end")
        event = terms[0]
        directory = str(kwargs.get("directory") or "")
        obj = kwargs.get("object") or {}
        meta = obj.get("metadata") or {}
        run = str(kwargs.get("run") or secrets.token_hex(8))
        line = {
            "event": event,
            "t": time.time(),
            "pid": _run_pid(),
            "run": run,
            "uid": meta.get("uid"),
            "generation": meta.get("generation"),
            "value": (obj.get("spec") or {}).get("value"),
        }
        if directory:
            path = os.path.join(directory, f"{meta.get('namespace')}.{meta.get('name')}.jsonl")
            data = (json.dumps(line, sort_keys=True) + "\n").encode()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        return [run if event == "start" else json.dumps(line)]
