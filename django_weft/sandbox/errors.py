"""Why a module's call failed: one error class per kind of failure.

A ``weft.module`` run that fails with one of these is ``failed`` with the class name
as its error type and the message as its error, so the run's row says which limit was
hit, which import or attribute was refused, which line did not compile.
"""

from __future__ import annotations

from django_weft.exceptions import WeftError


class SandboxError(WeftError):
    """A module's call failed; ``output`` holds what it printed before it did."""

    def __init__(self, message: str, *, output: str = "") -> None:
        self.output = output
        super().__init__(message)


class UnknownModule(SandboxError, LookupError):
    """No stored module has that name."""


class ModuleNotApproved(SandboxError):
    """The module has no approved revision: nothing of it may run yet."""


class ModuleNotAllowed(SandboxError):
    """The run's owner may not call the module (not its owner, no ``use_module``)."""


class ModuleSyntaxError(SandboxError):
    """The source does not compile under RestrictedPython; the message names the line."""


class ForbiddenImport(SandboxError):
    """The module imported a module outside ``WEFT_SANDBOX_IMPORTS``."""


class ForbiddenAccess(SandboxError):
    """A guard or the audit hook refused an attribute, a builtin or an operation."""


class MissingMethod(SandboxError):
    """The module has no callable of the name the call asked for."""


class ModuleRaised(SandboxError):
    """The module's code raised an exception of its own; the message names the line."""


class LimitExceeded(SandboxError):
    """A limit was hit: CPU time, wall clock, memory, recursion, output, answer size ..."""


class InvalidAnswer(SandboxError):
    """The module answered something the run cannot store: not JSON, nested deeper than
    :data:`~django_weft.sandbox.protocol.MAX_DEPTH` allows, or holding a NUL character."""


class HostCallRefused(SandboxError):
    """The module called a host function it is not granted (or that does not exist)."""


class ProtocolViolation(SandboxError):
    """The child sent something the protocol does not allow; it was killed."""


class LayerUnavailable(SandboxError):
    """A layer the settings require (or a mandatory one) could not start."""


class ChildFailed(SandboxError):
    """The child process died without an answer, for a reason no limit explains."""


#: The error each kind of failure a child reports ends as.
FAILURES: dict[str, type[SandboxError]] = {
    "syntax": ModuleSyntaxError,
    "forbidden_import": ForbiddenImport,
    "forbidden_access": ForbiddenAccess,
    "missing_method": MissingMethod,
    "raised": ModuleRaised,
    "limit": LimitExceeded,
    "invalid_answer": InvalidAnswer,
    "layer": LayerUnavailable,
}
