"""The Redis side of ``compare.py``: one database number and one key prefix per run.

Celery's broker (``celery``, ``celery_results``) and django-weft's channel layer
(``weft_live``) share Redis at ``WEFT_COMPARE_REDIS_URL`` (default
``redis://127.0.0.1:6379/11``, a database number nothing else here uses). Every key a
run makes starts with ``WEFT_COMPARE_REDIS_PREFIX`` (``compare.py`` sets it to
``weft-compare-<pid>``), and :func:`clean` deletes them at the end of each measurement
and of the run, so a run leaves nothing behind and two runs never read each other's.
"""

from __future__ import annotations

import os
from typing import Any

import redis

URL = os.environ.get("WEFT_COMPARE_REDIS_URL", "redis://127.0.0.1:6379/11")
#: Connections channels-redis may open at once; the fan-out connects sockets in batches
#: well under it, so that redis-py's pool never refuses one (``MaxConnectionsError``).
LAYER_MAX_CONNECTIONS = 500


def prefix(what: str) -> str:
    """The key prefix of this run's ``what`` (``broker``, ``layer``, ``counts``)."""
    return f"{os.environ.get('WEFT_COMPARE_REDIS_PREFIX', 'weft-compare')}-{what}"


#: channels-redis blocks up to 5 s in ``BZPOPMIN`` waiting for a socket's messages, as
#: long as redis-py 8's default read timeout: the read would time out just as the pop
#: returns empty (``Timeout reading from socket``), so the layer's reads wait longer.
LAYER_READ_TIMEOUT = 30


def layer_host() -> dict[str, Any]:
    """channels-redis's host entry: this database, with room for a burst of sockets."""
    return {
        "address": URL,
        "max_connections": LAYER_MAX_CONNECTIONS,
        "socket_timeout": LAYER_READ_TIMEOUT,
    }


def client() -> redis.Redis:
    """A connection for plain and blocking commands: no read timeout of its own (redis-py
    8 has one by default, which a ``BLPOP`` waiting for a long drain outlasts)."""
    return redis.Redis.from_url(URL, socket_timeout=None, socket_connect_timeout=10)


def clean() -> int:
    """Delete every key of this run (all its prefixes); how many there were."""
    base = os.environ.get("WEFT_COMPARE_REDIS_PREFIX", "weft-compare")
    with client() as connection:
        keys = list(connection.scan_iter(match=f"{base}-*", count=1000))
        # Celery's key prefix covers its lists, but kombu keeps its bindings unprefixed
        # under the queue names it was given: they carry the prefix too (see compare_celery).
        for start in range(0, len(keys), 1000):
            connection.delete(*keys[start : start + 1000])
    return len(keys)


def check() -> str:
    """Redis's version, or SystemExit naming the URL when it cannot be reached."""
    try:
        with client() as connection:
            return str(connection.info("server")["redis_version"])
    except redis.RedisError as error:
        raise SystemExit(
            f"compare.py: cannot reach Redis at {URL}: {error}\n"
            "Start Redis there, or set WEFT_COMPARE_REDIS_URL."
        ) from None
