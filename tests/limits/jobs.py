"""Jobs the flow limit tests run: a sync per tenant, a hold, debounced and throttled jobs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django_weft.jobs.context import RunContext
from django_weft.jobs.limits import Limit
from django_weft.jobs.registry import job


def tenant_of(args: Any, owner: Any) -> str:
    return str(args["tenant"])


@job("tests.limits.sync", concurrency_key=tenant_of)
def sync(ctx: RunContext, *, tenant: str, number: int = 0) -> int:
    """A tenant's sync, limited by rows the tests write (a limit in code would be
    written by every worker of the suite, and hold every claim of it)."""
    return number


#: The limits a job may declare in code; the tests register a job with them for a test.
DECLARED = [
    Limit(concurrency=2, per_key=True),
    Limit("partner-api", rate=50, per=timedelta(seconds=1)),
]


@job("tests.limits.hold", concurrency_key=tenant_of)
def hold(ctx: RunContext, *, tenant: str, seconds: float = 0.2) -> str:
    """Runs a moment (abort-aware), so that workers overlap; no limit in code."""
    ctx.sleep(seconds)
    return tenant


@job("tests.limits.digest", concurrency_key=tenant_of, debounce=timedelta(seconds=30))
def digest(ctx: RunContext, *, tenant: str, events: int = 0) -> int:
    """One digest per burst of a tenant's events: the last start's count."""
    return events


@job("tests.limits.ping", concurrency_key=tenant_of, throttle=timedelta(minutes=1))
def ping(ctx: RunContext, *, tenant: str) -> str:
    """At most one ping of a tenant a minute."""
    return tenant


@job("tests.limits.burst", debounce=timedelta(seconds=5))
def burst(ctx: RunContext, *, number: int) -> int:
    """Debounced by five seconds: a burst of starts runs once, with the last number."""
    return number
