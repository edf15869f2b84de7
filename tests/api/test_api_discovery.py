"""Finding the API: its root, the schema's title and version and formats, Swagger UI and
Redoc served from local static files, and the browsable API for every principal.

Principals: anonymous, ``guest`` (signed in, no permission), ``owner`` (add_run and
add_schedule, owns the schedule and the run) and a superuser. The browsable API is the
HTML a browser gets (``Accept: text/html``); it must answer every one of them without a
500, and a refusal says in words what is missing.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.staticfiles import finders
from django.test import Client, override_settings
from django.urls import reverse

import django_weft
from django_weft.jobs.registry import registry
from django_weft.models import Run, Schedule
from django_weft.operations import start

pytestmark = pytest.mark.django_db

ROOT = "/api/weft/"
SCHEMA = "/api/weft/schema/"
SWAGGER = "/api/weft/schema/swagger-ui/"
REDOC = "/api/weft/schema/redoc/"
#: What Chromium sends when a user opens an address.
BROWSER_ACCEPT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
)
PRINCIPALS = ["anonymous", "guest", "owner", "superuser"]


def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def users() -> dict[str, Any]:
    return {
        "anonymous": None,
        "guest": make_user("guest"),
        "owner": make_user("owner", "add_run", "add_schedule"),
        "superuser": get_user_model().objects.create_superuser("admin"),
    }


@pytest.fixture
def rows(users: dict[str, Any]) -> tuple[Schedule, Run]:
    """A schedule and a queued run, both the owner's."""
    schedule = Schedule.objects.create(
        name="hourly cleanup", job="content.cleanup", every="1:00:00", owner=users["owner"]
    )
    return schedule, start(registry.get("content.cleanup"), owner=users["owner"])


def client_for(user: Any) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def reader() -> Client:
    """A signed-in user with no permission: the schema and its pages are for the API's users."""
    return client_for(get_user_model().objects.create_user("reader"))


def assets(page: str) -> list[str]:
    """Every address the page loads: scripts, styles, icons, Redoc's spec-url excepted."""
    return [html.unescape(url) for url in re.findall(r'(?:src|href)="([^"]*)"', page)]


# --- the root ------------------------------------------------------------------------


def test_api_root_lists_every_endpoint_for_anyone() -> None:
    """The API's mount answers with the address of each part, even signed out."""
    response = Client().get(ROOT, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json() == {
        "runs": "http://testserver/api/weft/runs/",
        "schedules": "http://testserver/api/weft/schedules/",
        "groups": "http://testserver/api/weft/groups/",
        "workflows": "http://testserver/api/weft/workflows/",
        "limits": "http://testserver/api/weft/limits/",
        "schema": "http://testserver/api/weft/schema/",
        "swagger-ui": "http://testserver/api/weft/schema/swagger-ui/",
        "redoc": "http://testserver/api/weft/schema/redoc/",
    }


def test_api_root_in_a_browser_links_the_endpoints_and_says_what_the_api_is() -> None:
    response = Client().get(ROOT, HTTP_ACCEPT=BROWSER_ACCEPT)
    page = response.content.decode()
    assert response.status_code == 200
    assert "django-weft&#x27;s API" in page or "django-weft's API" in page
    assert 'href="http://testserver/api/weft/schema/swagger-ui/"' in page


def test_api_root_is_not_in_the_schema() -> None:
    paths = reader().get(SCHEMA).json()["paths"]
    assert "/api/weft/" not in paths
    assert not any("swagger" in path or "redoc" in path for path in paths)


def test_example_project_serves_the_api_root_at_api() -> None:
    """/api/ was a 404 in the example; it is the root now, with the pages beside it."""
    urlconf = "example_project.urls"
    assert reverse("weft-api-root", urlconf=urlconf) == "/api/"
    assert reverse("weft-swagger-ui", urlconf=urlconf) == "/api/schema/swagger-ui/"
    assert reverse("weft-redoc", urlconf=urlconf) == "/api/schema/redoc/"


# --- the schema ----------------------------------------------------------------------


@pytest.mark.parametrize("accept", [None, BROWSER_ACCEPT, "application/json"])
def test_api_schema_is_json_by_default_with_the_package_title_and_version(
    accept: str | None,
) -> None:
    """Opened in a browser, fetched with curl or asked for JSON, the schema is JSON."""
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    response = reader().get(SCHEMA, **headers)
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] in (
        "application/vnd.oai.openapi+json",
        "application/json",
    )
    info = response.json()["info"]
    assert (info["title"], info["version"]) == ("django-weft", django_weft.__version__)
    assert "schedules" in info["description"]
    assert "django-weft.json" in response["Content-Disposition"]


#: Marks of the code's own docstrings, which a reader of the API pages cannot follow.
CODE_WORDS = re.compile(r":(func|class|meth|mod|data|attr):|``|permissions module|for the schema")


def descriptions(node: Any, where: str = "") -> list[tuple[str, str]]:
    """Every ``description`` of the schema, with where it is."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                found.append((where, value))
            else:
                found += descriptions(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += descriptions(value, f"{where}/{index}")
    return found


def test_api_schema_speaks_to_the_api_user_not_of_the_code() -> None:
    """The words Swagger UI and Redoc show are written for a caller of the API: none names
    a Python function, class or module, or says what a serializer is for."""
    schema = reader().get(SCHEMA).json()
    found = descriptions(schema)
    assert len(found) > 30
    assert [f"{where}: {text}" for where, text in found if CODE_WORDS.search(text)] == []


def test_api_schema_is_yaml_when_asked() -> None:
    client = reader()
    for response in (
        client.get(SCHEMA, {"format": "yaml"}),
        client.get(SCHEMA, HTTP_ACCEPT="application/vnd.oai.openapi"),
    ):
        assert response.status_code == 200
        assert response["Content-Type"].startswith("application/vnd.oai.openapi")
        info = yaml.safe_load(response.content)["info"]
        assert (info["title"], info["version"]) == ("django-weft", django_weft.__version__)


def test_api_schema_title_and_version_of_the_project_win() -> None:
    """A project that names its own schema (it describes its own views too) keeps its name."""
    client = reader()
    with override_settings(SPECTACULAR_SETTINGS={"TITLE": "Example site", "VERSION": "3.1"}):
        info = client.get(SCHEMA).json()["info"]
    assert (info["title"], info["version"]) == ("Example site", "3.1")
    assert client.get(SCHEMA).json()["info"]["title"] == "django-weft"


# --- Swagger UI and Redoc ------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (SWAGGER, {"swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"}),
        (REDOC, {"redoc.standalone.js"}),
    ],
)
def test_api_docs_page_loads_its_assets_from_local_static_files(
    url: str, expected: set[str]
) -> None:
    """Every script, style and icon is a static file of this project, none from a CDN."""
    response = reader().get(url, HTTP_ACCEPT=BROWSER_ACCEPT)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<title>django-weft API</title>" in page
    loaded = assets(page)
    assert {address.rsplit("/", 1)[-1] for address in loaded} >= expected
    for address in loaded:
        assert address.startswith("/static/drf_spectacular_sidecar/"), address
        found = finders.find(address.removeprefix("/static/"))
        assert found, f"{address} is not a static file of the project"
    assert "googleapis" not in page
    assert "cdn." not in page


def test_api_docs_pages_read_the_weft_schema() -> None:
    client = reader()
    swagger = client.get(SWAGGER, HTTP_ACCEPT=BROWSER_ACCEPT).content.decode()
    redoc = client.get(REDOC, HTTP_ACCEPT=BROWSER_ACCEPT).content.decode()
    assert '"/api/weft/schema/"' in swagger
    assert 'spec-url="/api/weft/schema/"' in redoc


# --- the browsable API, for every principal -----------------------------------------


def pages(schedule: Schedule, run: Run) -> list[str]:
    return [
        ROOT,
        "/api/weft/runs/",
        f"/api/weft/runs/{run.pk}/",
        f"/api/weft/runs/{run.pk}/abort/",
        "/api/weft/schedules/",
        f"/api/weft/schedules/{schedule.pk}/",
        f"/api/weft/schedules/{schedule.pk}/run-now/",
        "/api/weft/groups/",
        SCHEMA,
        SWAGGER,
        REDOC,
    ]


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_browsable_api_answers_every_page_for_every_principal(
    principal: str, users: dict[str, Any], rows: tuple[Schedule, Run]
) -> None:
    """No 500 anywhere: the read pages answer 200 to the signed in, 403 in words otherwise
    (the root answers everyone; the schema and its pages, 403 without a word: they are not
    DRF's pages); the POST-only actions answer 405 (or 403 signed out), with their form."""
    client = client_for(users[principal])
    schedule, run = rows
    for url in pages(schedule, run):
        response = client.get(url, HTTP_ACCEPT=BROWSER_ACCEPT)
        assert response.status_code < 500, (url, response.status_code)
        if url == ROOT:
            assert response.status_code == 200, url
        elif principal == "anonymous":
            assert response.status_code == 403, url
            if url not in (SCHEMA, SWAGGER, REDOC):
                assert "Authentication credentials were not provided." in response.content.decode()
        elif url in (SCHEMA, SWAGGER, REDOC):
            assert response.status_code == 200, url
        elif url.endswith(("/abort/", "/run-now/")):
            assert response.status_code == 405, url
            assert "Method \\&quot;GET\\&quot; not allowed." in response.content.decode()
        else:
            assert response.status_code == 200, url


def refusal(response: Any) -> str:
    """The ``detail`` the browsable API shows, unescaped."""
    found = re.search(r"&quot;detail&quot;: &quot;(.*?)&quot;", response.content.decode())
    assert found, response.content.decode()[:500]
    return html.unescape(found.group(1))


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_browsable_api_forms_post_or_refuse_in_words(
    principal: str, users: dict[str, Any], rows: tuple[Schedule, Run]
) -> None:
    """The HTML forms' posts (start, create, run now, abort) work for whoever may, and say
    to everyone else what they lack; the page around the answer never fails."""
    client = client_for(users[principal])
    schedule, run = rows
    posts = {
        "/api/weft/runs/": {"job": "content.cleanup"},
        "/api/weft/schedules/": {
            "name": f"by {principal}",
            "job": "content.cleanup",
            "every": "2:00:00",
        },
        f"/api/weft/schedules/{schedule.pk}/run-now/": {},
        f"/api/weft/runs/{run.pk}/abort/": {},
    }
    answers = {
        url: client.post(url, data, HTTP_ACCEPT=BROWSER_ACCEPT) for url, data in posts.items()
    }
    codes = {url.split("/")[-2]: response.status_code for url, response in answers.items()}
    if principal == "anonymous":
        assert set(codes.values()) == {403}
        assert {refusal(r) for r in answers.values()} == {
            "Authentication credentials were not provided."
        }
    elif principal == "guest":
        assert set(codes.values()) == {403}
        assert [refusal(r) for r in answers.values()] == [
            "you may not start runs (needs django_weft.add_run)",
            "you may not create schedules (needs django_weft.add_schedule)",
            "you may not run now schedule hourly cleanup (needs django_weft.change_schedule,"
            " or to be its owner)",
            f"you may not abort run {run.pk} (needs django_weft.change_run, or to be its owner)",
        ]
    else:
        assert codes == {"runs": 201, "schedules": 201, "run-now": 201, "abort": 202}
        again = client.post(f"/api/weft/runs/{run.pk}/abort/", HTTP_ACCEPT=BROWSER_ACCEPT)
        assert again.status_code == 409
        assert refusal(again) == f"run {run.pk} has already finished (aborted)"


def test_browsable_api_run_list_offers_the_start_form_to_who_may_post(
    users: dict[str, Any],
) -> None:
    """The form for a start has the start's fields (job, args), not a run's."""
    page = client_for(users["owner"]).get("/api/weft/runs/", HTTP_ACCEPT=BROWSER_ACCEPT)
    text = page.content.decode()
    assert 'name="job"' in text
    assert "idempotency_key" not in text.split('id="post-generic-content-form"')[-1]


def test_api_redoc_page_keeps_images_to_this_site() -> None:
    """Redoc's bundle always shows its maker's logo from their CDN; the page's policy
    refuses it (the browser test sees no request leave the server)."""
    response = reader().get(REDOC, HTTP_ACCEPT=BROWSER_ACCEPT)
    assert response["Content-Security-Policy"] == "img-src 'self' data: blob:"
