"""A bounded TCP relay, run as its own process: ``python -m devcluster.relay
--listen HOST:PORT --target HOST:PORT``.

The real node's pods reach the loopback-only apiserver through it (see
:mod:`devcluster.apirelay`, which starts it on the bridge's address). It copies bytes
both ways and never reads them (TLS passes through), holds at most
:data:`MAX_CONNECTIONS` at once (past that a new connection is closed at once), and
stops on SIGTERM. Standard library only, and imported by nothing, so ``-m`` runs it
without the package's other modules.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

MAX_CONNECTIONS = 256
CONNECT_TIMEOUT = 10.0


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # half-close: the other direction may still be talking
    except (ConnectionError, OSError):
        writer.close()


class _Relay:
    def __init__(self, *, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._open = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            writer.close()
            return
        self._open += 1
        writers = [writer]
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self._target), timeout=CONNECT_TIMEOUT
            )
            writers.append(upstream_writer)
            await asyncio.gather(_pump(reader, upstream_writer), _pump(upstream_reader, writer))
        except (OSError, TimeoutError):
            pass
        finally:
            self._open -= 1
            for each in writers:
                each.close()


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host, int(port)


async def _serve(*, listen: tuple[str, int], target: tuple[str, int]) -> None:
    relay = _Relay(target_host=target[0], target_port=target[1])
    server = await asyncio.start_server(relay.handle, host=listen[0], port=listen[1])
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    print(f"relaying {listen[0]}:{listen[1]} to {target[0]}:{target[1]}", flush=True)
    async with server:
        await stopping.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.apirelay")
    parser.add_argument("--listen", required=True, type=_address, help="HOST:PORT")
    parser.add_argument("--target", required=True, type=_address, help="HOST:PORT")
    args = parser.parse_args(argv)
    asyncio.run(_serve(listen=args.listen, target=args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
