"""Runners: where a module's call runs. Chosen by ``WEFT_SANDBOX_RUNNER`` (an import string).

:class:`ProcessRunner`, the default, starts one fresh child process per call
(``python -I`` in its own process group, inside bubblewrap when it works here, no
descriptors inherited but its three pipes), or takes one a warm pool set up ahead.
The runner adds the host's view of the layers to the child's report, fails the call
when a layer that contains the module (:mod:`.containment`) or a required one is off,
and hands host calls to the registered host functions. :func:`host_layers`
asks the same of this host once, for the system check and the console.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from django_weft.conf import weft_settings
from django_weft.exceptions import RunAborted
from django_weft.loading import import_setting
from django_weft.sandbox import bubblewrap, containment
from django_weft.sandbox.config import SETUP_SECONDS, RoomConfig
from django_weft.sandbox.errors import LayerUnavailable, SandboxError
from django_weft.sandbox.host import host_functions
from django_weft.sandbox.pool import Pool
from django_weft.sandbox.process import Answer, Check, Child, ModuleCall
from django_weft.sandbox.protocol import MANDATORY_LAYERS, OPTIONAL_LAYERS, Limits
from django_weft.signals import sandbox_called

#: The child's command, after bubblewrap's when that layer is on.
CHILD_COMMAND = ("-I", "-B", "-X", "utf8", "-m", "django_weft.sandbox.child")

Layers = dict[str, dict[str, Any]]
OnReady = Callable[[Layers], None]


class Runner:
    """The interface: run one call in a sandbox and return its answer, or raise why not."""

    def run(
        self, call: ModuleCall, *, check: Check | None = None, on_ready: OnReady | None = None
    ) -> Answer:
        """Run ``call``; ``check`` is called while it runs (it may raise to stop the call),
        ``on_ready`` gets the report of the layers before the module's code runs."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the runner keeps (children waiting in a pool)."""


class ProcessRunner(Runner):
    """A fresh child process per call, from a warm pool when ``WEFT_SANDBOX_POOL_SIZE`` > 0."""

    def __init__(self) -> None:
        size = weft_settings.SANDBOX_POOL_SIZE
        self.pool = Pool(self.spawn, size) if size > 0 else None

    def command(self, config: RoomConfig) -> tuple[list[str], dict[str, Any]]:
        """The child's command line, and the report of the bubblewrap layer."""
        return child_command(config)

    def spawn(self, config: RoomConfig) -> Child:
        command, report = self.command(config)
        return Child(command, config, bubblewrap=report)

    def run(
        self, call: ModuleCall, *, check: Check | None = None, on_ready: OnReady | None = None
    ) -> Answer:
        config = RoomConfig.from_settings()
        child = (self.pool.take(config) if self.pool is not None else None) or self.spawn(config)
        try:
            layers = report_layers(child.wait_ready(check), child.bubblewrap)
            if on_ready is not None:
                on_ready(layers)
            require_layers(layers, config)
        except BaseException:
            child.kill()
            raise
        return child.call(call, host=host_functions.get, check=check)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def run_call(
    call: ModuleCall, *, check: Check | None = None, on_ready: OnReady | None = None
) -> Answer:
    """Run ``call`` on the configured runner, and tell ``sandbox_called`` how it ended.

    Every call of a stored module comes through here (a ``weft.module`` run,
    :func:`~django_weft.sandbox.calls.call_module`), so the signal counts them all.
    """
    began = time.monotonic()
    outcome = "error"
    try:
        answer = load_runner().run(call, check=check, on_ready=on_ready)
    except SandboxError as error:
        outcome = type(error).__name__
        raise
    except RunAborted:
        outcome = "aborted"
        raise
    else:
        outcome = "ok"
        return answer
    finally:
        sandbox_called.send_robust(
            sender=Runner, module=call.module, outcome=outcome, seconds=time.monotonic() - began
        )


def child_command(config: RoomConfig) -> tuple[list[str], dict[str, Any]]:
    """The real child's command line for ``config``, and the report of bubblewrap."""
    command = [sys.executable, *CHILD_COMMAND]
    if "bubblewrap" not in config.layers:
        return command, {"active": False, "reason": "switched off (WEFT_SANDBOX_LAYERS)"}
    prefix, detail = bubblewrap.probe()
    if prefix is None:
        return command, {"active": False, "reason": detail}
    return [*prefix, *command], {"active": True, "detail": detail}


def report_layers(child: Layers, bubblewrap_report: dict[str, Any]) -> Layers:
    """Every layer, mandatory ones first, as ``{"active": bool, "detail" or "reason": str}``."""
    report: Layers = {
        "limits": child.get("limits", {"active": False, "reason": "the child did not say"}),
        "restricted_python": {"active": True},
        "audit_hook": {"active": True},
    }
    for name in OPTIONAL_LAYERS:
        if name == "bubblewrap":
            report[name] = bubblewrap_report
        else:
            report[name] = child.get(name, {"active": False, "reason": "the child did not say"})
    return report


def require_layers(layers: Layers, config: RoomConfig) -> None:
    """Refuse the call when a layer that contains the module is off (unless the unsafe
    setting allows it), or a mandatory layer, or a required one."""
    if not config.unsafe_uncontained and (what_is_missing := containment.missing(layers)):
        raise LayerUnavailable(containment.refusal(what_is_missing))
    for name in (*MANDATORY_LAYERS, *config.required_layers):
        report = layers.get(name, {})
        if not report.get("active"):
            setting = "" if name in MANDATORY_LAYERS else " (WEFT_SANDBOX_REQUIRED_LAYERS)"
            raise LayerUnavailable(
                f'the sandbox layer "{name}" is required{setting} but is off: '
                f"{report.get('reason', 'unknown')}"
            )


#: What the probe's child is held to: it runs no module, it only sets up.
PROBE_LIMITS = Limits(cpu_seconds=5, memory_bytes=512 * 1024 * 1024, output_bytes=0, answer_bytes=1)


@cache
def host_layers(layers: tuple[str, ...]) -> Layers | str:
    """The report of every layer (as :func:`report_layers`) a child with ``layers`` tried
    gets on this host, or why no child could start.

    Starts one real child with those layers, reads its report and kills it; the answer
    is kept for the life of the process (per ``layers``), so the system check and the
    console's module pages that ask cost one child start.
    """
    config = RoomConfig(
        imports=(),
        import_names=(),
        layers=layers,
        required_layers=(),
        limits=PROBE_LIMITS,
        wall_seconds=SETUP_SECONDS,
    )
    command, bubblewrap_report = child_command(config)
    try:
        child = Child(command, config, bubblewrap=bubblewrap_report)
        try:
            return report_layers(child.wait_ready(), child.bubblewrap)
        finally:
            child.kill()
    except (OSError, SandboxError) as error:
        return f"a sandbox child could not start: {error}"


def containment_problem(layers: tuple[str, ...]) -> str | None:
    """Why this host cannot contain a module with ``layers`` tried, or None if it can
    (from :func:`host_layers`, so asked again it starts no second child)."""
    report = host_layers(layers)
    if isinstance(report, str):
        return report
    what_is_missing = containment.missing(report)
    return containment.describe(what_is_missing) if what_is_missing else None


@cache
def load_runner() -> Runner:
    """This process's runner, made once; a ``WEFT_SANDBOX_*`` settings change makes a new one."""
    runner = import_setting(weft_settings.SANDBOX_RUNNER)()
    if not isinstance(runner, Runner):
        raise TypeError(
            f"{weft_settings.SANDBOX_RUNNER} is not a django_weft.sandbox.runner.Runner"
        )
    return runner


@receiver(setting_changed)
def _forget_runner(*, setting: str, **kwargs: object) -> None:
    if setting.startswith("WEFT_SANDBOX_") and load_runner.cache_info().currsize:
        load_runner().close()
        load_runner.cache_clear()
