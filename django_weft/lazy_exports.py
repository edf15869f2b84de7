"""Public names loaded on first use, for a package's ``__getattr__`` (PEP 562).

``django_weft`` and ``django_weft.tasks`` each keep a map of the names they offer to the
module each lives in, so importing the package imports none of those modules: no
settings read, no models loaded, no tasks framework needed until a name is used. This
module imports nothing of the package, so a package's ``__init__`` can use it first.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def load_export(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any], name: str
) -> Any:
    """``name`` from the module ``homes`` gives for it, kept in ``namespace`` for next time.

    A name ``homes`` does not list is the AttributeError Python raises for a missing module
    attribute, naming ``package`` and ``name``, so ``from package import name`` fails as usual.
    """
    try:
        home = homes[name]
    except KeyError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(home), name)
    namespace[name] = value
    return value
