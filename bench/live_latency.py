"""Live latency: from a run's start committing to its ``run`` frame reaching the sockets.

One process, one asyncio loop. N guest sockets (a user without permissions) are
connected with channels' ``WebsocketCommunicator`` to ``RunsConsumer`` and read their
snapshots; each has a task that notes ``time.perf_counter()`` as soon as a frame comes
out of it. Then, per sample, a publisher thread calls ``runs.start(bench.noop, {})``
inside an outer ``transaction.atomic()`` whose first ``on_commit`` callback notes
``time.perf_counter()``: that is the commit. The callbacks after it are weft's
``publisher._publish_run``: it loads the run, computes the guest view once and hands the
``group_send`` to the loop. The sample ends when all N sockets have a frame; the
frames are checked afterwards to be ``run`` frames for that run id.

- *first*: commit to the first socket receiving the run frame;
- *last*: commit to the last of the N sockets receiving it (the fan-out);
- *views*: commit to weft handing the send to the loop (``publisher._send`` is wrapped to
  note the time): the run loaded and its two views computed, on the publisher thread.

Layers: channels' ``InMemoryChannelLayer`` (capacity raised from 100 to 10,000
messages per channel) and ``channels_redis.core.RedisChannelLayer`` (default capacity,
a unique prefix, flushed at the end). The first samples of each configuration are
warm-up and not counted. Runs are deleted between configurations, so snapshots are
empty; the database (SQLite by default) is not what is measured.

    .venv/bin/python bench/live_latency.py [--samples 200] [--samples-many 50]
        [--sockets 1,1000] [--layers memory,redis] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import _setup

#: Per-channel queue size of the in-memory layer (its default of 100 is noted in the output).
MEMORY_CAPACITY = 10_000
#: Sockets connected at once; a batch is gathered before the next one starts. The
#: redis-py pool behind channels-redis holds 100 connections and raises beyond them.
CONNECT_BATCH = 50
WARMUP = 5
#: Seconds a sample may take before the benchmark gives up.
SAMPLE_TIMEOUT = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--samples", type=int, default=200, help="samples with 1 socket")
    parser.add_argument(
        "--samples-many", type=int, default=50, help="samples with more than 1 socket"
    )
    parser.add_argument("--sockets", default="1,1000", help="comma-separated socket counts")
    parser.add_argument("--layers", default="memory,redis", help="memory, redis or both")
    parser.add_argument(
        "--redis-url", default=os.environ.get("WEFT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
    )


@dataclass
class Arrivals:
    """The frames of the current sample, in the order the sockets got them."""

    expected: int = 0
    frames: list[tuple[float, int, str]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def reset(self, expected: int) -> None:
        self.expected = expected
        self.frames = []
        self.done = asyncio.Event()


@dataclass
class Result:
    layer: str
    sockets: int
    samples: int
    connect: float
    first: list[float]
    last: list[float]
    views: list[float]


def layer_config(layer: str, redis_url: str) -> dict[str, Any]:
    if layer == "memory":
        return {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": MEMORY_CAPACITY},
        }
    return {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [redis_url],
            "prefix": f"weft-bench-live-{os.getpid()}-{uuid.uuid4().hex[:8]}",
        },
    }


async def listen(index: int, communicator: Any, arrivals: Arrivals) -> None:
    """Note when each frame comes out of the socket; nothing else, to stay out of the way."""
    while True:
        message = await communicator.receive_output(timeout=None)
        arrivals.frames.append((time.perf_counter(), index, message.get("text") or ""))
        if len(arrivals.frames) >= arrivals.expected:
            arrivals.done.set()


async def connect(user: Any) -> Any:
    from channels.testing import WebsocketCommunicator

    from django_weft.sockets.consumers import RunsConsumer

    communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/")
    communicator.scope["user"] = user
    connected, code = await communicator.connect(timeout=120)
    if not connected:
        raise SystemExit(f"socket refused with code {code}")
    snapshot = await communicator.receive_json_from(timeout=120)
    if snapshot["type"] != "snapshot" or snapshot["operator"] or snapshot["runs"]:
        raise SystemExit(f"expected an empty guest snapshot, got {snapshot}")
    return communicator


#: When ``publisher._send`` was called on the publisher thread (see :func:`note_handoffs`).
HANDOFFS: list[float] = []


def note_handoffs() -> None:
    """Wrap ``publisher._send`` to note when the views are ready and handed to the loop."""
    from django_weft.live import publisher

    send = publisher._send

    def noted(messages: Any) -> None:
        HANDOFFS.append(time.perf_counter())
        send(messages)

    publisher._send = noted


def start_one(job: Any) -> tuple[str, float, float]:
    """Start a run on this (publisher) thread: its id, the commit and the handoff."""
    from django.db import transaction

    from django_weft.operations import start

    stamps: list[float] = []
    HANDOFFS.clear()
    with transaction.atomic():
        # Registered first, so it runs first after the commit, before weft's publish.
        transaction.on_commit(lambda: stamps.append(time.perf_counter()))
        run = start(job, {})
    assert len(HANDOFFS) == 1, HANDOFFS
    return str(run.pk), stamps[0], HANDOFFS[0]


async def measure(
    layer: str, sockets: int, samples: int, options: argparse.Namespace, user: Any, job: Any
) -> Result:
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer
    from django.db import connections
    from django.test import override_settings

    from django_weft.models import Run

    await sync_to_async(Run.objects.all().delete)()
    loop = asyncio.get_running_loop()
    publisher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="weft-bench-publisher")
    with override_settings(CHANNEL_LAYERS={"default": layer_config(layer, options.redis_url)}):
        channel_layer = get_channel_layer()
        arrivals = Arrivals()
        communicators: list[Any] = []
        began = time.perf_counter()
        for batch in range(0, sockets, CONNECT_BATCH):
            size = min(CONNECT_BATCH, sockets - batch)
            communicators += await asyncio.gather(*(connect(user) for _ in range(size)))
        connected = time.perf_counter() - began
        listeners = [
            asyncio.create_task(listen(index, c, arrivals)) for index, c in enumerate(communicators)
        ]
        first: list[float] = []
        last: list[float] = []
        views: list[float] = []
        try:
            gc.collect()
            for sample in range(-WARMUP, samples):
                arrivals.reset(sockets)
                run_id, committed, handed = await loop.run_in_executor(publisher, start_one, job)
                try:
                    await asyncio.wait_for(arrivals.done.wait(), SAMPLE_TIMEOUT)
                except TimeoutError:
                    raise SystemExit(
                        f"{layer}, {sockets} sockets: {len(arrivals.frames)} of {sockets} "
                        f"frames after {SAMPLE_TIMEOUT}s"
                    ) from None
                frames = arrivals.frames
                if len({index for _, index, _ in frames}) != sockets:
                    raise SystemExit(f"{len(frames)} frames did not come one from each socket")
                for _, _, text in frames:
                    frame = json.loads(text)
                    run = frame.get("run") or {}
                    # The guest view leaves out the full view's fields (idempotency_key...).
                    if frame["type"] != "run" or run["id"] != run_id or "idempotency_key" in run:
                        raise SystemExit(f"expected the guest view of run {run_id}, got {frame}")
                if sample >= 0:
                    first.append(frames[0][0] - committed)
                    last.append(frames[-1][0] - committed)
                    views.append(handed - committed)
                await asyncio.sleep(0.01)
        finally:
            for listener in listeners:
                listener.cancel()
            await asyncio.gather(*listeners, return_exceptions=True)
            for batch in range(0, len(communicators), CONNECT_BATCH):
                await asyncio.gather(
                    *(
                        c.disconnect(timeout=30)
                        for c in communicators[batch : batch + CONNECT_BATCH]
                    )
                )
            if layer == "redis":
                await channel_layer.flush()
                await channel_layer.close_pools()
            await loop.run_in_executor(publisher, connections.close_all)
            publisher.shutdown()
    return Result(layer, sockets, samples, connected, first, last, views)


def redis_server_version(url: str) -> str:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return str(client.info("server")["redis_version"])
    finally:
        client.close()


def print_versions(options: argparse.Namespace, layers: list[str]) -> None:
    from channels.layers import InMemoryChannelLayer

    line = f"channels: channels {version('channels')}, asgiref {version('asgiref')}"
    if "redis" in layers:
        line += (
            f", channels-redis {version('channels-redis')}, redis-py {version('redis')}, "
            f"Redis server {redis_server_version(options.redis_url)} at {options.redis_url}"
        )
    print(line)
    default_capacity = InMemoryChannelLayer().capacity
    print(
        f"layers:   in-memory capacity {MEMORY_CAPACITY:,} per channel (default "
        f"{default_capacity}); channels-redis capacity default (100 per Redis key: one "
        "message per change for all sockets of a process)"
    )


def ms(values: list[float], fraction: float) -> str:
    return f"{_setup.percentile(values, fraction) * 1e3:>7.1f}"


async def run_all(options: argparse.Namespace, layers: list[str], counts: list[int]) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model

    from django_weft.jobs.registry import registry

    user = await sync_to_async(get_user_model().objects.create_user)("bench-guest")
    user = await sync_to_async(get_user_model().objects.get)(pk=user.pk)
    job = registry.get("bench.noop")
    print(
        f"{len(counts)} socket counts x {len(layers)} layers; guest sockets of a user "
        f"without permissions; {WARMUP} warm-up samples each; connect {CONNECT_BATCH} at a time"
    )
    print()
    header = (
        f"{'layer':<7} {'sockets':>7} {'samples':>7} {'connect s':>9} | {'first p50':>9} "
        f"{'p99':>7} | {'last p50':>8} {'p99':>7} {'max':>7} | {'views p50':>9} {'p99':>7}"
    )
    print(header)
    print("-" * len(header))
    for layer in layers:
        for sockets in counts:
            samples = options.samples if sockets == 1 else options.samples_many
            result = await measure(layer, sockets, samples, options, user, job)
            print(
                f"{result.layer:<7} {result.sockets:>7,} {result.samples:>7} "
                f"{result.connect:>9.2f} | {ms(result.first, 0.5):>9} {ms(result.first, 0.99)} "
                f"| {ms(result.last, 0.5):>8} {ms(result.last, 0.99)} "
                f"{max(result.last) * 1e3:>7.1f} | {ms(result.views, 0.5):>9} "
                f"{ms(result.views, 0.99)}",
                flush=True,
            )
    print()
    print(
        "ms from the commit; first/last: the first/last socket to receive the run frame; "
        "views: weft loading the run and computing its views before handing the send to the loop"
    )


def main() -> None:
    options = _setup.setup(__doc__.splitlines()[0], add_arguments)
    layers = [name.strip() for name in options.layers.split(",") if name.strip()]
    if not set(layers) <= {"memory", "redis"}:
        raise SystemExit(f"--layers takes memory and/or redis, not {options.layers!r}")
    counts = [int(count) for count in options.sockets.split(",")]
    print_versions(options, layers)
    note_handoffs()
    began = time.perf_counter()
    asyncio.run(run_all(options, layers, counts))
    print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
