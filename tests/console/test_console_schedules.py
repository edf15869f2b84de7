"""The schedule pages of the operator's console: the list, the page, its buttons and its
endpoint, for a superuser, view-only staff, staff who may change but not start runs, and
someone who is not staff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client, override_settings
from django.urls import reverse

from django_weft.models import Run, Schedule

pytestmark = pytest.mark.django_db

#: The moment tests.clocks.March7 holds: 06:00 in Toronto, the day before spring forward.
MARCH7 = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)


def client_for(username: str, *permissions: str, staff: bool = True) -> Client:
    user = get_user_model().objects.create_user(username, password="pw", is_staff=staff)
    user.user_permissions.add(
        *(Permission.objects.get(codename=codename) for codename in permissions)
    )
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    return client


@pytest.fixture
def viewer() -> Client:
    """Staff who may see schedules and runs, and change nothing."""
    return client_for("viewer", "view_schedule", "view_run")


@pytest.fixture
def changer() -> Client:
    """Staff who may change schedules but not start runs (no add_run)."""
    return client_for("changer", "view_schedule", "change_schedule", "view_run")


@pytest.fixture
def outsider() -> Client:
    """Signed in with every schedule permission, but not staff: no admin at all."""
    return client_for(
        "outsider", "view_schedule", "change_schedule", "add_run", "add_schedule", staff=False
    )


@pytest.fixture
def digest() -> Schedule:
    return Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )


def change_url(schedule: Schedule) -> str:
    return reverse("admin:django_weft_schedule_change", args=[schedule.pk])


def fires_url(schedule: Schedule | None = None) -> str:
    if schedule is None:
        return reverse("admin:django_weft_schedule_fires_new")
    return reverse("admin:django_weft_schedule_fires", args=[schedule.pk])


def button_url(schedule: Schedule, button: str) -> str:
    return reverse(f"admin:django_weft_schedule_{button}", args=[schedule.pk])


def plan(**values: str) -> dict[str, str]:
    """The plan's fields as the page's script sends them."""
    return {
        "cron": "",
        "timezone": "",
        "every": "",
        "at_0": "",
        "at_1": "",
        "on_gap": "shift",
        "on_fold": "first",
        **values,
    }


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# -- the list ---------------------------------------------------------------------------------


def test_schedule_list_says_plans_in_words_and_states(root: Client) -> None:
    """The list says each plan in words, and when each row fires next or where it stands:
    never armed, paused, or (a one-off whose run started) fired, done; `at` without
    microseconds."""
    at = datetime(2026, 3, 7, 12, 0, 5, 123456, tzinfo=UTC)
    Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    Schedule.objects.create(name="cleanup", job="content.cleanup", every=timedelta(minutes=90))
    Schedule.objects.create(name="asleep", job="content.cleanup", every=timedelta(hours=1))
    done = Schedule.objects.create(
        name="renew", job="content.remind", args={"text": "renew"}, at=at
    )
    waiting = Schedule.objects.create(
        name="later", job="content.remind", args={"text": "later"}, at=at
    )
    Schedule.objects.filter(pk=done.pk).update(last_started=at + timedelta(seconds=1))
    Schedule.objects.filter(pk=waiting.pk).update(armed=True, next_due=at)
    Schedule.objects.filter(name="asleep").update(enabled=False)
    page = root.get(reverse("admin:django_weft_schedule_changelist")).content.decode()
    rows = {
        name: page[page.index(f">{name}</a>") :].split("</tr>", 1)[0]
        for name in ("digest", "cleanup", "asleep", "renew", "later")
    }
    assert "07:00 every day, America/Toronto" in rows["digest"]
    assert "never armed" in rows["digest"]
    assert "every 1 hour 30 minutes" in rows["cleanup"]
    assert "paused" in rows["asleep"]
    # The date kept on one line: a list's lines break at spaces only.
    assert "once at <span class='nowrap'>2026-03-07</span> 12:00:05 UTC" in rows["renew"]
    assert "fired, done" in rows["renew"]
    assert "fired, done" not in rows["later"]
    assert (
        "<span class='nowrap'>2026-03-07</span> <span class='nowrap'>12:00:05 UTC</span> "
        "<span class='nowrap weft-quiet'><span class=\"weft-relative\" data-weft-offset="
        in rows["later"]
    ), "armed: its next due, to the second, and how far off"
    assert "123456" not in page
    assert ".123" not in page


def test_schedule_list_cuts_a_long_error_to_one_line(root: Client, digest: Schedule) -> None:
    """The last error is one line in the list, the whole of it in the cell's title."""
    error = "smtp down: " + "connection refused " * 20
    Schedule.objects.filter(pk=digest.pk).update(last_status="failed", last_error_message=error)
    page = root.get(reverse("admin:django_weft_schedule_changelist")).content.decode()
    assert f"<span class='weft-sch-error' title='{error}'>" in page
    assert "django_weft/schedule.css" in page


# -- the page ---------------------------------------------------------------------------------


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_page_says_dst_notes_in_words(root: Client) -> None:
    """A slot in the spring-forward gap is said in words, with the row's DST policy."""
    schedule = Schedule.objects.create(
        name="night", job="content.digest", cron="30 2 * * *", timezone="America/Toronto"
    )
    page = root.get(change_url(schedule)).content.decode()
    assert "02:30 every day, America/Toronto" in page
    assert "DST gap: 02:30 does not exist, moved to the end of the gap" in page
    assert "(shifted)" not in page
    assert (
        "a time that does not exist (the clocks go forward): run at the first instant after "
        "the gap; a time that happens twice (the clocks go back): run once, the first time."
    ) in page


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_page_of_a_fired_one_off_says_fired_done(root: Client) -> None:
    """A one-off whose run started says so, and how to fire it again; no fires listed."""
    at = datetime(2026, 3, 6, 12, 0, tzinfo=UTC)
    schedule = Schedule.objects.create(
        name="renew", job="content.remind", args={"text": "renew"}, at=at
    )
    Schedule.objects.filter(pk=schedule.pk).update(last_started=at)
    page = root.get(change_url(schedule)).content.decode()
    assert "fired, done" in page
    assert "Fired, done: its run started 2026-03-06 12:00:00 UTC." in page
    assert "weft-next-fires" not in page


def test_schedule_page_offers_jobs_and_zones_to_search(root: Client, digest: Schedule) -> None:
    """The job and the zone are text inputs with the registry's jobs and the tz database's
    zones to pick from as they are typed; weft.gather, which only a workflow runs, is not
    offered (weft.start_workflow, which a schedule may fire, is)."""
    page = root.get(change_url(digest)).content.decode()
    assert 'list="id_job_options"' in page
    assert '<option value="content.remind">A one-off reminder to the operator.</option>' in page
    assert '<option value="weft.start_workflow">' in page
    assert 'value="weft.gather"' not in page
    assert 'list="id_timezone_options"' in page
    assert '<option value="Pacific/Apia">' in page
    assert '<option value="America/Toronto">' in page


def test_schedule_page_lists_recent_runs_with_links(root: Client, digest: Schedule) -> None:
    """The page lists the schedule's runs, each linked to its run page."""
    root.post(button_url(digest, "run_now"))
    run = Run.objects.get()
    page = root.get(change_url(digest)).content.decode()
    assert reverse("admin:django_weft_run_change", args=[run.pk]) in page
    assert f"?schedule__id__exact={digest.pk}" in page
    listed = root.get(
        reverse("admin:django_weft_run_changelist"), {"schedule__id__exact": digest.pk}
    )
    assert listed.status_code == 200
    assert str(run.pk) in listed.content.decode()


def test_schedule_page_read_only_for_a_viewer(viewer: Client, digest: Schedule) -> None:
    """A view-only page has no Save buttons, no action buttons and no live preview."""
    response = viewer.get(change_url(digest))
    assert response.status_code == 200
    page = response.content.decode()
    for absent in ('name="_save"', 'name="_continue"', 'name="_addanother"', "weft-sch-button"):
        assert absent not in page, absent
    assert "schedule.js" not in page
    assert "07:00 every day, America/Toronto" in page
    assert "weft-next-fires" in page


def test_schedule_page_buttons_follow_the_permissions(
    root: Client, changer: Client, digest: Schedule
) -> None:
    """Run now shows to those who may start runs; pause while enabled, resume while paused."""
    page = root.get(change_url(digest)).content.decode()
    assert 'name="run-now"' in page
    assert 'name="pause"' in page
    assert 'name="resume"' not in page
    page = changer.get(change_url(digest)).content.decode()
    assert 'name="run-now"' not in page
    assert 'name="pause"' in page
    Schedule.objects.filter(pk=digest.pk).update(enabled=False)
    page = changer.get(change_url(digest)).content.decode()
    assert 'name="resume"' in page
    assert 'name="pause"' not in page


# -- the buttons ------------------------------------------------------------------------------


def test_schedule_buttons_run_now_pause_resume(root: Client, digest: Schedule) -> None:
    """Run now starts a run of the row; pause switches it off; resume on, re-armed."""
    response = root.post(button_url(digest, "run_now"), follow=True)
    run = Run.objects.get()
    assert (run.schedule_id, run.job) == (digest.pk, "content.digest")
    assert response.redirect_chain[-1][0] == change_url(digest)
    (started,) = messages_of(response)
    assert started.startswith("Started run <a href=")
    assert f">{run.pk}</a>" in started

    response = root.post(button_url(digest, "pause"), follow=True)
    assert not Schedule.objects.get(pk=digest.pk).enabled
    assert "Paused: nothing fires until it is resumed." in messages_of(response)

    Schedule.objects.filter(pk=digest.pk).update(armed=True, next_due=MARCH7)
    response = root.post(button_url(digest, "resume"), follow=True)
    digest.refresh_from_db()
    assert (digest.enabled, digest.armed, digest.next_due) == (True, False, None)
    assert any(message.startswith("Resumed") for message in messages_of(response))


def test_schedule_buttons_take_only_posts(root: Client, digest: Schedule) -> None:
    """A GET runs nothing."""
    assert root.get(button_url(digest, "run_now")).status_code == 405
    assert not Run.objects.exists()


def test_schedule_run_now_refused_without_add_run(changer: Client, digest: Schedule) -> None:
    """Staff who may change the schedule but not start runs: refused in words, no run."""
    response = changer.post(button_url(digest, "run_now"), follow=True)
    assert not Run.objects.exists()
    assert messages_of(response) == ["digest: you may not start runs (needs django_weft.add_run)"]
    changer.post(button_url(digest, "pause"))
    assert not Schedule.objects.get(pk=digest.pk).enabled, "pausing needs no add_run"


def test_schedule_buttons_refused_for_a_viewer(viewer: Client, digest: Schedule) -> None:
    """View-only staff: every button is refused with the service layer's words."""
    for button in ("run_now", "pause"):
        response = viewer.post(button_url(digest, button), follow=True)
        (message,) = messages_of(response)
        assert "you may not" in message
        assert "needs django_weft.change_schedule" in message
    assert not Run.objects.exists()
    assert Schedule.objects.get(pk=digest.pk).enabled


def test_schedule_pages_closed_to_non_staff(outsider: Client, digest: Schedule) -> None:
    """Not staff: every page, endpoint and button sends to the admin's login; nothing runs."""
    for url in (
        change_url(digest),
        fires_url(digest),
        fires_url(),
        button_url(digest, "run_now"),
        button_url(digest, "pause"),
    ):
        response = outsider.post(url) if "fires" not in url else outsider.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url
    assert not Run.objects.exists()
    assert Schedule.objects.get(pk=digest.pk).enabled


def test_schedule_button_of_a_missing_schedule_is_404(root: Client) -> None:
    url = reverse("admin:django_weft_schedule_pause", args=[12345])
    assert root.post(url).status_code == 404


# -- the next fires' endpoint -----------------------------------------------------------------


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_fires_follow_the_unsaved_plan(root: Client, digest: Schedule) -> None:
    """The endpoint plans the form's values, not the stored row's: nothing is saved."""
    answer = root.get(fires_url(digest), plan(cron="15 9 * * 1-5", timezone="Europe/Berlin"))
    assert answer.status_code == 200
    data = answer.json()
    assert data["errors"] == {}
    assert data["plan"] == "09:15 on weekdays, Europe/Berlin"
    assert len(data["fires"]) == 10
    assert data["fires"][0] == {
        "due": "2026-03-09T08:15:00+00:00",
        "local": "2026-03-09 09:15 CET",
        "note": "",
    }
    assert "<li>2026-03-09 08:15 UTC &middot; 2026-03-09 09:15 CET</li>" in data["html"]
    assert Schedule.objects.get(pk=digest.pk).cron == "0 7 * * *"


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_fires_of_an_edited_interval_start_from_now(
    root: Client, digest: Schedule
) -> None:
    """An interval typed over an armed row fires on a grid from now, as it will once saved."""
    row = Schedule.objects.create(name="tick", job="content.cleanup", every=timedelta(hours=1))
    Schedule.objects.filter(pk=row.pk).update(
        armed=True, next_due=datetime(2026, 3, 7, 11, 20, tzinfo=UTC)
    )
    kept = root.get(fires_url(row), plan(every="01:00:00")).json()
    assert kept["fires"][0]["due"] == "2026-03-07T11:20:00+00:00", "its own grid"
    edited = root.get(fires_url(row), plan(every="00:30:00")).json()
    assert edited["fires"][0]["due"] == "2026-03-07T11:30:00+00:00", "now + 30 minutes"
    assert edited["plan"] == "every 30 minutes"


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"cron": "61 * * * *", "timezone": "UTC"}, "cron", 'minute "61" is out of range 0-59'),
        ({"cron": "0 25 * * *", "timezone": "UTC"}, "cron", 'hour "25" is out of range 0-23'),
        ({"cron": "0 7 * * *", "timezone": "Mars/Olympus"}, "timezone", '"Mars/Olympus"'),
        ({"cron": "0 7 * * *"}, "timezone", "needs an IANA time zone"),
        ({"every": "-00:05:00"}, "every", "must be positive"),
        ({}, "cron", "Give exactly one of cron, every and at"),
    ],
)
def test_schedule_fires_disappear_while_the_plan_is_invalid(
    root: Client, digest: Schedule, values: dict[str, str], field: str, words: str
) -> None:
    """An invalid plan: no fires, and the field's own message (field, value and range)."""
    data = root.get(fires_url(digest), plan(**values)).json()
    assert data["fires"] == []
    assert "weft-next-fires" not in data["html"]
    assert words in " ".join(data["errors"][field]), data["errors"]


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_fires_on_the_add_page(root: Client) -> None:
    """The add page's endpoint plans what is typed before there is a row."""
    data = root.get(fires_url(), plan(cron="*/15 * * * *", timezone="UTC")).json()
    assert data["plan"] == "every 15 minutes"
    assert data["fires"][0]["due"] == "2026-03-07T11:15:00+00:00"
    assert not Schedule.objects.exists()


def test_schedule_fires_endpoint_follows_the_page_permissions(
    viewer: Client, changer: Client, digest: Schedule
) -> None:
    """Whoever sees the page gets its fires (a viewer: the stored plan); the add page's
    endpoint needs add_schedule; staff without view_schedule get nothing."""
    stored = viewer.get(fires_url(digest), plan(cron="61 * * * *")).json()
    assert stored["errors"] == {}, "a read-only page types nothing: the stored plan"
    assert stored["plan"] == "07:00 every day, America/Toronto"
    assert viewer.get(fires_url()).status_code == 403
    assert changer.get(fires_url(digest), plan(cron="0 8 * * *", timezone="UTC")).json()[
        "plan"
    ] == ("08:00 every day, UTC")
    stranger = client_for("stranger")
    assert stranger.get(fires_url(digest)).status_code == 403


# -- the args form ----------------------------------------------------------------------------


def schedule_form(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "greeting",
        "job": "tests.greet",
        "enabled": "on",
        "cron": "",
        "timezone": "",
        "every": "01:00:00",
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


def test_schedule_args_form_from_a_serializer(root: Client) -> None:
    """A job with an args serializer gets one input per field; they save as its args."""
    schedule = Schedule.objects.create(
        name="remind", job="content.remind", args={"text": "renew"}, every=timedelta(hours=1)
    )
    page = root.get(change_url(schedule)).content.decode()
    assert 'name="args.text"' in page
    assert 'value="renew"' in page
    response = root.post(
        change_url(schedule),
        schedule_form(name="remind", job="content.remind", **{"args.__inputs": "1"})
        | {"args.text": "renew the domain"},
    )
    assert response.status_code == 302
    assert Schedule.objects.get(pk=schedule.pk).args == {"text": "renew the domain"}
    response = root.post(
        change_url(schedule),
        schedule_form(name="remind", job="content.remind")
        | {"args.__inputs": "1", "args.text": ""},
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["args"] == [
        "text: This field may not be blank."
    ]


def test_schedule_args_form_of_numbers_and_booleans(root: Client) -> None:
    """Numbers and checkboxes are read as JSON numbers and booleans."""
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form(name="nap", job="tests.sleep")
        | {"args.__inputs": "1", "args.seconds": "2.5"},
    )
    assert response.status_code == 302
    assert Schedule.objects.get(name="nap").args == {"seconds": 2.5}
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form(name="chain", job="tests.chain") | {"args.__inputs": "1", "args.fail": "on"},
    )
    assert response.status_code == 302
    assert Schedule.objects.get(name="chain").args == {"fail": True}


def test_schedule_args_form_from_a_function_signature(root: Client) -> None:
    """A job without a serializer: one input per keyword arg; defaults need no value."""
    page = root.get(reverse("admin:django_weft_schedule_add") + "?job=tests.greet").content
    text = page.decode()
    assert 'name="args.name"' in text
    assert 'name="args.times"' in text
    assert "Default: &quot;hello&quot;." in text
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form() | {"args.__inputs": "1", "args.name": "Ada", "args.times": "3"},
    )
    assert response.status_code == 302
    assert Schedule.objects.get().args == {"name": "Ada", "times": 3}
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form(name="again") | {"args.__inputs": "1", "args.name": "Ada", "args.times": "x"},
    )
    assert response.context["adminform"].form.errors["args"] == [
        'times: "x" is not a whole number.'
    ]


def test_schedule_args_as_json_with_a_clear_error(root: Client) -> None:
    """A job whose args no inputs can list (``**options``, or not deployed) takes JSON;
    JSON that does not parse says so and how to write it."""
    page = root.get(reverse("admin:django_weft_schedule_add") + "?job=tests.anything").content
    assert b'<textarea name="args"' in page
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form(name="any", job="tests.anything", args='{"colour": "teal"'),
    )
    (message,) = response.context["adminform"].form.errors["args"]
    assert message.startswith("Not valid JSON (")
    assert 'write the args as a JSON object, e.g. {"text": "hello"}' in message
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form(name="any", job="tests.anything", args='["teal"]'),
    )
    assert response.context["adminform"].form.errors["args"] == [
        'Expected a JSON object of named args, e.g. {"text": "hello"}, not ["teal"].'
    ]
    response = root.post(
        reverse("admin:django_weft_schedule_add"),
        schedule_form(name="any", job="tests.anything", args='{"colour": "teal"}'),
    )
    assert response.status_code == 302
    assert Schedule.objects.get(name="any").args == {"colour": "teal"}


def test_schedule_args_endpoint_gives_the_inputs_of_a_picked_job(
    root: Client, viewer: Client, digest: Schedule
) -> None:
    """Picking another job asks for its args' inputs; only editors of the page may ask."""
    url = reverse("admin:django_weft_schedule_args", args=[digest.pk])
    html = root.get(url, {"job": "content.remind"}).json()["html"]
    assert 'name="args.text"' in html
    assert 'data-job="content.remind"' in html
    html = root.get(reverse("admin:django_weft_schedule_args_new"), {"job": "no.such"}).json()
    assert '<textarea name="args"' in html["html"]
    assert viewer.get(url, {"job": "content.remind"}).status_code == 403
    assert viewer.get(reverse("admin:django_weft_schedule_args_new")).status_code == 403


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_page_moments_to_the_second_with_the_zone(root: Client, digest: Schedule) -> None:
    """The last run's moments say seconds, UTC and the schedule's wall clock."""
    Schedule.objects.filter(pk=digest.pk).update(
        last_started=datetime(2026, 3, 7, 12, 0, 1, 250000, tzinfo=UTC)
    )
    page = root.get(change_url(digest)).content.decode()
    assert "2026-03-07 12:00:01 UTC (2026-03-07 07:00:01 EST, America/Toronto)" in page
    assert "250000" not in page


def test_schedule_buttons_need_the_csrf_token(digest: Schedule) -> None:
    """A button's POST without the page's CSRF token is refused before anything runs."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_superuser("csrf", "c@example.com", "pw"))
    assert client.post(button_url(digest, "run_now")).status_code == 403
    assert client.post(button_url(digest, "pause")).status_code == 403
    assert not Run.objects.exists()
    assert Schedule.objects.get(pk=digest.pk).enabled
    page = client.get(change_url(digest)).content.decode()
    form = page[page.index('class="weft-sch-button"') :].split("</form>", 1)[0]
    assert 'name="csrfmiddlewaretoken"' in form


def test_schedule_owner_runs_their_schedule_now(digest: Schedule) -> None:
    """Staff who own a schedule and may start runs use its page and buttons without any
    schedule permission: ownership is decided by the service layer's rules."""
    owner = get_user_model().objects.create_user("ada", password="pw", is_staff=True)
    owner.user_permissions.add(Permission.objects.get(codename="add_run"))
    Schedule.objects.filter(pk=digest.pk).update(owner=owner)
    client = Client()
    client.force_login(owner)
    page = client.get(change_url(digest)).content.decode()
    assert 'name="run-now"' in page
    client.post(button_url(digest, "run_now"))
    assert Run.objects.get().owner_id == owner.pk


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_schedule_page_of_a_paused_schedule(root: Client) -> None:
    """A paused schedule says so, and lists what it would fire if resumed now (an
    interval from now, not its old grid)."""
    row = Schedule.objects.create(name="tick", job="content.cleanup", every=timedelta(hours=1))
    Schedule.objects.filter(pk=row.pk).update(
        enabled=False, armed=True, next_due=datetime(2026, 3, 7, 11, 20, tzinfo=UTC)
    )
    page = root.get(change_url(row)).content.decode()
    assert "Paused: nothing fires until it is resumed. Resumed now, it would fire:" in page
    assert "<li>2026-03-07 12:00 UTC &middot;" in page
    assert 'name="resume"' in page
