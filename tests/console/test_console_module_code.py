"""A stored module's page treats it as code: the source in a monospace editor that never
wraps, grants as a checklist of the registered host functions, each revision's changes
as a diff, *Try it* through the same start as the API's, the module's latest runs, and
the sandbox's layers on this host (probed for real)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from django_weft import operations
from django_weft.models import Module, Run, RunStatus
from django_weft.sandbox.host import host_functions
from django_weft.sandbox.modules import save_module
from django_weft.testing import Rehearsal
from tests.sandbox.test_module_permissions import edited, signed_in, stored, user
from tests.sandbox_helpers import limits  # noqa: F401  (and registers the tests' host functions)

ONE = "def default():\n    return 'one'\n"
TWO = "def default():\n    return 'two'\n\n\ndef add(a, b):\n    return host('tests.add', a, b)\n"


def change_page(client: Client, module: Module) -> str:
    return client.get(reverse("admin:django_weft_module_change", args=[module.pk])).content.decode()


@pytest.mark.django_db
def test_module_page_edits_source_as_code_and_grants_as_a_checklist() -> None:
    """The source is a monospace textarea that does not wrap and offers line numbers;
    each registered host function is a checkbox (ticked when granted) saying what it
    does, and a granted name the code no longer registers stays on the list."""
    owner = user("olga", "add_module", "view_module", "grant_host_function")
    host_functions.register("elsewhere.only", len)
    try:
        module = save_module(
            Module(name="m", source=ONE, grants=["tests.add", "elsewhere.only"], owner=owner)
        )
    finally:
        host_functions.unregister("elsewhere.only")
    page = change_page(signed_in(owner), module)
    (textarea,) = re.findall(r"<textarea[^>]*name=\"source\"[^>]*>", page)
    for attribute in ('class="weft-code"', 'wrap="off"', 'spellcheck="false"', "data-weft-code"):
        assert attribute in textarea
    assert "django_weft/module_editor.js" in page
    boxes = dict(re.findall(r'<input type="checkbox" name="grants" value="([^"]+)"([^>]*)>', page))
    assert {"tests.add", "tests.secret", "tests.record", "elsewhere.only"} <= set(boxes)
    assert "checked" in boxes["tests.add"]
    assert "checked" in boxes["elsewhere.only"]
    assert "checked" not in boxes["tests.secret"]
    assert "tests.add: A host function the tests grant: adds two numbers on the host." in page
    assert "elsewhere.only (not registered here)" in page


@pytest.mark.django_db
def test_module_grants_ticked_in_the_checklist_are_saved() -> None:
    """Ticking boxes grants those functions; the service layer still refuses a name it
    does not know, by name, and writes nothing."""
    owner = user("olga", "add_module", "view_module", "grant_host_function")
    client = signed_in(owner)
    add = reverse("admin:django_weft_module_add")
    refused = client.post(add, {"name": "m", "source": ONE, "grants": ["tests.add", "tests.nope"]})
    assert "No host function is named &quot;tests.nope&quot;" in refused.content.decode()
    assert not Module.objects.exists()
    saved = client.post(add, {"name": "m", "source": ONE, "grants": ["tests.add", "tests.record"]})
    assert saved.status_code == 302
    assert Module.objects.get().grants == ["tests.add", "tests.record"]


@pytest.mark.django_db
def test_module_revision_page_shows_what_changed() -> None:
    """A revision's page diffs its source and grants against the one before (or any
    other, ``?from=``); the history links to it and folds each whole source."""
    owner = user("olga", "view_module", "grant_host_function")
    module = stored(owner, source=ONE)
    operations.save_module_for(owner, edited(module, source=TWO, grants=["tests.add"]))
    client = signed_in(owner)
    url = reverse("admin:django_weft_module_revision", args=[module.pk, 2])
    assert f'href="{url}"' in change_page(client, module).replace("'", '"')
    page = client.get(url).content.decode()
    assert "Changes from revision 1 to revision 2." in page
    assert "<del>-    return &#x27;one&#x27;</del>" in page
    assert "<ins>+    return &#x27;two&#x27;</ins>" in page
    assert "<ins>+def add(a, b):</ins>" in page
    assert "<ins>+tests.add</ins>" in page
    first = client.get(reverse("admin:django_weft_module_revision", args=[module.pk, 1]))
    assert "Revision 1 is the first: all of it is new." in first.content.decode()
    against = client.get(url, {"from": "2"}).content.decode()
    assert "The source did not change." in against
    assert "The grants did not change." in against
    missing = client.get(reverse("admin:django_weft_module_revision", args=[module.pk, 9]))
    assert missing.status_code == 404


@pytest.mark.django_db
def test_module_revision_page_needs_the_module_page() -> None:
    """Who may not see the module's page may not read its history either."""
    module = stored(user("olga", "view_module"), source=ONE)
    stranger = signed_in(user("sam", "view_run"))
    page = stranger.get(reverse("admin:django_weft_module_revision", args=[module.pk, 1]))
    assert page.status_code == 403


def test_module_try_it_starts_a_run_of_the_approved_revision(rehearsal: Rehearsal) -> None:
    """*Try it* starts ``weft.module`` as the signed-in user with the function and args
    typed; a worker runs it in the sandbox and the module's page lists the run."""
    owner = user("olga", "add_run", "view_module", "grant_host_function")
    module = stored(owner, source=TWO, grants=["tests.add"])
    client = signed_in(owner)
    try_url = reverse("admin:django_weft_module_try", args=[module.pk])
    assert f'href="{try_url}"' in change_page(client, module)
    response = client.post(try_url, {"method": "add", "args": "[2, 3]"})
    run = Run.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:django_weft_run_change", args=[run.pk])
    assert (run.job, run.owner, run.args) == (
        "weft.module",
        owner,
        {"module": "m", "method": "add", "args": [2, 3]},
    )
    rehearsal.advance(timedelta(0))
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.DONE, 5)
    runs = change_page(client, module).split("<h2>Latest runs</h2>")[1]
    assert reverse("admin:django_weft_run_change", args=[run.pk]) in runs


@pytest.mark.django_db
def test_module_try_it_refusals() -> None:
    """No *Try it* for a user who may not start runs (its page answers 403) or may not use
    the module (the start is refused on the form, and nothing starts); bad JSON args are
    named on the form."""
    module = stored(user("olga", "view_module"), source=ONE)
    try_url = reverse("admin:django_weft_module_try", args=[module.pk])
    viewer = signed_in(user("vic", "view_module"))
    assert f'href="{try_url}"' not in change_page(viewer, module)
    assert viewer.post(try_url, {"method": "default", "args": "[]"}).status_code == 403
    starter = signed_in(user("sam", "add_run", "view_module"))
    assert f'href="{try_url}"' not in change_page(starter, module)
    refused = starter.post(try_url, {"method": "default", "args": "[]"}).content.decode()
    assert "use_module" in refused
    bad = starter.post(try_url, {"method": "default", "args": "[1,"}).content.decode()
    assert "Enter a valid JSON." in bad
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_module_page_lists_only_runs_the_viewer_sees_in_full() -> None:
    """The latest runs are those of this module the viewer sees in full: their own."""
    olga, sam = (
        user("olga", "add_run", "view_module"),
        user("sam", "add_run", "use_module", "view_module"),
    )
    module = stored(olga, source=ONE)
    other = stored(olga, source=ONE, name="other")
    start = operations.parse_start
    mine, _ = operations.start_for(
        olga, start(olga, {"job": "weft.module", "args": {"module": "m"}})
    )
    theirs, _ = operations.start_for(
        sam, start(sam, {"job": "weft.module", "args": {"module": "m"}})
    )
    elsewhere, _ = operations.start_for(
        olga, start(olga, {"job": "weft.module", "args": {"module": other.name}})
    )
    runs = change_page(signed_in(olga), module).split("<h2>Latest runs</h2>")[1]
    assert str(mine.pk)[:8] in runs
    assert str(theirs.pk)[:8] not in runs
    assert str(elsewhere.pk)[:8] not in runs


@pytest.mark.django_db
def test_module_page_says_whether_this_host_contains_modules() -> None:
    """The page lists each sandbox layer as this host gives it (a real child probed) and
    says whether modules run here."""
    owner = user("olga", "view_module")
    page = change_page(signed_in(owner), stored(owner, source=ONE))
    status = page.split("The sandbox on this host")[1]
    for layer in ("limits", "restricted_python", "audit_hook", "seccomp", "network_namespace"):
        assert f"<td>{layer}</td>" in status
    assert "Modules run here: every layer that contains them is on." in status


@pytest.mark.django_db
def test_module_page_says_when_there_is_no_host_function_to_grant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A project that registers no host function gets a sentence, not an empty list."""
    owner = user("olga", "view_module")
    module = stored(owner, source=ONE)
    monkeypatch.setattr(host_functions, "_functions", {})
    page = change_page(signed_in(owner), module)
    assert "This project registers no host function" in page
    assert 'name="grants"' not in page
