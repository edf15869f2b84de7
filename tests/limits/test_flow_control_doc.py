"""docs/flow-control.md's snippets, run as pasted: a job whose limits in code become rows,
each tenant's runs two at a time, all of them ten a second, on the driven clock; a
debounced and a throttled job; a fair share's row, its tenants taking turns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from django_weft.exceptions import Throttled
from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit, Run, RunStatus
from django_weft.operations import start
from django_weft.testing import Rehearsal
from tests.test_docs import doc_block

pytestmark = pytest.mark.django_db(transaction=True)


def snippet(containing: str, *jobs: str) -> Iterator[dict[str, Any]]:
    """Run the page's snippet that contains ``containing``; unregister its ``jobs`` after."""
    namespace: dict[str, Any] = {}
    code = doc_block("flow-control.md", containing)
    exec(compile(code, "docs/flow-control.md", "exec"), namespace)
    yield namespace
    for name in jobs:
        registry.unregister(name)


@pytest.fixture
def page() -> Iterator[dict[str, Any]]:
    yield from snippet('@job(\n    "partners.sync"', "partners.sync")


def test_flow_control_doc_sync_two_a_tenant_ten_a_second(
    page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    sync = registry.get("partners.sync")
    runs = [start(sync, {"tenant": tenant, "page": n}) for tenant in "ab" for n in range(8)]
    rehearsal.advance(timedelta(0))
    rows = dict(FlowLimit.objects.values_list("name", "concurrency"))
    assert rows["partners.sync"] == 2
    assert rows["partner-api"] is None
    done = Run.objects.filter(pk__in=[run.pk for run in runs], status=RunStatus.DONE)
    assert done.count() == 10, "ten begun in the first second"
    assert len(page["CALLS"]) == 10
    rehearsal.advance(timedelta(seconds=1))
    assert done.count() == 16


@pytest.fixture
def pacing() -> Iterator[dict[str, Any]]:
    yield from snippet('"partners.reindex"', "partners.reindex", "partners.ping")


def test_flow_control_doc_reindex_debounced_and_ping_throttled(
    pacing: dict[str, Any], rehearsal: Rehearsal
) -> None:
    reindex, ping = registry.get("partners.reindex"), registry.get("partners.ping")
    for changes in (1, 2, 3):
        start(reindex, {"account": "acme", "changes": changes})
    rehearsal.advance(timedelta(seconds=30))
    (run,) = Run.objects.filter(job="partners.reindex")
    assert (run.status, run.result) == (RunStatus.DONE, "acme: 3 changes")
    start(ping, {"account": "acme"})
    with pytest.raises(Throttled, match="the next may start at"):
        start(ping, {"account": "acme"})


@pytest.fixture
def imports() -> Iterator[dict[str, Any]]:
    yield from snippet('"imports.load"', "imports.load")


def test_flow_control_doc_fair_share_takes_turns_between_tenants(
    imports: dict[str, Any],
) -> None:
    row = json.loads(doc_block("flow-control.md", '"fair_share"', language="json"))
    FlowLimit.objects.create(updated_at=timezone.now(), **row)
    load = registry.get("imports.load")
    for tenant, count in (("globex", 6), ("initech", 2), ("acme", 4)):
        for n in range(count):
            start(load, {"tenant": tenant, "file": f"{tenant}-{n}.csv"})
    with Rehearsal(concurrency=1, queues=["imports"]) as rehearsal:
        rehearsal.advance(timedelta(0))
    assert imports["LOADED"] == [
        *("globex", "initech", "acme", "acme"),
        *("globex", "initech", "acme", "acme"),
        *("globex",) * 4,
    ]
