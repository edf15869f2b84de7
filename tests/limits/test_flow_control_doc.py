"""docs/flow-control.md's snippet, run as pasted: a job whose limits in code become rows,
each tenant's runs two at a time, all of them ten a second, on the driven clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from django_weft.exceptions import Throttled
from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit, Run, RunStatus
from django_weft.operations import start
from django_weft.testing import Rehearsal
from tests.test_docs import doc_block

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def page() -> Iterator[dict[str, Any]]:
    namespace: dict[str, Any] = {}
    code = doc_block("flow-control.md", '@job(\n    "partners.sync"')
    exec(compile(code, "docs/flow-control.md", "exec"), namespace)
    yield namespace
    registry.unregister("partners.sync")


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
    namespace: dict[str, Any] = {}
    code = doc_block("flow-control.md", '"partners.reindex"')
    exec(compile(code, "docs/flow-control.md", "exec"), namespace)
    yield namespace
    registry.unregister("partners.reindex")
    registry.unregister("partners.ping")


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
