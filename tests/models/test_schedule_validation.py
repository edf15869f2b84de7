"""Tests for Schedule validation (DESIGN §1): an unschedulable row is refused on save.

A plan DESIGN §1 calls unschedulable is refused by the model's ``save()`` (so by every ORM
write that goes through the model), by ``full_clean()`` and, for the plan shape, by the
database's own check constraints (``QuerySet.update`` skips ``save()``). A job that is
not deployed or args that fail its serializer are refused by
:func:`django_weft.engine.schedules.saving.save_schedule`, which the admin, the API and the service
layer save through (the model cannot know what code is deployed), and reported at the
first fire of a row written around it. A refusal writes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from django_weft.engine.schedules.saving import save_schedule
from django_weft.models import Schedule

pytestmark = pytest.mark.django_db

TORONTO = "America/Toronto"

#: The plan and job fields of a row, all blank: each case below fills in what it needs.
BLANK: dict[str, Any] = {
    "job": "tests.noop",
    "args": {},
    "cron": "",
    "timezone": "",
    "every": None,
    "at": None,
}

#: (fields, {field: [substrings its messages must contain]}): one per DESIGN §1 refusal.
INVALID = [
    pytest.param(
        {},
        {"cron": ["exactly one"], "every": ["exactly one"], "at": ["exactly one"]},
        id="none-of-cron-every-at",
    ),
    pytest.param(
        {"cron": "0 7 * * *", "timezone": TORONTO, "every": timedelta(hours=1)},
        {"cron": ["exactly one", "cron, every"], "every": ["exactly one", "cron, every"]},
        id="cron-and-every",
    ),
    pytest.param(
        {"every": timedelta(hours=1), "at": datetime(2026, 3, 7, 12, tzinfo=UTC)},
        {"every": ["exactly one", "every, at"], "at": ["exactly one", "every, at"]},
        id="every-and-at",
    ),
    pytest.param(
        {"cron": "0 7 * * *", "at": datetime(2026, 3, 7, 12, tzinfo=UTC), "timezone": TORONTO},
        {"cron": ["exactly one", "cron, at"], "at": ["exactly one", "cron, at"]},
        id="cron-and-at",
    ),
    pytest.param({"cron": "0 7 * * *"}, {"timezone": ["time zone"]}, id="cron-without-timezone"),
    pytest.param(
        {"cron": "0 7 * * *", "timezone": "Mars/Olympus"},
        {"timezone": ['"Mars/Olympus"']},
        id="unknown-zone",
    ),
    pytest.param(
        {"cron": "61 * * * *", "timezone": TORONTO},
        {"cron": ['"61 * * * *"']},
        id="minute-out-of-range",
    ),
    pytest.param(
        {"cron": "* * *", "timezone": TORONTO}, {"cron": ['"* * *"', "five"]}, id="three-fields"
    ),
    pytest.param(
        {"cron": "0 0 30 2 *", "timezone": TORONTO},
        {"cron": ['"0 0 30 2 *"', "never"]},
        id="never-occurs",
    ),
    pytest.param({"every": timedelta(0)}, {"every": ["positive", "0:00:00"]}, id="zero-interval"),
    pytest.param(
        {"every": timedelta(seconds=-5)},
        {"every": ["positive", "-0:00:05"]},
        id="negative-interval",
    ),
    pytest.param(
        {"job": "no.such.job", "every": timedelta(hours=1)},
        {"job": ['"no.such.job"']},
        id="unknown-job",
    ),
    pytest.param(
        {"job": "content.remind", "every": timedelta(hours=1)},
        {"args": ["text", "required"]},
        id="args-missing-text",
    ),
    pytest.param(
        {"job": "content.remind", "args": {"text": "x" * 501}, "every": timedelta(hours=1)},
        {"args": ["text", "500"]},
        id="args-text-too-long",
    ),
    pytest.param(
        {
            "job": "content.remind",
            "args": {"text": "hi", "colour": "red"},
            "every": timedelta(hours=1),
        },
        {"args": ["colour", "Unknown arg"]},
        id="args-unknown-extra",
    ),
    pytest.param(
        {"at": datetime(2026, 3, 7, 12, 0)},
        {"at": ["timezone-aware", "2026-03-07T12:00:00"]},
        id="naive-at",
    ),
]


#: The refusals the model itself makes: the plan's. The others name the job or its args.
PLAN_INVALID = [
    case for case in INVALID if "job" not in case.values[1] and "args" not in case.values[1]
]


def fields(**overrides: Any) -> dict[str, Any]:
    """The blank plan with ``overrides`` applied."""
    return {**BLANK, **overrides}


def assert_refusal(error: ValidationError, expected: dict[str, list[str]]) -> None:
    """Each expected field is named in ``message_dict`` with messages containing each substring."""
    messages = error.message_dict
    for field, substrings in expected.items():
        assert field in messages, f"{field!r} not named in {messages}"
        text = " ".join(messages[field])
        for substring in substrings:
            assert substring in text, f"{substring!r} not in the {field} messages: {text!r}"


@pytest.fixture
def existing() -> Schedule:
    """A valid stored interval row, the one the update cases try to break."""
    return Schedule.objects.create(name="existing", job="tests.noop", every=timedelta(minutes=10))


# --- refused on save (the ORM) ---------------------------------------------------------


@pytest.mark.parametrize(("overrides", "expected"), PLAN_INVALID)
def test_schedule_create_unschedulable_row(
    overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """objects.create refuses an unschedulable row, naming field and value; nothing is written."""
    before = Schedule.objects.count()
    with pytest.raises(ValidationError) as caught:
        Schedule.objects.create(name="refused", **fields(**overrides))
    assert_refusal(caught.value, expected)
    assert Schedule.objects.count() == before
    assert not Schedule.objects.filter(name="refused").exists()


@pytest.mark.parametrize(("overrides", "expected"), PLAN_INVALID)
def test_schedule_save_update_to_unschedulable_row(
    existing: Schedule, overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """Saving a stored row edited into an unschedulable plan is refused; it keeps its old values."""
    before = Schedule.objects.count()
    for name, value in fields(**overrides).items():
        setattr(existing, name, value)
    with pytest.raises(ValidationError) as caught:
        existing.save()
    assert_refusal(caught.value, expected)
    assert Schedule.objects.count() == before
    existing.refresh_from_db()
    assert (existing.job, existing.args, existing.cron, existing.timezone) == (
        "tests.noop",
        {},
        "",
        "",
    )
    assert (existing.every, existing.at) == (timedelta(minutes=10), None)


@pytest.mark.parametrize(("overrides", "expected"), PLAN_INVALID)
def test_schedule_save_update_fields_to_unschedulable_row(
    existing: Schedule, overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """save(update_fields=...) is validated too: the refused update writes nothing."""
    changed = fields(**overrides)
    for name, value in changed.items():
        setattr(existing, name, value)
    with pytest.raises(ValidationError) as caught:
        existing.save(update_fields=list(changed))
    assert_refusal(caught.value, expected)
    existing.refresh_from_db()
    assert (existing.job, existing.every, existing.at, existing.cron) == (
        "tests.noop",
        timedelta(minutes=10),
        None,
        "",
    )


# --- refused by full_clean (forms, the admin, the API) -----------------------------------


@pytest.mark.parametrize(("overrides", "expected"), PLAN_INVALID)
def test_schedule_full_clean_unschedulable_row(
    overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """full_clean() raises a ValidationError naming the field and the offending value."""
    before = Schedule.objects.count()
    row = Schedule(name="unsaved", **fields(**overrides))
    with pytest.raises(ValidationError) as caught:
        row.full_clean()
    assert_refusal(caught.value, expected)
    assert Schedule.objects.count() == before


@pytest.mark.parametrize(("overrides", "expected"), PLAN_INVALID)
def test_schedule_full_clean_update_to_unschedulable_row(
    existing: Schedule, overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """full_clean() refuses a stored row edited into an unschedulable plan; nothing is written."""
    for name, value in fields(**overrides).items():
        setattr(existing, name, value)
    with pytest.raises(ValidationError) as caught:
        existing.full_clean()
    assert_refusal(caught.value, expected)
    existing.refresh_from_db()
    assert (existing.every, existing.cron, existing.at) == (timedelta(minutes=10), "", None)


# --- refused by save_schedule (the admin, the API, the service layer) ---------------------


@pytest.mark.parametrize(("overrides", "expected"), INVALID)
def test_save_schedule_refuses_unschedulable_row(
    overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """save_schedule refuses every unschedulable row, job and args included; nothing is written."""
    with pytest.raises(ValidationError) as caught:
        save_schedule(Schedule(name="refused", **fields(**overrides)))
    assert_refusal(caught.value, expected)
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(("overrides", "expected"), INVALID)
def test_save_schedule_refuses_update_to_unschedulable_row(
    existing: Schedule, overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """An edit into an unschedulable row is refused; the stored row keeps its values."""
    for name, value in fields(**overrides).items():
        setattr(existing, name, value)
    with pytest.raises(ValidationError) as caught:
        save_schedule(existing)
    assert_refusal(caught.value, expected)
    existing.refresh_from_db()
    assert (existing.job, existing.args, existing.every) == (
        "tests.noop",
        {},
        timedelta(minutes=10),
    )


def test_schedule_validation_every_message_names_its_field() -> None:
    """Several problems at once are all reported, each under its own field."""
    row = Schedule(
        name="many",
        job="no.such.job",
        cron="0 0 30 2 *",
        timezone=TORONTO,
        every=timedelta(0),
    )
    with pytest.raises(ValidationError) as caught:
        save_schedule(row)
    messages = caught.value.message_dict
    assert {"cron", "every", "job"} <= set(messages)
    assert Schedule.objects.count() == 0


def test_model_save_leaves_the_job_to_the_code_that_runs_it() -> None:
    """The model stores a row naming a job this process does not have: another process's
    code may have it; the scheduler reports it at its first fire."""
    row = Schedule.objects.create(name="elsewhere", job="billing.export", every=timedelta(hours=1))
    assert Schedule.objects.get(pk=row.pk).job == "billing.export"


# --- the database's own check constraints ----------------------------------------------


def test_schedule_constraint_update_without_plan() -> None:
    """A queryset update leaving none of cron/every/at is refused by the database."""
    row = Schedule.objects.create(name="plan", job="tests.noop", every=timedelta(hours=1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=row.pk).update(cron="", every=None, at=None)
    row.refresh_from_db()
    assert row.every == timedelta(hours=1)


def test_schedule_constraint_update_two_plans() -> None:
    """A queryset update giving both a cron and an interval is refused by the database."""
    row = Schedule.objects.create(name="plan", job="tests.noop", every=timedelta(hours=1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=row.pk).update(cron="0 7 * * *", timezone=TORONTO)
    row.refresh_from_db()
    assert (row.cron, row.every) == ("", timedelta(hours=1))


def test_schedule_constraint_update_cron_without_timezone() -> None:
    """A queryset update removing a cron row's time zone is refused by the database."""
    row = Schedule.objects.create(name="cron", job="tests.noop", cron="0 7 * * *", timezone=TORONTO)
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=row.pk).update(timezone="")
    row.refresh_from_db()
    assert row.timezone == TORONTO


@pytest.mark.parametrize("every", [timedelta(0), timedelta(seconds=-1)], ids=["zero", "negative"])
def test_schedule_constraint_update_non_positive_interval(every: timedelta) -> None:
    """A queryset update setting a non-positive interval is refused by the database."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=timedelta(hours=1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=row.pk).update(every=every)
    row.refresh_from_db()
    assert row.every == timedelta(hours=1)


def test_schedule_constraint_update_unknown_policy() -> None:
    """A queryset update setting a policy outside its choices is refused by the database."""
    row = Schedule.objects.create(name="policy", job="tests.noop", every=timedelta(hours=1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=row.pk).update(on_gap="ignore")
    row.refresh_from_db()
    assert row.on_gap == "shift"


# --- valid rows ------------------------------------------------------------------------


def test_schedule_save_valid_cron() -> None:
    """A cron row with an IANA zone saves, passes full_clean and is stored as given."""
    row = Schedule(name="digest", job="content.digest", cron="0 7 * * *", timezone=TORONTO)
    row.full_clean()
    row.save()
    row.refresh_from_db()
    assert (row.cron, row.timezone, row.every, row.at) == ("0 7 * * *", TORONTO, None, None)
    assert Schedule.objects.count() == 1


def test_schedule_save_valid_every() -> None:
    """An interval row saves, passes full_clean and is stored as given."""
    row = Schedule(name="cleanup", job="content.cleanup", every=timedelta(minutes=15))
    row.full_clean()
    row.save()
    row.refresh_from_db()
    assert (row.every, row.cron, row.timezone, row.at) == (timedelta(minutes=15), "", "", None)


def test_schedule_save_valid_at() -> None:
    """A one-off with an aware moment in any zone saves and is stored as that instant."""
    moment = datetime(2026, 3, 8, 9, 30, tzinfo=ZoneInfo(TORONTO))
    row = Schedule(name="once", job="content.remind", args={"text": "renew"}, at=moment)
    row.full_clean()
    row.save()
    row.refresh_from_db()
    assert row.at == datetime(2026, 3, 8, 13, 30, tzinfo=UTC)
    assert (row.cron, row.every) == ("", None)


def test_schedule_save_args_stored_validated() -> None:
    """Args are stored in the form the job's serializer gives them (trimmed text)."""
    row = save_schedule(
        Schedule(
            name="remind",
            job="content.remind",
            args={"text": "  call the printer  "},
            every=timedelta(hours=1),
        )
    )
    assert row.args == {"text": "call the printer"}
    row.refresh_from_db()
    assert row.args == {"text": "call the printer"}


def test_schedule_save_args_stored_as_json_values() -> None:
    """Args given as strings are stored as the JSON value the serializer parses (a float)."""
    row = save_schedule(
        Schedule(name="nap", job="tests.sleep", args={"seconds": "2.5"}, every=timedelta(hours=1))
    )
    row.refresh_from_db()
    assert row.args == {"seconds": 2.5}
    assert isinstance(row.args["seconds"], float)


def test_schedule_save_valid_update() -> None:
    """A stored row edited to another valid plan saves, and the new plan is stored."""
    row = Schedule.objects.create(name="edit", job="tests.noop", every=timedelta(hours=1))
    row.every = None
    row.cron = "*/15 * * * *"
    row.timezone = "Europe/Berlin"
    row.save()
    row.refresh_from_db()
    assert (row.cron, row.timezone, row.every) == ("*/15 * * * *", "Europe/Berlin", None)


# --- values given as strings, as the ORM accepts them -----------------------------------


def test_schedule_save_plan_given_as_strings() -> None:
    """An interval and a moment given as ISO strings save as the timedelta and instant they name."""
    every = Schedule.objects.create(name="every", job="tests.noop", every="0:15:00")
    at = Schedule.objects.create(name="at", job="tests.noop", at="2026-03-08T13:30:00+00:00")
    every.refresh_from_db()
    at.refresh_from_db()
    assert every.every == timedelta(minutes=15)
    assert at.at == datetime(2026, 3, 8, 13, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param(
            {"at": "2026-03-08T13:30"},
            {"at": ["timezone-aware", "2026-03-08T13:30"]},
            id="naive-at",
        ),
        pytest.param({"at": "tomorrow"}, {"at": ["tomorrow"]}, id="unreadable-at"),
        pytest.param(
            {"every": "-0:00:05"}, {"every": ["positive", "-0:00:05"]}, id="negative-every"
        ),
        pytest.param({"every": "often"}, {"every": ["often"]}, id="unreadable-every"),
    ],
)
def test_schedule_create_unschedulable_strings(
    overrides: dict[str, Any], expected: dict[str, list[str]]
) -> None:
    """A plan given as an unreadable or unschedulable string is refused with a ValidationError."""
    with pytest.raises(ValidationError) as caught:
        Schedule.objects.create(name="refused", **fields(**overrides))
    assert_refusal(caught.value, expected)
    assert Schedule.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("grace", timedelta(seconds=-1)),
        ("catch_up_window", timedelta(0)),
        ("catch_up_window", timedelta(hours=-1)),
    ],
)
def test_schedule_save_refuses_negative_policy_durations(field: str, value: timedelta) -> None:
    """A negative grace or a non-positive catch-up window is refused, naming the field."""
    with pytest.raises(ValidationError) as refused:
        Schedule.objects.create(
            name="x", job="tests.noop", every=timedelta(hours=1), **{field: value}
        )
    assert field in refused.value.message_dict
    assert not Schedule.objects.exists()
