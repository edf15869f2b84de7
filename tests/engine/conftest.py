"""Fixtures of the engine's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_weft.testing import DrivenClock
from django_weft.timing import clocks


@pytest.fixture
def requests_on_clock(clock: DrivenClock) -> Iterator[None]:
    """The test's driven clock installed for the process, as ``runjobs`` installs its
    worker's: a run started from Python lives on the worker's time."""
    clocks.install_clock(clock)
    yield
    clocks.install_clock(None)
