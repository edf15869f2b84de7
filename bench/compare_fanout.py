"""The 1,000-socket fan-out of ``compare.py``: commit -> the last guest socket's frame.

A real ASGI server (``uvicorn`` serving ``compare_asgi``, one process) with
channels-redis; ``options["sockets"]`` guest clients (the ``websockets`` package, one
asyncio loop in this process) connect in batches of :data:`CONNECT_BATCH` and read
their snapshot. Then per sample a thread starts one ``bench.noop`` run with
``start()`` inside ``transaction.atomic()`` whose first ``on_commit`` callback notes
``time.perf_counter()`` (the commit); this process's publishing thread sends the run to
the guests' group, and each client notes when a frame naming the run arrives (a string
search, no JSON parsing, to keep the clients' own cost small). A sample ends when every
socket has it; the first :data:`WARMUP` samples are not kept. No worker runs, so each
run is published once.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path
from typing import Any

import compare_common
import compare_redis
import websockets
from django.db import connections, transaction

from bench.jobs import noop
from django_weft.operations import start

#: Sockets connecting at once: each takes a channel-layer connection for its group_add.
CONNECT_BATCH = 50
WARMUP = 3
#: How long the server may take to come up, a batch to connect, a sample to arrive.
TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "compare_asgi:application",
        "--app-dir",
        str(Path(__file__).resolve().parent),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ws",
        "websockets",
        "--log-level",
        "warning",
    ]


def _start_one() -> tuple[str, float]:
    """Start a run on this thread: its id and the moment its transaction committed."""
    stamps: list[float] = []
    try:
        with transaction.atomic():
            transaction.on_commit(lambda: stamps.append(time.perf_counter()))
            run = start(noop)
        return str(run.pk), stamps[0]
    finally:
        connections.close_all()


class Watchers:
    """The clients, and when each one saw the run being waited for.

    Frames are kept from the moment a sample begins (:meth:`expect` with no id), so a
    frame that arrives before the run's id is known is still counted.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.run_id = ""
        self.arrivals: list[tuple[int, float, str]] = []
        self.seen: dict[int, float] = {}
        self.all_seen = asyncio.Event()

    def expect(self, run_id: str) -> None:
        self.run_id, self.seen, self.all_seen = run_id, {}, asyncio.Event()
        if not run_id:
            self.arrivals = []
        for index, arrived, text in self.arrivals:
            self._note(index, arrived, text)

    def _note(self, index: int, arrived: float, text: str) -> None:
        if self.run_id and self.run_id in text and index not in self.seen:
            self.seen[index] = arrived
            if len(self.seen) == self.count:
                self.all_seen.set()

    async def watch(self, index: int, client: Any) -> None:
        async for text in client:
            arrived = time.perf_counter()
            if self.run_id:
                self._note(index, arrived, text)
            else:
                self.arrivals.append((index, arrived, text))


async def _connect(url: str) -> Any:
    client = await websockets.connect(url, max_size=None, open_timeout=TIMEOUT)
    snapshot = await asyncio.wait_for(client.recv(), TIMEOUT)
    if '"snapshot"' not in snapshot:
        raise RuntimeError(f"expected a snapshot first, got {snapshot[:200]}")
    return client


async def _wait_for_server(url: str, server: compare_common.Workers) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        server.check_running()
        try:
            client = await _connect(url)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the ASGI server at {url} did not come up") from None
            await asyncio.sleep(0.2)
            continue
        await client.close()
        return


async def _measure(
    url: str, options: dict[str, Any], server: compare_common.Workers
) -> dict[str, Any]:
    await _wait_for_server(url, server)
    begin = time.perf_counter()
    clients: list[Any] = []
    for first in range(0, options["sockets"], CONNECT_BATCH):
        batch = range(first, min(first + CONNECT_BATCH, options["sockets"]))
        clients += await asyncio.gather(*(_connect(url) for _ in batch))
    connected = time.perf_counter() - begin
    watchers = Watchers(len(clients))
    tasks = [asyncio.create_task(watchers.watch(i, c)) for i, c in enumerate(clients)]
    loop = asyncio.get_running_loop()
    first_ms, last_ms = [], []
    try:
        for sample in range(WARMUP + options["samples"]):
            server.check_running()
            watchers.expect("")
            run_id, committed = await loop.run_in_executor(None, _start_one)
            watchers.expect(run_id)
            await asyncio.wait_for(watchers.all_seen.wait(), TIMEOUT)
            if sample >= WARMUP:
                first_ms.append((min(watchers.seen.values()) - committed) * 1e3)
                last_ms.append((max(watchers.seen.values()) - committed) * 1e3)
            await asyncio.sleep(0.2)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)
    return {
        "sockets": len(clients),
        "connect_s": connected,
        "first_ms": first_ms,
        "last_ms": last_ms,
    }


def fanout(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """Commit -> first and last of ``options["sockets"]`` guest sockets, per sample (ms)."""
    compare_common.truncate_app("django_weft")
    port = _free_port()
    try:
        with compare_common.Workers(_server(port), 1, logs, options["label"]) as server:
            return asyncio.run(_measure(f"ws://127.0.0.1:{port}/ws/weft/runs/", options, server))
    finally:
        compare_redis.clean()
