"""Who may read the API's schema, Swagger UI and Redoc: whoever may use the API.

Signed out, each answers what the API answers (403 with DRF's session authentication);
``WEFT_API_DOCS_PUBLIC = True`` opens them to everyone, and only ``True`` does: any
other value keeps them closed and is a system check error (``django_weft.E012``).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from tests.test_checks import only

pytestmark = pytest.mark.django_db

ROOT = "/api/weft/"
RUNS = "/api/weft/runs/"
#: Each page, and the Accept header a reader sends it.
DOCS = [
    ("/api/weft/schema/", "application/json"),
    ("/api/weft/schema/?format=yaml", "*/*"),
    ("/api/weft/schema/swagger-ui/", "text/html"),
    ("/api/weft/schema/redoc/", "text/html"),
]


def answers(client: Client) -> dict[str, int]:
    return {url: client.get(url, HTTP_ACCEPT=accept).status_code for url, accept in DOCS}


def signed_in() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_user("reader"))
    return client


def test_api_docs_refuse_signed_out_visitors_as_the_api_does() -> None:
    anonymous = Client()
    refused = anonymous.get(RUNS, HTTP_ACCEPT="application/json").status_code
    assert refused == 403
    assert answers(anonymous) == {url: refused for url, _ in DOCS}
    schema = anonymous.get(DOCS[0][0], HTTP_ACCEPT="application/json")
    assert schema.json() == {"detail": "Authentication credentials were not provided."}
    assert "paths" not in schema.content.decode()
    assert anonymous.get(ROOT, HTTP_ACCEPT="application/json").status_code == 200


def test_api_docs_answer_any_signed_in_user() -> None:
    assert answers(signed_in()) == {url: 200 for url, _ in DOCS}


def test_api_docs_public_setting_opens_them_to_everyone() -> None:
    with override_settings(WEFT_API_DOCS_PUBLIC=True):
        assert answers(Client()) == {url: 200 for url, _ in DOCS}
    with override_settings(WEFT_API_DOCS_PUBLIC=False):
        assert answers(Client()) == {url: 403 for url, _ in DOCS}


@pytest.mark.parametrize("value", ["yes", 1, "True", None])
def test_api_docs_public_setting_other_than_a_bool_keeps_them_closed_and_is_checked(
    value: Any,
) -> None:
    with override_settings(WEFT_API_DOCS_PUBLIC=value):
        assert answers(Client()) == {url: 403 for url, _ in DOCS}
        (message,) = only("django_weft.E012")
    assert message.msg == f"WEFT_API_DOCS_PUBLIC must be True or False, not {value!r}."
