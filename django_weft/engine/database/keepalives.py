"""TCP keepalives for the worker's long-lived sessions: the liveness lock and LISTEN.

Both sessions sit idle for long stretches, where nothing would notice that the other end
vanished (a host that died, a network that was cut): the server would keep a dead
worker's lock, and a worker would wait for notifications on a connection nobody serves.
So both ends get keepalives sized to ``WEFT_LOST_AFTER``: the server's as session
settings, libpq's as connection parameters.
"""

from __future__ import annotations

import math

#: How many keepalive probes a silent peer is sent before its session is dropped.
KEEPALIVE_PROBES = 4


def keepalive_settings(lost_after: float) -> list[tuple[str, str]]:
    """Server-side TCP keepalives that drop a vanished client within ``lost_after`` s.

    Idle for half the window, then :data:`KEEPALIVE_PROBES` probes an eighth of it apart
    (whole seconds, at least one), and data left unacknowledged for the window: the
    server notices a host that died or a network that was cut about ``lost_after``
    seconds after the last packet. A process that exits or is killed closes its socket,
    and its session ends at once.
    """
    idle = max(1, math.ceil(lost_after / 2))
    interval = max(1, math.ceil(lost_after / (2 * KEEPALIVE_PROBES)))
    return [
        ("tcp_keepalives_idle", str(idle)),
        ("tcp_keepalives_interval", str(interval)),
        ("tcp_keepalives_count", str(KEEPALIVE_PROBES)),
        ("tcp_user_timeout", str(math.ceil(lost_after * 1000))),
    ]


def client_keepalives(settings: list[tuple[str, str]]) -> dict[str, object]:
    """The same, as libpq's connection parameters (``keepalives_idle``...,
    ``tcp_user_timeout``)."""
    return {
        "keepalives": 1,
        **{
            name.removeprefix("tcp_") if name.startswith("tcp_keepalives") else name: value
            for name, value in settings
        },
    }


def keepalives(lost_after: float) -> tuple[dict[str, object], list[tuple[str, str]]]:
    """Both ends' keepalives for ``lost_after``: the connection parameters to connect
    with, and the settings to give the session once connected
    (:func:`~django_weft.jobs.connections.limit_session`)."""
    server = keepalive_settings(lost_after)
    return client_keepalives(server), server
