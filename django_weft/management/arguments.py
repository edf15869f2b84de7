"""The argument types of the management commands: each turns text into a value, or
refuses it with a message that names the value and what would be accepted."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string

from django_weft.management.serve import parse_address
from django_weft.timing.clocks import Clock
from django_weft.timing.preview import Period, parse_period


def period(text: str) -> Period:
    try:
        return parse_period(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def as_period(flag: str, value: Period | timedelta) -> Period:
    """A period that call_command() was handed as a timedelta, or a CommandError naming
    ``flag`` when it is not positive."""
    if isinstance(value, Period):
        return value
    try:
        return Period.of(value)
    except ValueError as error:
        raise CommandError(f"{flag}: {error}") from None


def moment(text: str) -> datetime:
    parsed = parse_datetime(text)
    if parsed is None:
        raise argparse.ArgumentTypeError(
            f'"{text}" is not an ISO-8601 moment, e.g. 2026-03-07T11:00Z'
        )
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def address(text: str) -> tuple[str, int]:
    try:
        return parse_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'"{text}" is not a whole number') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'"{text}" is not a number of seconds') from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


def clock_path(text: str) -> str:
    try:
        cls = import_string(text)
    except ImportError as error:
        raise argparse.ArgumentTypeError(f'cannot import clock "{text}": {error}') from None
    if not (isinstance(cls, type) and issubclass(cls, Clock)):
        raise argparse.ArgumentTypeError(
            f'"{text}" is not a django_weft.timing.clocks.Clock subclass'
        )
    return text


def writable_file(text: str) -> Path:
    """A file this process can create or touch: its folder exists and is writable."""
    path = Path(text)
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f'"{text}": the folder {folder} does not exist')
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f'"{text}" is not writable by this process')
    return path


def convert_keywords(
    options: dict[str, Any], converters: Mapping[str, Callable[[str], object]]
) -> None:
    """Put the options call_command() was given as keywords through their argparse types.

    Keywords skip argparse, so ``call_command("runjobs", concurrency=0)`` would otherwise
    reach the worker unchecked; a value the type refuses becomes the CommandError the
    command line gives, naming the flag.
    """
    for name, convert in converters.items():
        value = options.get(name)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                options[name] = convert(str(value))
            except argparse.ArgumentTypeError as error:
                raise CommandError(f"--{name.replace('_', '-')}: {error}") from None
