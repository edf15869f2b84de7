"""Channel-layer outages: logged once, calls tried again, cancellations kept.

The sockets and publishing through a real Redis outage are in tests/faults/.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from django_weft.live.layer_health import LAYER_TRIES, LayerOutage, layer_call


def test_layer_outage_logs_its_start_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    """Failures from many threads make one warning; the first success after makes one line."""
    caplog.set_level(logging.DEBUG, logger="django_weft.live")
    outage = LayerOutage("publishing")
    threads = [
        threading.Thread(target=outage.failed, args=(ConnectionError(f"refused {n}"),))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outage.ongoing
    outage.succeeded()
    outage.succeeded()

    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    assert len(said) == 2, said
    assert said[0][0] == "WARNING"
    assert said[0][1].startswith("publishing: the channel layer failed (ConnectionError: refused")
    assert said[1][0] == "INFO"
    assert said[1][1].startswith("publishing: the channel layer works again after")
    assert said[1][1].endswith("(8 failed calls)")
    assert not outage.ongoing


def test_layer_outage_starts_afresh_after_it_ended(caplog: pytest.LogCaptureFixture) -> None:
    """A second outage is told again."""
    caplog.set_level(logging.INFO, logger="django_weft.live")
    outage = LayerOutage("live sockets")
    for _ in range(2):
        outage.failed(OSError("gone"))
        outage.succeeded()
    levels = [r.levelname for r in caplog.records]
    assert levels == ["WARNING", "INFO", "WARNING", "INFO"]


def failing(times: int, calls: list[int]):  # type: ignore[no-untyped-def]
    """A layer call that raises ``times`` times, then works."""

    async def call(*args: object) -> None:
        calls.append(len(calls))
        if len(calls) <= times:
            raise ConnectionError("Connection closed by server.")

    return call


def test_layer_call_tries_again_at_once() -> None:
    """A call that fails twice works at the third try; one that always fails gives its error."""
    calls: list[int] = []
    assert asyncio.run(layer_call(failing(LAYER_TRIES - 1, calls), "group", "channel")) is None
    assert len(calls) == LAYER_TRIES

    calls.clear()
    error = asyncio.run(layer_call(failing(LAYER_TRIES, calls)))
    assert isinstance(error, ConnectionError)
    assert len(calls) == LAYER_TRIES


def test_layer_call_keeps_a_cancellation_that_the_client_turned_into_a_timeout() -> None:
    """redis-py reports a read cancelled under it as a TimeoutError: the task ends cancelled."""

    async def read_cancelled_as_timeout() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise TimeoutError("Timeout reading from 127.0.0.1:6379") from None

    async def main() -> None:
        task = asyncio.create_task(layer_call(read_cancelled_as_timeout))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
