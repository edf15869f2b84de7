"""Clocks the tests select with WEFT_CLOCK."""

from datetime import UTC, datetime

from django_weft.testing import DrivenClock


class March7(DrivenClock):
    """Saturday 2026-03-07 06:00 in Toronto, the day before the clocks go forward."""

    def __init__(self) -> None:
        super().__init__(datetime(2026, 3, 7, 11, 0, tzinfo=UTC))
