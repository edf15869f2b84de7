"""The shell scenario, driven from Python as its owner would: start, watch, refuse, abort.

A shell job whose state document carries its output, one run at a time; a resent
request returns the same run; a finish records an entry and chains a notify job; an
aborted run stops at its next sleep and keeps the lines it had written.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from django_weft.engine.worker.loop import Worker
from django_weft.exceptions import ConcurrencyLimitReached
from django_weft.models import Document, Run, RunStatus
from django_weft.operations import abort, start
from example_project.shell.jobs import ENTRIES, shell
from tests.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def entries() -> list[str]:
    document = Document.objects.filter(key=ENTRIES).first()
    return document.data["list"] if document else []


def output(run: Run) -> str:
    assert run.state is not None
    run.state.refresh_from_db()
    return run.state.data["output"]


def test_seed_shell_owner_session(running_worker: Worker) -> None:
    """Dedupe by request id, live output, one run at a time, finish chaining, abort."""
    owner = get_user_model().objects.create_user("owner")
    first = start(shell, {"command": "npm test", "lines": 5}, key="r1", owner=owner)
    again = start(shell, {"command": "npm test", "lines": 5}, key="r1", owner=owner)
    assert again.pk == first.pk, "a resent request returns the same run"

    with pytest.raises(ConcurrencyLimitReached) as refused:
        start(shell, {"command": "npm run build", "lines": 1}, key="r2", owner=owner)
    assert 'job "shell.run" allows 1 unfinished run' in str(refused.value)
    assert not Run.objects.filter(idempotency_key="r2").exists(), "a refused start writes nothing"

    seen: list[str] = []

    def finished_with_partial_output_seen() -> bool:
        seen.append(output(first))
        return Run.objects.get(pk=first.pk).is_finished

    wait_for(finished_with_partial_output_seen, what="the first run to finish")
    partial = [text for text in seen if 0 < text.count("\n") < 5]
    assert partial, f"the owner saw the output grow while the run ran: {seen}"
    assert all(text.startswith("line 1\n") for text in partial)

    done = Run.objects.get(pk=first.pk)
    assert done.status == RunStatus.DONE
    assert done.result == {"exit": 0, "output": "".join(f"line {n}\n" for n in range(1, 6))}
    wait_for(lambda: len(entries()) == 2, what="the chained notify job")
    assert entries() == ["npm test: exit 0, 5 lines", "notified: npm test"]

    long = start(shell, {"command": "tail -f log", "lines": 100}, key="r3", owner=owner)
    wait_for(lambda: output(long).count("\n") >= 3, what="some output of the long run")
    assert abort(long)
    wait_for(lambda: Run.objects.get(pk=long.pk).is_finished, what="the aborted run to finish")
    aborted = Run.objects.get(pk=long.pk)
    assert aborted.status == RunStatus.ABORTED
    kept = output(aborted)
    lines = kept.count("\n")
    assert 3 <= lines < 100, "it stopped at a sleep mid-way"
    assert kept == "".join(f"line {n}\n" for n in range(1, lines + 1)), (
        "the last write reached the state"
    )
    wait_for(lambda: len(entries()) == 4, what="the notify job chained by the abort")
    assert entries()[2:] == [
        f"tail -f log: interrupted (aborted), {lines} lines kept",
        "notified: tail -f log",
    ]
    assert not Run.objects.unfinished().exists()
