"""Local TCP ports for the runtimes' listeners (metrics, probes, webhooks) on 127.0.0.1.

``bench/runtimes.py`` starts each runtime on free ports and checks that ansible-operator's
hard-coded ones are not taken; ``bench/webhook.py`` serves its webhooks on one.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
