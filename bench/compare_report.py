"""The tables ``compare.py`` prints at the end: every figure per repeat and as a median.

Targets are printed beside the figures, met or not; nothing here fails a run.
"""

from __future__ import annotations

from collections.abc import Sequence

import _setup
from compare_plan import LATENCY, SYSTEM_NAMES, THROUGHPUT, WORKER_COUNTS, Results, Sizes

LABEL = 46
CELL = 13


def _row(label: str, cells: Sequence[str]) -> str:
    return f"{label:<{LABEL}}" + "".join(f"{cell:>{CELL}}" for cell in cells)


def _header(title: str, repeats: int) -> list[str]:
    return ["", title, _row("", [*(f"repeat {n}" for n in range(1, repeats + 1)), "median"])]


def _figures(values: Sequence[float], form: str) -> list[str]:
    return [format(value, form) for value in [*values, _setup.median(values)]]


def _met(met: bool) -> str:
    return "met" if met else "NOT met"


def best_anchor(results: Results, workers: int) -> tuple[str, float]:
    """The other system's configuration with the highest median runs/s for ``workers``."""
    anchors = {
        config.label: _setup.median(
            [r["runs_per_s"] for r in results.throughput[(config.label, workers)]]
        )
        for config in THROUGHPUT
        if config.system != "weft"
    }
    label = max(anchors, key=anchors.__getitem__)
    return label, anchors[label]


def weft_runs(results: Results, workers: int) -> float:
    (weft,) = (config for config in THROUGHPUT if config.system == "weft")
    return _setup.median([r["runs_per_s"] for r in results.throughput[(weft.label, workers)]])


def report(results: Results, sizes: Sizes) -> tuple[list[str], str]:
    """The summary lines, and the ratio line that ``compare.py`` prints last."""
    repeats = len(results.ceiling)
    lines = _header("commit ceiling: BEGIN; single-row UPDATE; COMMIT on one connection", repeats)
    lines.append(_row("commits/s", _figures(results.ceiling, ",.0f")))

    lines += _header(
        f"no-op runs/s, {sizes.jobs:,} jobs enqueued, then drained (first job starting to last "
        "finishing), and the share of the commit ceiling",
        repeats,
    )
    ceiling = [*results.ceiling, _setup.median(results.ceiling)]
    for workers in WORKER_COUNTS:
        for config in THROUGHPUT:
            rates = [r["runs_per_s"] for r in results.throughput[(config.label, workers)]]
            cells = [
                f"{rate:,.0f} {rate / limit:5.1%}"
                for rate, limit in zip([*rates, _setup.median(rates)], ceiling, strict=True)
            ]
            lines.append(_row(f"{config.label}, {workers} worker{'s' * (workers > 1)}", cells))

    lines += _header(
        "enqueue jobs/s: one call and one commit per job (median of the repeat's enqueues)",
        repeats,
    )
    for system in dict.fromkeys(config.system for config in THROUGHPUT):
        per_repeat = [
            _setup.median(
                [
                    results.throughput[(config.label, workers)][repeat]["enqueue_per_s"]
                    for config in THROUGHPUT
                    if config.system == system
                    for workers in WORKER_COUNTS
                ]
            )
            for repeat in range(repeats)
        ]
        lines.append(_row(SYSTEM_NAMES[system], _figures(per_repeat, ",.0f")))

    lines += _header(
        f"start -> run begins, ms: one idle worker, {sizes.latency_samples} spaced samples "
        "per repeat",
        repeats,
    )
    for latency in LATENCY:
        samples = results.latency[latency.system]
        for name, fraction in (("median", 0.5), ("p99", 0.99)):
            values = [_setup.percentile(repeat, fraction) * 1e3 for repeat in samples]
            lines.append(_row(f"{latency.label}: {name}", _figures(values, ".1f")))

    lines += _header(
        f"django-weft: {sizes.due_schedules:,} due one-off schedules, "
        f"{sizes.due_workers} runjobs processes",
        repeats,
    )
    for key, name, form in (
        ("executed_s", "all executed, s (first fire to last finish)", ".1f"),
        ("fires_per_s", "fires/s (first fire to last fire)", ",.0f"),
        ("wall_s", "wall s (from starting the processes)", ".1f"),
    ):
        lines.append(_row(name, _figures([fires[key] for fires in results.fires], form)))

    lines += _header("idle tick, median ms (nothing due)", repeats)
    for system, ticks in (
        ("django-weft", results.weft_ticks),
        ("django-celery-beat", results.beat_ticks),
    ):
        for what, per_size in ticks[0].items():
            for size in per_size:
                values = [repeat[what][size] * 1e3 for repeat in ticks]
                lines.append(
                    _row(f"{system} {what}, {int(size):,} schedules", _figures(values, ".3f"))
                )

    ratios = {}
    lines += ["", "targets (printed, never asserted)"]
    for workers in WORKER_COUNTS:
        anchor, anchor_rate = best_anchor(results, workers)
        ratios[workers] = weft_runs(results, workers) / anchor_rate
        lines.append(
            f"  weft / best anchor runs/s, {workers} worker{'s' * (workers > 1)}: "
            f"{ratios[workers]:.2f} (best anchor: {anchor}, {anchor_rate:,.0f} runs/s); "
            f"target at least 2.0: {_met(ratios[workers] >= 2.0)}"
        )
    weft_latency = results.latency["weft"]
    weft_median = _setup.median([_setup.percentile(r, 0.5) for r in weft_latency]) * 1e3
    weft_p99 = _setup.median([_setup.percentile(r, 0.99) for r in weft_latency]) * 1e3
    anchor_median = (
        _setup.median([_setup.percentile(r, 0.5) for r in results.latency["procrastinate"]]) * 1e3
    )
    lines.append(
        f"  start -> run begins median: weft {weft_median:.1f} ms, procrastinate "
        f"{anchor_median:.1f} ms; target at most procrastinate's: "
        f"{_met(weft_median <= anchor_median)}"
    )
    lines.append(
        f"  start -> run begins p99: weft {weft_p99:.1f} ms; target at most 25 ms: "
        f"{_met(weft_p99 <= 25.0)}"
    )
    executed = _setup.median([fires["executed_s"] for fires in results.fires])
    scale = (
        ""
        if sizes.due_schedules == 10_000
        else f" (the target is for 10,000; here {sizes.due_schedules:,})"
    )
    lines.append(
        f"  10,000 due fires, 4 workers, all executed: {executed:.1f} s; target within 60 s: "
        f"{_met(executed <= 60.0)}{scale}"
    )
    fires_per_second = _setup.median([fires["fires_per_s"] for fires in results.fires])
    lines.append(
        f"  fires/s: {fires_per_second:,.0f}; target at least 1,000: "
        f"{_met(fires_per_second >= 1000)}"
    )
    ratio_line = (
        f"ratio weft/best-anchor runs/s: {ratios[1]:.2f} (1 worker), {ratios[2]:.2f} (2 workers)"
    )
    return lines, ratio_line
