"""A schedule save or delete the service layer refuses is a refusal on the admin's pages.

For add, change and delete, and for each reason a write is refused (a missing permission,
an invalid plan, an unknown job, bad args, a change of what runs without ``add_run``, a
refusal of the service layer the form did not foresee): the page shows the refusal (on
the field it names, above the form, or as an error message), keeps what was typed,
never says "successfully", logs nothing (no LogEntry) and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from django_weft import operations
from django_weft.exceptions import Forbidden, InvalidArgs, UnknownJob, WeftError
from django_weft.models import Schedule

pytestmark = pytest.mark.django_db

ADD_URL = "admin:django_weft_schedule_add"


def client_for(username: str, *permissions: str, superuser: bool = False) -> Client:
    users = get_user_model().objects
    if superuser:
        user = users.create_superuser(username, f"{username}@example.com", "pw")
    else:
        user = users.create_user(username, password="pw", is_staff=True)
        user.user_permissions.add(
            *(Permission.objects.get(codename=codename) for codename in permissions)
        )
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root() -> Client:
    return client_for("root", superuser=True)


@pytest.fixture
def maker() -> Client:
    """Staff who may add schedules but not start runs, which a schedule does."""
    return client_for("maker", "view_schedule", "add_schedule")


@pytest.fixture
def changer() -> Client:
    """Staff who may change schedules but not start runs: not what a schedule runs."""
    return client_for("changer", "view_schedule", "change_schedule")


@pytest.fixture
def viewer() -> Client:
    """Staff who may see schedules and change nothing."""
    return client_for("viewer", "view_schedule")


@pytest.fixture
def digest() -> Schedule:
    return Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "digest",
        "job": "content.digest",
        "args": "{}",
        "enabled": "on",
        "cron": "0 7 * * *",
        "timezone": "America/Toronto",
        "every": "",
        "at_0": "",
        "at_1": "",
        "catch_up": "skip",
        "overlap": "skip",
        "on_gap": "shift",
        "on_fold": "first",
        "catch_up_window": "",
        "grace": "",
    }
    return data | overrides


def change_url(schedule: Schedule) -> str:
    return reverse("admin:django_weft_schedule_change", args=[schedule.pk])


def delete_url(schedule: Schedule) -> str:
    return reverse("admin:django_weft_schedule_delete", args=[schedule.pk])


def stored(schedule: Schedule) -> dict[str, Any]:
    """What the row holds, to compare before and after a refused write."""
    return Schedule.objects.filter(pk=schedule.pk).values().get()


def refusing(error: WeftError | ValidationError) -> Callable[..., Any]:
    """A stand-in for a service-layer call that refuses with ``error``."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise error

    return refuse


def assert_refused_form(response: HttpResponse, field: str | None, words: str) -> Any:
    """The form is shown again, the refusal on ``field`` (None: above the form); nothing
    is logged or said to have succeeded. Returns the form."""
    assert response.status_code == 200
    form = response.context["adminform"].form
    errors = form.errors.get(field or NON_FIELD_ERRORS, [])
    assert any(words in message for message in errors), form.errors
    page = response.content.decode()
    assert escape(words) in page
    assert "successfully" not in page
    assert not LogEntry.objects.exists()
    return form


# -- a success, for contrast --------------------------------------------------------------------


def test_admin_schedule_saves_that_succeed_are_logged(root: Client, digest: Schedule) -> None:
    """An allowed add, change and delete are logged and said to succeed: the refusals'
    "no LogEntry, no successfully" below is not true of every save."""
    added = root.post(reverse(ADD_URL), form_data(name="weekly"), follow=True)
    assert "was added successfully" in added.content.decode()
    changed = root.post(change_url(digest), form_data(cron="0 8 * * *"), follow=True)
    assert "was changed successfully" in changed.content.decode()
    deleted = root.post(delete_url(digest), {"post": "yes"}, follow=True)
    assert "was deleted successfully" in deleted.content.decode()
    assert LogEntry.objects.count() == 3


# -- add ----------------------------------------------------------------------------------------


def test_admin_schedule_add_refused_without_add_run(maker: Client) -> None:
    """add_schedule without add_run: a schedule starts runs, so the add is refused above
    the form, which keeps what was typed."""
    response = maker.post(reverse(ADD_URL), form_data(name="mine", cron="15 6 * * *"))
    form = assert_refused_form(
        response, None, "You may not create schedules (needs django_weft.add_run)."
    )
    assert (form["name"].value(), form["cron"].value()) == ("mine", "15 6 * * *")
    assert 'value="mine"' in response.content.decode()
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"cron": "61 * * * *"}, "cron", "61 * * * *"),
        ({"job": "no.such.job"}, "job", "no.such.job"),
        ({"job": "content.remind", "args": '{"text": ""}'}, "args", "text"),
    ],
    ids=["invalid-plan", "unknown-job", "bad-args"],
)
def test_admin_schedule_add_refused_for_bad_input(
    root: Client, overrides: dict[str, str], field: str, words: str
) -> None:
    """An invalid plan, an unknown job, bad args: on their field, nothing logged or written."""
    response = root.post(reverse(ADD_URL), form_data(**overrides))
    assert_refused_form(response, field, words)
    assert not Schedule.objects.exists()


#: Refusals of the service layer the form does not foresee, and where each is shown.
SERVICE_REFUSALS = [
    pytest.param(
        Forbidden("you may not create schedules now", "custom"),
        None,
        "You may not create schedules now.",
        id="forbidden",
    ),
    pytest.param(
        ValidationError({"cron": ["That cron is taken tonight."]}),
        "cron",
        "That cron is taken tonight.",
        id="invalid-plan",
    ),
    pytest.param(
        ValidationError("Not while the deploy runs."), None, "Not while the deploy runs.", id="all"
    ),
    pytest.param(UnknownJob("content.digest"), "job", 'No job named "content.digest"', id="job"),
    pytest.param(
        InvalidArgs("content.digest", {"text": ["This field is required."]}),
        "args",
        "text: This field is required.",
        id="args",
    ),
]


@pytest.mark.parametrize(("error", "field", "words"), SERVICE_REFUSALS)
def test_admin_schedule_add_refused_by_the_service_layer(
    root: Client,
    monkeypatch: pytest.MonkeyPatch,
    error: WeftError | ValidationError,
    field: str | None,
    words: str,
) -> None:
    """Whatever the service layer refuses an add with is shown on the form, not as a success."""
    monkeypatch.setattr(operations, "create_schedule_for", refusing(error))
    response = root.post(reverse(ADD_URL), form_data(name="weekly"))
    form = assert_refused_form(response, field, words)
    assert form["name"].value() == "weekly"
    assert not Schedule.objects.exists()


# -- change -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [{"job": "content.digest", "args": "{}"}, {"args": '{"text": "bye"}'}],
    ids=["job", "args"],
)
def test_admin_schedule_change_of_what_runs_refused_without_add_run(
    changer: Client, overrides: dict[str, str]
) -> None:
    """change_schedule without add_run: a change of the job or the args is refused above
    the form, which keeps what was typed; the row is as it was."""
    reminder = Schedule.objects.create(
        name="reminder", job="content.remind", args={"text": "hi"}, cron="0 7 * * *", timezone="UTC"
    )
    before = stored(reminder)
    data = form_data(name="reminder", job="content.remind", timezone="UTC") | overrides
    response = changer.post(change_url(reminder), data)
    form = assert_refused_form(
        response,
        None,
        "You may not change what schedule reminder runs (needs django_weft.add_run).",
    )
    assert (form["job"].value(), form["args"].value()) == (data["job"], data["args"])
    assert stored(reminder) == before


def test_admin_schedule_plan_change_allowed_without_add_run(
    changer: Client, digest: Schedule
) -> None:
    """The same staff may change when it fires: only what runs needs add_run."""
    response = changer.post(change_url(digest), form_data(cron="0 8 * * *"), follow=True)
    assert "was changed successfully" in response.content.decode()
    assert Schedule.objects.get(pk=digest.pk).cron == "0 8 * * *"


def test_admin_schedule_change_refused_to_a_viewer(viewer: Client, digest: Schedule) -> None:
    """View-only staff: the POST is refused as a page error; nothing logged or changed."""
    before = stored(digest)
    response = viewer.post(change_url(digest), form_data(cron="0 8 * * *"))
    assert response.status_code == 403
    assert "successfully" not in response.content.decode()
    assert not LogEntry.objects.exists()
    assert stored(digest) == before


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"cron": "61 * * * *"}, "cron", "61 * * * *"),
        ({"job": "no.such.job"}, "job", "no.such.job"),
        ({"job": "content.remind", "args": '{"text": ""}'}, "args", "text"),
    ],
    ids=["invalid-plan", "unknown-job", "bad-args"],
)
def test_admin_schedule_change_refused_for_bad_input(
    root: Client, digest: Schedule, overrides: dict[str, str], field: str, words: str
) -> None:
    """An invalid plan, an unknown job, bad args: on their field, nothing logged or changed."""
    before = stored(digest)
    response = root.post(change_url(digest), form_data(**overrides))
    assert_refused_form(response, field, words)
    assert stored(digest) == before


@pytest.mark.parametrize(("error", "field", "words"), SERVICE_REFUSALS)
def test_admin_schedule_change_refused_by_the_service_layer(
    root: Client,
    digest: Schedule,
    monkeypatch: pytest.MonkeyPatch,
    error: WeftError | ValidationError,
    field: str | None,
    words: str,
) -> None:
    """Whatever the service layer refuses a change with is shown on the form, not as a
    success; the form keeps what was typed, the row what it held."""
    before = stored(digest)
    monkeypatch.setattr(operations, "edit_schedule_for", refusing(error))
    response = root.post(change_url(digest), form_data(cron="0 8 * * *"))
    form = assert_refused_form(response, field, words)
    assert form["cron"].value() == "0 8 * * *"
    assert stored(digest) == before


# -- delete -------------------------------------------------------------------------------------


def test_admin_schedule_delete_refused_by_the_service_layer(
    root: Client, digest: Schedule, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete the service layer refuses: said on the schedule's page, the log entry
    Django writes before deleting undone, the row kept."""
    refusal = Forbidden("you may not delete schedule digest while it runs", "custom")
    monkeypatch.setattr(operations, "delete_schedule_for", refusing(refusal))
    response = root.post(delete_url(digest), {"post": "yes"})
    assert response.status_code == 302
    assert response["Location"] == change_url(digest)
    page = root.get(response["Location"]).content.decode()
    assert "Not deleted: you may not delete schedule digest while it runs" in page
    assert "successfully" not in page
    assert not LogEntry.objects.exists()
    assert Schedule.objects.filter(pk=digest.pk).exists()


def test_admin_schedule_delete_refused_without_delete_schedule(
    changer: Client, digest: Schedule
) -> None:
    """Staff without delete_schedule: the POST is refused as a page error; the row stays."""
    response = changer.post(delete_url(digest), {"post": "yes"})
    assert response.status_code == 403
    assert "successfully" not in response.content.decode()
    assert not LogEntry.objects.exists()
    assert Schedule.objects.filter(pk=digest.pk).exists()
