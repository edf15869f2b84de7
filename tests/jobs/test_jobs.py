"""Registering jobs, and the args of a job that has no args serializer."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_weft.exceptions import InvalidArgs
from django_weft.jobs.registry import job, registry
from django_weft.models import Run
from django_weft.operations import start
from django_weft.testing import Rehearsal


def test_job_without_serializer_takes_its_functions_keyword_args() -> None:
    """Defaults may be left out; the stored args are what was given."""
    greet = registry.get("tests.greet")
    assert greet.validate_args({"name": "Ada"}) == {"name": "Ada"}
    assert greet.validate_args({"name": "Ada", "times": 2}) == {"name": "Ada", "times": 2}


@pytest.mark.parametrize(
    ("args", "field", "says"),
    [
        ({}, "name", "required"),
        ({"name": "Ada", "tone": "warm"}, "tone", "accepts: greeting, name, times"),
        ({"name": object()}, "name", "Not a JSON value"),
    ],
)
def test_job_without_serializer_refuses_what_its_function_cannot_take(
    args: dict[str, object], field: str, says: str
) -> None:
    """A missing required arg, an unknown one, a value JSON cannot hold: named."""
    with pytest.raises(InvalidArgs) as refused:
        registry.get("tests.greet").validate_args(args)
    assert says in " ".join(refused.value.errors[field])


def test_job_with_keyword_catch_all_takes_any_json_args() -> None:
    """A function with **kwargs takes any JSON args."""
    assert registry.get("tests.anything").validate_args({"a": [1], "b": None}) == {
        "a": [1],
        "b": None,
    }


@pytest.mark.django_db(transaction=True)
def test_job_without_serializer_receives_its_args(rehearsal: Rehearsal) -> None:
    """The function gets the stored args as keywords, its defaults for the rest."""
    run = start("tests.greet", {"name": "Ada", "times": 2})
    rehearsal.advance(timedelta(0))
    assert Run.objects.get(pk=run.pk).result == "hello, Ada hello, Ada"


def test_job_registering_a_second_function_under_a_name_is_refused() -> None:
    """One name, one function: a clash fails where the job is defined."""

    def other(ctx: object) -> None:
        pass

    with pytest.raises(ValueError, match="already registered"):
        job("tests.greet")(other)
