"""Which layers contain a module, so that a run fails closed where one of them is off.

The Python layers (RestrictedPython, its guards, the audit hook) are one bug away from
plain Python; what holds after such a bug are the kernel's layers. A module runs only
where all of these are active, each of which holds on its own:

- ``limits``: CPU, memory, descriptors, no file writes, no processes (as non-root);
- ``network_namespace``: no network, TCP or UDP, and no abstract Unix socket outside;
- ``seccomp``: no socket of any family (so no Unix socket file either), no fork, no
  exec, no signal, none of the calls that reach past the process;
- a *file layer*, ``landlock`` or ``bubblewrap``: either one hides every host path but
  the Python installation (the standard library, read-only), ``/proc`` of other
  processes included.

``WEFT_SANDBOX_UNSAFE_UNCONTAINED = True`` lets modules run with only the layers that
start: for code you trust, never for code you do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: Layers each of which must be active for a module to run.
CONTAINING_LAYERS = ("limits", "network_namespace", "seccomp")

#: Layers of which at least one must be active: each hides the host's files on its own.
FILE_LAYERS = ("landlock", "bubblewrap")

#: How a message that refuses to run uncontained ends.
UNSAFE_HINT = "set WEFT_SANDBOX_UNSAFE_UNCONTAINED = True only for code you trust"


def missing(report: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What of the containing layers is off in ``report`` (the layers of one child), each
    as ``the layer "seccomp" is off (<reason>)``; empty when the module is contained."""

    def off(name: str) -> str:
        reason = report.get(name, {}).get("reason") or "the child did not say"
        return f'the layer "{name}" is off ({reason})'

    found = [off(name) for name in CONTAINING_LAYERS if not report.get(name, {}).get("active")]
    if not any(report.get(name, {}).get("active") for name in FILE_LAYERS):
        found.append("no file layer is on: " + " and ".join(off(name) for name in FILE_LAYERS))
    return found


def describe(what_is_missing: list[str]) -> str:
    """:func:`missing`'s findings in one clause, the first one first."""
    return ", ".join(what_is_missing)


def refusal(what_is_missing: list[str]) -> str:
    """The message of a run refused because of :func:`missing`'s findings."""
    return f"the sandbox cannot contain the module: {describe(what_is_missing)}; {UNSAFE_HINT}"


def left_out(layers: Iterable[str]) -> list[str]:
    """The containing layers a ``WEFT_SANDBOX_LAYERS`` value does not even try, named."""
    tried = set(layers)
    named = [f'"{name}"' for name in CONTAINING_LAYERS if name != "limits" and name not in tried]
    if not tried & set(FILE_LAYERS):
        named.append('both file layers, "landlock" and "bubblewrap"')
    return named
