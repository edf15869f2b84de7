"""Tests for django_weft.timing.wording: plans and daylight-saving notes in words, for operators."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from django_weft.timing.cron import CronError, Fire
from django_weft.timing.wording import describe, dst_note


@pytest.mark.parametrize(
    ("expression", "zone", "words"),
    [
        ("0 7 * * *", "America/Toronto", "07:00 every day, America/Toronto"),
        ("*/15 * * * *", "America/Toronto", "every 15 minutes"),
        ("30 9 * * 1-5", "Europe/Berlin", "09:30 on weekdays, Europe/Berlin"),
        ("0 0 1 * *", "UTC", "00:00 on day 1 of the month, UTC"),
        ("* * * * *", "UTC", "every minute"),
        ("0,30 * * * *", "UTC", "every 30 minutes"),
        ("*/5 * * 6-8 *", "UTC", "every 5 minutes in June, July and August, UTC"),
        ("*/15 * * * mon-fri", "UTC", "every 15 minutes on weekdays, UTC"),
        ("30 * * * *", "Asia/Kolkata", "every hour at :30, Asia/Kolkata"),
        ("0,20 * * * *", "UTC", "every hour at :00 and :20, UTC"),
        ("0 */2 * * *", "Europe/Berlin", "every 2 hours at :00, Europe/Berlin"),
        ("0 9,17 * * *", "UTC", "09:00 and 17:00 every day, UTC"),
        ("0,30 9 * * *", "UTC", "09:00 and 09:30 every day, UTC"),
        ("0 9 * * 0,6", "UTC", "09:00 on weekends, UTC"),
        ("0 9 * * sat,sun", "UTC", "09:00 on weekends, UTC"),
        ("0 9 * * fri,mon,wed", "UTC", "09:00 on Mondays, Wednesdays and Fridays, UTC"),
        ("5 4 * * 7", "UTC", "04:05 on Sundays, UTC"),
        ("0 9 * * sun,mon", "UTC", "09:00 on Mondays and Sundays, UTC"),
        ("0 0 L * *", "UTC", "00:00 on the last day of the month, UTC"),
        ("0 0 1,L * *", "UTC", "00:00 on day 1 and the last day of the month, UTC"),
        ("0 0 1,15 * *", "UTC", "00:00 on days 1 and 15 of the month, UTC"),
        ("0 0 1-7 * *", "UTC", "00:00 on days 1-7 of the month, UTC"),
        ("0 0 1 1 *", "UTC", "00:00 on 1 January, UTC"),
        ("0 12 29 2 *", "UTC", "12:00 on 29 February, UTC"),
        ("0 0 1 1,7 *", "UTC", "00:00 on day 1 of the month in January and July, UTC"),
        ("0 9 * 12 *", "UTC", "09:00 every day in December, UTC"),
        ("0 9 * dec mon-fri", "UTC", "09:00 on weekdays in December, UTC"),
        # A written-out full field matches every day under "either" (Vixie's rule).
        ("0 12 1-31 * mon", "UTC", "12:00 every day, UTC"),
        ("0 12 ? * ?", "UTC", "12:00 every day, UTC"),
        # No short phrase: the expression itself, spaces tidied, and the zone in brackets.
        ("0 9 1-7 * 1", "Europe/Berlin", "0 9 1-7 * 1 (Europe/Berlin)"),
        ("0 12 10 * mon", "UTC", "0 12 10 * mon (UTC)"),
        ("0 0 */7 * 1", "UTC", "0 0 */7 * 1 (UTC)"),
        ("0 9 * * 1#2", "UTC", "0 9 * * 1#2 (UTC)"),
        ("0 9 15W * *", "UTC", "0 9 15W * * (UTC)"),
        ("*/7 * * * *", "UTC", "*/7 * * * * (UTC)"),
        ("*/20  9-17 * * *", "UTC", "*/20 9-17 * * * (UTC)"),
        ("0 0 1,5,9,13,17 * *", "UTC", "0 0 1,5,9,13,17 * * (UTC)"),
    ],
)
def test_describe(expression: str, zone: str, words: str) -> None:
    """A common plan is said in a short phrase; any other is given back as written."""
    assert describe(expression, zone) == words


def test_describe_invalid_expression() -> None:
    """An expression that does not parse raises the same CronError as CronPlan."""
    with pytest.raises(CronError) as caught:
        describe("61 * * * *", "UTC")
    assert str(caught.value) == 'invalid cron "61 * * * *": minute "61" is out of range 0-59'
    assert caught.value.field == "cron"


@pytest.mark.parametrize(
    ("note", "words"),
    [
        ("", ""),
        ("shifted", "DST gap: 02:30 does not exist, moved to the end of the gap"),
        ("skipped", "DST gap: 02:30 does not exist, skipped"),
        ("repeated", "DST fold: 02:30 happens twice, second run"),
    ],
)
def test_dst_note(note: str, words: str) -> None:
    """Each kind of fire is said as the preview prints it, with the wall time that matched."""
    fire = Fire(datetime(2026, 3, 8, 7, tzinfo=UTC), datetime(2026, 3, 8, 2, 30), note)
    assert dst_note(fire) == words
