"""Swappable parts (the clock, the executor, the document policy) are import strings in
settings; they are imported once each and forgotten when a ``WEFT_*`` setting changes,
so ``override_settings`` in tests takes effect at once."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string


@cache
def import_setting(path: str) -> Any:
    """The object at ``path``; ImportError when there is none."""
    return import_string(path)


@receiver(setting_changed)
def _forget_imports(*, setting: str, **kwargs: object) -> None:
    if setting.startswith("WEFT_"):
        import_setting.cache_clear()
