"""Readiness and liveness of a web process, through Django's test client."""

from __future__ import annotations

from typing import Any

import pytest
from channels.layers import channel_layers
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client

from django_weft.engine.worker.housekeeping import loop_pulse
from django_weft.observe import health
from tests.observe.conftest import LIVE, METRICS, READY
from tests.processes import wait_for

pytestmark = pytest.mark.django_db


def test_ready_when_database_migrations_and_layer_answer() -> None:
    """Every check passes: 200, and the body names each one."""
    answer = Client().get(READY)
    assert answer.status_code == 200
    assert answer["Cache-Control"].startswith("max-age=0")
    assert answer.json() == {
        "status": "ok",
        "checks": {
            "database:default": {"ok": True},
            "migrations": {"ok": True},
            "channel_layer": {"ok": True},
        },
    }


def test_not_ready_while_the_channel_layer_is_unreachable(settings: Any) -> None:
    """A Redis nobody listens at: 503, the layer's check failing with the error's kind only."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }
    channel_layers.backends.clear()
    answer = Client().get(READY)
    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database:default"] == {"ok": True}
    assert body["checks"]["channel_layer"]["ok"] is False
    assert body["checks"]["channel_layer"]["detail"].startswith("unreachable (")
    assert "127.0.0.1" not in answer.content.decode()


def test_ready_without_a_channel_layer(settings: Any) -> None:
    """A project without ``CHANNEL_LAYERS`` serves no live views: nothing to wait for."""
    del settings.CHANNEL_LAYERS
    channel_layers.backends.clear()
    answer = Client().get(READY)
    assert answer.status_code == 200
    assert answer.json()["checks"]["channel_layer"] == {
        "ok": True,
        "detail": "no channel layer configured",
    }


def test_live_in_a_web_process() -> None:
    """A process without a worker loop that answers is alive, with nothing else to check."""
    answer = Client().get(LIVE)
    assert (answer.status_code, answer.json()) == (200, {"status": "ok", "checks": {}})


def test_live_while_the_worker_loop_turns() -> None:
    """A loop that turned within ``WEFT_HEALTH_LOOP_STALE`` keeps the process alive."""
    loop_pulse.beat()
    answer = Client().get(LIVE)
    assert answer.status_code == 200
    assert answer.json()["checks"] == {"worker_loop": {"ok": True}}


def test_dead_once_the_worker_loop_stops_turning(settings: Any) -> None:
    """A loop silent for longer than ``WEFT_HEALTH_LOOP_STALE``: 503, saying for how long."""
    settings.WEFT_HEALTH_LOOP_STALE = 0.01
    loop_pulse.beat()
    wait_for(lambda: (loop_pulse.since_last_beat() or 0) > 0.05, what="the pulse to go stale")
    answer = Client().get(LIVE)
    assert answer.status_code == 503
    detail = answer.json()["checks"]["worker_loop"]["detail"]
    assert detail.startswith("the worker loop has not turned for ")
    assert detail.endswith("s (limit 0.01s)")


def test_health_views_only_read() -> None:
    """A probe reads: POST is 405; HEAD is answered."""
    assert Client().post(READY).status_code == 405
    assert Client().head(LIVE).status_code == 200


def test_operators_endpoints_answer_a_post_405_not_a_csrf_page() -> None:
    """Django's CSRF check answered a POST with its HTML 403 before the views could say
    405, as docs/metrics.md documents; a browser-like client enforces the check."""
    browser = Client(enforce_csrf_checks=True)
    for url in (METRICS, READY, LIVE):
        answer = browser.post(url)
        assert answer.status_code == 405, (url, answer.content[:80])
        assert answer["Allow"] == "GET, HEAD"


# -- migrations not applied -----------------------------------------------------------------


@pytest.fixture
def graph_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each reading of the migration graph (every migration file of every app), by the
    alias it was read for; the health module starts with nothing remembered."""
    monkeypatch.setattr(health, "_migrated", set())
    monkeypatch.setattr(health, "_unmigrated", {}, raising=False)
    reads: list[str] = []
    build_graph = MigrationLoader.build_graph

    def counted(loader: MigrationLoader) -> None:
        reads.append(loader.connection.alias if loader.connection is not None else "")
        build_graph(loader)

    monkeypatch.setattr(MigrationLoader, "build_graph", counted)
    return reads


def test_unready_for_migrations_reads_the_graph_once_per_change_of_the_applied_ones(
    graph_reads: list[str],
) -> None:
    """While a migration is unapplied, probes read the migration graph again only when
    the applied migrations change: anonymous probes are no lever on the CPU."""
    latest = MigrationRecorder.Migration.objects.filter(app="django_weft").latest("id")
    latest.delete()
    for _ in range(5):
        answer = Client().get(READY)
        assert answer.status_code == 503
        assert answer.json()["checks"]["migrations"] == {
            "ok": False,
            "detail": "1 migration(s) not applied; run manage.py migrate",
        }
    assert graph_reads == ["default"]

    MigrationRecorder(connection).record_applied(latest.app, latest.name)
    for _ in range(5):
        answer = Client().get(READY)
        assert answer.status_code == 200
    assert graph_reads == ["default", "default"], "read once more, then never"


def test_unready_for_migrations_sees_another_change_of_the_applied_ones(
    graph_reads: list[str],
) -> None:
    """Unapplying one more (the row count changes) is seen at the next probe."""
    applied = MigrationRecorder.Migration.objects.filter(app="django_weft").order_by("-id")
    first, second = applied[0], applied[1]
    first.delete()
    assert "1 migration(s)" in Client().get(READY).json()["checks"]["migrations"]["detail"]
    second.delete()
    assert "2 migration(s)" in Client().get(READY).json()["checks"]["migrations"]["detail"]
    assert graph_reads == ["default", "default"]
