"""A warm pool: children started and set up ahead of the calls that will use them.

Each child still serves one call and is killed after it; the pool only moves the
start-up (interpreter, imports, layers) out of the call's way. A child set up under
other settings than the call's is killed, not used. A thread keeps the pool full.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django_weft.sandbox.config import RoomConfig
from django_weft.sandbox.errors import SandboxError
from django_weft.sandbox.process import Child

logger = logging.getLogger("django_weft.sandbox")


class Pool:
    """Keeps ``size`` set-up children of the current config waiting."""

    def __init__(self, spawn: Callable[[RoomConfig], Child], size: int) -> None:
        self.spawn = spawn
        self.size = size
        self._ready: list[Child] = []
        self._config: RoomConfig | None = None
        self._lock = threading.Condition()
        self._closed = False
        self._filler: threading.Thread | None = None

    def take(self, config: RoomConfig) -> Child | None:
        """A waiting child set up for ``config``, or None (the caller starts one itself)."""
        with self._lock:
            if config != self._config:
                self._discard()
                self._config = config
            child = None
            while self._ready and child is None:
                candidate = self._ready.pop(0)
                if candidate.alive:
                    child = candidate
                else:
                    candidate.kill()
            self._start_filler()
            self._lock.notify_all()
            return child

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._discard()
            self._lock.notify_all()
        if self._filler is not None:
            self._filler.join(5)

    def _discard(self) -> None:
        for child in self._ready:
            child.kill()
        self._ready.clear()

    def _start_filler(self) -> None:
        if self._filler is None:
            self._filler = threading.Thread(
                target=self._fill, name="weft-sandbox-pool", daemon=True
            )
            self._filler.start()

    def _fill(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._closed or len(self._ready) < self.size)
                if self._closed:
                    return
                config = self._config
            assert config is not None
            try:
                child = self.spawn(config)
                child.wait_ready()
            except (OSError, SandboxError) as error:
                logger.warning("the sandbox pool could not start a child: %s", error)
                with self._lock:
                    self._lock.wait(1.0)  # do not spin on a host that cannot start one
                continue
            with self._lock:
                if self._closed or config != self._config:
                    child.kill()
                else:
                    self._ready.append(child)
