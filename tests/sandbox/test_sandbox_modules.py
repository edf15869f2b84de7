"""Stored modules: the save path (compile check naming the line, grants, revisions and
their history), the admin pages over it, and a schedule that runs one."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from django_weft.engine.schedules.saving import save_schedule
from django_weft.models import Module, ModuleRevision, Schedule
from django_weft.sandbox.modules import save_module
from tests import sandbox_helpers  # noqa: F401  (registers the tests' host functions)

pytestmark = pytest.mark.django_db


def test_save_module_keeps_every_revision() -> None:
    """Each save is the next revision, and the history keeps each one's source and grants."""
    module = save_module(Module(name="report/daily", source="def default():\n    return 1\n"))
    assert module.revision == 1
    module.source = "def default():\n    return 2\n"
    module.grants = ["tests.add"]
    save_module(module)
    assert Module.objects.get(name="report/daily").revision == 2
    history = list(module.revisions.values_list("revision", "source", "grants"))
    assert history == [
        (2, "def default():\n    return 2\n", ["tests.add"]),
        (1, "def default():\n    return 1\n", []),
    ]


def test_save_module_refuses_a_syntax_error_naming_the_line() -> None:
    """A source that does not compile is refused on ``source`` with its line; nothing is written."""
    with pytest.raises(ValidationError) as refused:
        save_module(Module(name="report/daily", source="def default():\n    return (\n"))
    assert "Line 2: SyntaxError" in refused.value.message_dict["source"][0]
    assert not Module.objects.exists()
    assert not ModuleRevision.objects.exists()


def test_save_module_refuses_what_restricted_python_refuses() -> None:
    """A source RestrictedPython refuses (a name starting with "_") is refused naming the line."""
    with pytest.raises(ValidationError) as refused:
        save_module(Module(name="x", source="def default():\n    return ().__class__\n"))
    assert refused.value.message_dict["source"] == [
        'Line 2: "__class__" is an invalid attribute name because it starts with "_".'
    ]


@pytest.mark.parametrize(
    ("grants", "says"),
    [
        (["tests.nope"], 'No host function is named "tests.nope".'),
        ("tests.add", "Grants must be a list of host function names"),
        ([1], "Grants must be a list of host function names"),
    ],
)
def test_save_module_refuses_bad_grants(grants: Any, says: str) -> None:
    """Grants must be a list naming registered host functions."""
    with pytest.raises(ValidationError) as refused:
        save_module(Module(name="x", source="x = 1\n", grants=grants))
    assert says in refused.value.message_dict["grants"][0]


def test_save_module_names_only_the_unknown_grant() -> None:
    """A refused grant names the unknown name only, never the registered host functions."""
    with pytest.raises(ValidationError) as refused:
        save_module(Module(name="x", source="x = 1\n", grants=["tests.add", "tests.nope"]))
    assert refused.value.message_dict["grants"] == ['No host function is named "tests.nope".']
    assert "tests.secret" not in str(refused.value)


@pytest.mark.parametrize("name", ["", "report//daily", "/report", "report daily", "rép/ort"])
def test_save_module_refuses_bad_names(name: str) -> None:
    """A module's name is words joined by "/"."""
    with pytest.raises(ValidationError) as refused:
        save_module(Module(name=name, source="x = 1\n"))
    assert "name" in refused.value.message_dict


def test_schedule_of_an_unknown_module_is_refused() -> None:
    """A schedule running ``weft.module`` for a module nobody stored is refused on save."""
    with pytest.raises(ValidationError) as refused:
        save_schedule(
            Schedule(
                name="report", job="weft.module", args={"module": "report/none"}, every="1:00:00"
            )
        )
    assert refused.value.message_dict["args"] == [
        'module: No stored module is named "report/none".'
    ]


@pytest.mark.parametrize(
    ("args", "field", "says"),
    [
        ({"module": "m", "method": "_private"}, "method", "starts with a letter"),
        ({"module": "m", "args": "text"}, "args", "a list (positional) or an object"),
    ],
)
def test_schedule_of_a_module_with_bad_args(args: dict[str, Any], field: str, says: str) -> None:
    """``method`` must be a plain name and ``args`` a list or an object."""
    save_module(Module(name="m", source="def default():\n    return 1\n"))
    with pytest.raises(ValidationError) as refused:
        save_schedule(Schedule(name="s", job="weft.module", args=args, every="1:00:00"))
    assert any(
        message.startswith(f"{field}:") and says in message
        for message in refused.value.message_dict["args"]
    )


# -- the admin -----------------------------------------------------------------------------------


def test_admin_module_add_refuses_a_syntax_error(admin_client: Client) -> None:
    """The add form shows RestrictedPython's message with the line, and saves nothing."""
    page = admin_client.post(
        reverse("admin:django_weft_module_add"),
        {"name": "report/daily", "source": "def default():\n    return (\n", "grants": []},
    )
    assert page.status_code == 200
    assert "Line 2: SyntaxError" in page.content.decode()
    assert not Module.objects.exists()


def test_admin_module_add_refuses_unknown_grants(admin_client: Client) -> None:
    page = admin_client.post(
        reverse("admin:django_weft_module_add"),
        {"name": "report/daily", "source": "x = 1\n", "grants": ["tests.nope"]},
    )
    assert "No host function is named &quot;tests.nope&quot;" in page.content.decode()
    assert not Module.objects.exists()


def test_admin_module_saves_revisions_and_shows_the_history(admin_client: Client) -> None:
    """Saving in the admin makes the next revision, by the signed-in user, and the change
    page lists every revision with its source."""
    admin_client.post(
        reverse("admin:django_weft_module_add"),
        {"name": "report/daily", "source": "def default():\n    return 'one'\n", "grants": []},
    )
    module = Module.objects.get(name="report/daily")
    change = reverse("admin:django_weft_module_change", args=[module.pk])
    data = {
        "name": "report/daily",
        "source": "def default():\n    return 'two'\n",
        "grants": ["tests.add"],
        "revisions-TOTAL_FORMS": "1",
        "revisions-INITIAL_FORMS": "1",
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "1000",
        "revisions-0-id": str(module.revisions.get().pk),
        "revisions-0-module": str(module.pk),
    }
    response = admin_client.post(change, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    module.refresh_from_db()
    assert (module.revision, module.grants) == (2, ["tests.add"])
    # pytest-django's admin_client is signed in as "admin".
    assert set(module.revisions.values_list("author__username", flat=True)) == {"admin"}
    page = admin_client.get(change).content.decode()
    assert "return &#x27;one&#x27;" in page
    assert "return &#x27;two&#x27;" in page


def test_admin_module_list(admin_client: Client) -> None:
    save_module(Module(name="report/daily", source="x = 1\n", grants=["tests.add"]))
    page = admin_client.get(reverse("admin:django_weft_module_changelist")).content.decode()
    assert "report/daily" in page
    assert "tests.add" in page
