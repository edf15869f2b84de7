"""Jobs the flow tests run: durable steps, sleeps and waits for signals, groups and
workflows.

Each counts how often its function's parts really ran in a document of its run
(``tests:calls:<run id>``), so that a test can tell a recorded step from a repeated one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django_weft.engine.flows.groups import Callback
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import SignalTimeout
from django_weft.jobs.context import RunContext
from django_weft.jobs.outcomes import FinishContext, Outcome
from django_weft.jobs.registry import job
from django_weft.jobs.retries import Retry
from django_weft.jobs.revisions import change_document, open_document
from django_weft.jobs.workflows import Step, chain, workflow
from django_weft.models import Group


def count(ctx: RunContext, what: str) -> int:
    """Add one to ``what`` in the run's tally of calls; the new count."""
    document = open_document(f"tests:calls:{ctx.run_id}", schema="tests.calls")
    changed = change_document(document, lambda data: data.update({what: data.get(what, 0) + 1}))
    tally: int = changed.data[what]
    return tally


def calls(run_id: object) -> dict[str, int]:
    """How often each counted part of run ``run_id`` really ran."""
    tally: dict[str, int] = open_document(f"tests:calls:{run_id}", schema="tests.calls").data
    return tally


@job("tests.flows.checkout", retry=Retry(max_attempts=3, backoff=60, jitter=0))
def checkout(ctx: RunContext, *, amount: int = 10, fail_attempts: int = 1) -> dict[str, Any]:
    """Charges once, however often it is tried: its first attempts fail after the charge."""
    charge = ctx.step("charge", lambda: {"charge": count(ctx, "charge"), "amount": amount})
    count(ctx, "body")
    if ctx.attempt <= fail_attempts:
        raise ConnectionError(f"attempt {ctx.attempt}: the shipping service did not answer")
    return {"charged": charge, "attempt": ctx.attempt}


@job("tests.flows.nap")
def nap(ctx: RunContext, *, seconds: float = 3600) -> str:
    """Counts before and after a sleep of ``seconds`` that holds no worker."""
    ctx.step("before", count, ctx, "before")
    count(ctx, "body")
    ctx.sleep_for(seconds)
    count(ctx, "after")
    return "awake"


@job("tests.flows.approval")
def approval(ctx: RunContext, *, timeout: float | None = None, waits: int = 1) -> Any:
    """Waits for ``waits`` signals named ``approval``; their payloads, or "timed out"."""
    count(ctx, "body")
    payloads = []
    for _ in range(waits):
        try:
            payloads.append(ctx.wait_for("approval", timeout=timeout))
        except SignalTimeout:
            return "timed out"
    return payloads if waits > 1 else payloads[0]


@job("tests.flows.async_approval")
async def async_approval(ctx: RunContext) -> Any:
    """An async job: a step, a sleep and a wait for a signal."""
    stamp = await ctx.astep("stamp", lambda: "stamped")
    await ctx.asleep_for(60)
    payload = await ctx.await_for("go")
    return {"stamp": stamp, "payload": payload}


@job("tests.flows.unstorable_step")
def unstorable_step(ctx: RunContext) -> None:
    """A step whose result JSON cannot store."""
    ctx.step("opens a socket", object)


@job(
    "tests.flows.charge_then_hang",
    retry=Retry(max_attempts=2, backoff=0, jitter=0, on=frozenset({"lost"})),
)
def charge_then_hang(ctx: RunContext) -> dict[str, Any]:
    """Charges in a step, then hangs on its first attempt (for its worker to be killed
    under it); the retry finishes at once."""
    charge = ctx.step("charge", count, ctx, "charge")
    if ctx.attempt == 1:
        ctx.sleep(600)
    return {"charge": charge, "attempt": ctx.attempt}


@job("tests.flows.wait_named")
def wait_named(ctx: RunContext, *, signal: str) -> Any:
    """Waits for a signal of the name it is given."""
    return ctx.wait_for(signal)


@job("tests.flows.member")
def member(ctx: RunContext, *, number: int, fail: bool = False) -> int:
    """A member of a group: returns its number squared, or fails."""
    if fail:
        raise ValueError(f"member {number} failed")
    return number * number


@job("tests.flows.gather")
def gather(ctx: RunContext, *, group: str, label: str = "") -> dict[str, Any]:
    """A group's callback: the group's summary and its members' results, by number."""
    found = Group.objects.get(pk=group)
    results = sorted(
        result for result in found.members.values_list("result", flat=True) if result is not None
    )
    return {"label": label, "summary": found.summary(), "results": results}


@job(
    "tests.flows.slow_member",
    retry=Retry(max_attempts=3, backoff=0, jitter=0, on=frozenset({"lost"})),
)
def slow_member(ctx: RunContext, *, number: int) -> int:
    """A member that takes a moment (abort-aware), retried when its worker is lost."""
    ctx.sleep(0.01)
    return number


@job("tests.flows.fan_out")
def fan_out(ctx: RunContext, *, count: int) -> int:
    """Its finish hook starts a group of ``count`` members, gathered by a callback."""
    return count


@fan_out.finish
def fan_out_finished(outcome: Outcome, tx: FinishContext) -> None:
    tx.start_group(
        [StartRequest(member, {"number": n}) for n in range(outcome.result)],
        callback=Callback(gather, {"label": "from a hook"}),
        name=f"fan-out of run {outcome.run.pk}",
    )


# Workflows: a release (build, then unit and end-to-end checks side by side, then deploy,
# then an announcement that runs whatever happened), and a chain.


@job("tests.flows.build")
def build(ctx: RunContext, *, ref: str) -> dict[str, str]:
    """The release's first step: an artifact named after the ref."""
    return {"artifact": f"build-{ref}"}


@job("tests.flows.check")
def check(ctx: RunContext, *, kind: str, flaky: bool = False) -> dict[str, str]:
    """Checks the build it reads from its dependency; a flaky check fails on its first run
    (not on the retry of a workflow's step, whose run retries that one)."""
    artifact = ctx.upstream["build"].result["artifact"]
    if flaky and ctx.run.retry_of_id is None:
        raise AssertionError(f"{kind} checks of {artifact} failed")
    return {"checked": artifact, "kind": kind}


@job("tests.flows.deploy")
def deploy(ctx: RunContext) -> dict[str, Any]:
    """Deploys what both checks checked."""
    return {"deployed": sorted(outcome.result["kind"] for outcome in ctx.upstream.values())}


@job("tests.flows.announce")
def announce(ctx: RunContext) -> dict[str, str]:
    """Runs anyway: says how the deploy ended."""
    return {name: outcome.outcome for name, outcome in ctx.upstream.items()}


@job("tests.flows.workflow_ended")
def workflow_ended(ctx: RunContext, *, workflow: str, outcome: str) -> str:
    """A workflow's on-end job."""
    return outcome


release = workflow(
    "tests.release",
    steps=[
        Step("build", build, args=lambda given: {"ref": given["ref"]}),
        Step(
            "unit",
            check,
            after=["build"],
            args=lambda given: {"kind": "unit", "flaky": "unit" in given.get("flaky", [])},
        ),
        Step(
            "e2e",
            check,
            after=["build"],
            args=lambda given: {"kind": "e2e", "flaky": "e2e" in given.get("flaky", [])},
        ),
        Step("deploy", deploy, after=["unit", "e2e"], args={}),
        Step("announce", announce, after=["deploy"], args={}, runs_anyway=True),
    ],
    on_end=workflow_ended,
)

squares = workflow("tests.squares", steps=chain(member, member, member))


@job("tests.flows.hang_first_time")
def hang_first_time(ctx: RunContext) -> str:
    """Hangs (for its worker to be killed under it) unless its run retries another."""
    if ctx.run.retry_of_id is None:
        ctx.sleep(600)
    return "went on"


killed = workflow(
    "tests.killed",
    steps=[
        Step("first", hang_first_time, args={}),
        Step("second", member, after=["first"], args={"number": 2}),
        Step("third", member, after=["second"], args={"number": 3}),
    ],
)


# A workflow whose middle step is a group: one member for each number the scan found,
# then a step that adds up what they returned.


@job("tests.flows.scan")
def scan(ctx: RunContext, *, count: int) -> dict[str, list[int]]:
    """The album's first step: the numbers its group step fans out over."""
    return {"numbers": list(range(count))}


@job("tests.flows.flaky_member")
def flaky_member(ctx: RunContext, *, number: int, flaky: bool = False) -> int:
    """A member that fails unless its run retries another, when ``flaky``."""
    if flaky and ctx.run.retry_of_id is None:
        raise ValueError(f"member {number} failed")
    return number * number


@job("tests.flows.total")
def total(ctx: RunContext) -> int:
    """Adds up the results its group step gathered."""
    return sum(ctx.upstream["squares"].result["results"])


def album_items(given: Mapping[str, Any], results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One member for each number the scan found; ``flaky`` numbers fail first; ``broken``
    makes no items at all, ``bad`` items a member refuses."""
    if given.get("broken"):
        raise KeyError("photos")
    if given.get("bad"):
        return [{"number": {"a set no run can store"}}]
    flaky = given.get("flaky", [])
    return [{"number": n, "flaky": n in flaky} for n in results["scan"]["numbers"]]


album = workflow(
    "tests.album",
    steps=[
        Step("scan", scan, args=lambda given: {"count": given["count"]}),
        Step("squares", flaky_member, after=["scan"], each=album_items),
        Step("total", total, after=["squares"], args={}),
    ],
)


def fanned_items(given: Mapping[str, Any], _: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One member for each number given; a string gives an item no run can store."""
    return [{"number": {n} if isinstance(n, str) else n} for n in given["numbers"]]


fanned = workflow(
    "tests.fanned",
    steps=[
        Step("squares", member, each=fanned_items),
        Step("total", total, after=["squares"], args={}),
    ],
)


@job("tests.flows.hang_member")
def hang_member(ctx: RunContext, *, number: int, hang: bool = False) -> int:
    """A member that hangs (for its worker to be killed under it) when ``hang``, unless
    its run retries another."""
    if hang and ctx.run.retry_of_id is None:
        ctx.sleep(600)
    return number * number


killed_group = workflow(
    "tests.killed_group",
    steps=[
        Step(
            "squares",
            hang_member,
            each=lambda given, _: [{"number": n, "hang": n == 0} for n in range(4)],
        ),
        Step("total", total, after=["squares"], args={}),
    ],
)
