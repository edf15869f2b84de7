"""Calls released at once from several threads: what racing starts look like."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections


def concurrently(count: int, call: Callable[[], Any]) -> list[Any]:
    """Call ``call`` from ``count`` threads released at the same moment; each result or
    the exception it raised, in thread order."""
    return together(*[call] * count)


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Each of ``calls`` from a thread of its own, all released at the same moment; each
    result or the exception it raised, in the order of ``calls``."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = calls[index]()
        except Exception as error:
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results
