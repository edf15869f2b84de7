"""What one call of a stored module costs: cold (a child started for the call) and warm
(a child taken from a pool that set it up ahead), with each set of layers.

Each sample is one ``call_module`` of a module that returns a number, timed around the
call from Python (a database read of the module, the child's start or its take from
the pool, setup, the call, the answer, the kill and reap). Warm samples wait until the
pool is full again before the next call, so each takes a child that is ready.

    .venv/bin/python bench/sandbox_call.py [--database sqlite|postgres] [--samples 40]
"""

from __future__ import annotations

import time

import _setup

LAYER_SETS = {
    "all layers": ("network_namespace", "landlock", "seccomp", "bubblewrap"),
    "no bubblewrap": ("network_namespace", "landlock", "seccomp"),
    "mandatory only": (),
}


def main() -> None:
    options = _setup.setup(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--samples", type=int, default=40),
    )
    from django.test import override_settings

    from django_weft.models import Module
    from django_weft.sandbox.calls import call_module
    from django_weft.sandbox.modules import save_module
    from django_weft.sandbox.runner import load_runner

    save_module(Module(name="bench/answer", source="def default():\n    return 42\n"))
    print(f"{options.samples} samples each, median / p90 / max in milliseconds\n")
    print(f"{'layers':<16} {'pool':<6} {'median':>8} {'p90':>8} {'max':>8}")
    for label, layers in LAYER_SETS.items():
        for pool in (0, 2):
            with override_settings(
                WEFT_SANDBOX_LAYERS=layers,
                WEFT_SANDBOX_POOL_SIZE=pool,
                # Without the layers that contain a module a call runs only under it.
                WEFT_SANDBOX_UNSAFE_UNCONTAINED=not layers,
            ):
                runner = load_runner()
                call_module("bench/answer")  # warm-up: imports, the bubblewrap probe
                samples = []
                for _ in range(options.samples):
                    if runner.pool is not None:  # type: ignore[attr-defined]
                        wait_full(runner.pool)  # type: ignore[attr-defined]
                    started = time.perf_counter()
                    assert call_module("bench/answer").value == 42
                    samples.append((time.perf_counter() - started) * 1000)
                print(
                    f"{label:<16} {'warm' if pool else 'cold':<6} "
                    f"{_setup.median(samples):8.1f} {_setup.percentile(samples, 0.9):8.1f} "
                    f"{max(samples):8.1f}"
                )


def wait_full(pool) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while len(pool._ready) < pool.size:
        if time.monotonic() > deadline:
            raise SystemExit("the pool did not fill in 30 s")
        time.sleep(0.01)


if __name__ == "__main__":
    main()
