"""The tables ``compare.py`` prints at the end: every figure per repeat and as a median.

Targets are printed beside the figures, met or not; nothing here fails a run.
"""

from __future__ import annotations

from collections.abc import Sequence

import _setup
from compare_plan import (
    LATENCY,
    SYSTEM_NAMES,
    THROUGHPUT,
    WORKER_COUNTS,
    Results,
    Sizes,
    workers_label,
)

CELL = 13

#: A line of a table: its label and its cells (the labels are padded to one width),
#: or a line of text.
Line = str | tuple[str, list[str]]


def render(lines: Sequence[Line]) -> list[str]:
    width = max(len(line[0]) for line in lines if isinstance(line, tuple)) + 2
    return [
        line
        if isinstance(line, str)
        else f"{line[0]:<{width}}" + "".join(f"{cell:>{CELL}}" for cell in line[1])
        for line in lines
    ]


def header(title: str, repeats: int) -> list[Line]:
    return ["", title, ("", [*(f"repeat {n}" for n in range(1, repeats + 1)), "median"])]


def figures(values: Sequence[float], form: str) -> list[str]:
    """Each value, then their median, formatted with ``form``."""
    return [format(value, form) for value in [*values, _setup.median(values)]]


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def median_runs(results: Results, label: str, workers: int) -> float:
    return _setup.median([r["runs_per_s"] for r in results.throughput[(label, workers)]])


def median_percentile(per_repeat: Sequence[Sequence[float]], fraction: float) -> float:
    """The median over the repeats of each repeat's percentile, in milliseconds."""
    return _setup.median([_setup.percentile(samples, fraction) for samples in per_repeat]) * 1e3


def best_anchor(results: Results, workers: int) -> tuple[str, float]:
    """The other systems' configuration with the highest median runs/s for ``workers``."""
    anchors = {
        config.label: median_runs(results, config.label, workers)
        for config in THROUGHPUT
        if config.system != "weft"
    }
    label = max(anchors, key=anchors.__getitem__)
    return label, anchors[label]


def throughput_table(results: Results, sizes: Sizes, repeats: int) -> list[Line]:
    lines = header(
        f"no-op runs/s, {sizes.jobs:,} jobs enqueued, then drained (first job starting to last "
        "finishing), and the share of that repeat's commit ceiling",
        repeats,
    )
    ceilings = [*results.ceiling, _setup.median(results.ceiling)]
    for workers in WORKER_COUNTS:
        for config in THROUGHPUT:
            rates = [r["runs_per_s"] for r in results.throughput[(config.label, workers)]]
            cells = [
                f"{rate:,.0f} {rate / ceiling:5.1%}"
                for rate, ceiling in zip([*rates, _setup.median(rates)], ceilings, strict=True)
            ]
            lines.append((f"{config.label}, {workers_label(workers)}", cells))
    lines += header(
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
        lines.append((SYSTEM_NAMES[system], figures(per_repeat, ",.0f")))
    return lines


def latency_table(results: Results, sizes: Sizes, repeats: int) -> list[Line]:
    lines = header(
        f"start -> run begins, ms: one idle worker, {sizes.latency_samples} spaced samples "
        "per repeat",
        repeats,
    )
    for latency in LATENCY:
        per_repeat = results.latency[latency.system]
        for name, fraction in (("median", 0.5), ("p99", 0.99)):
            values = [_setup.percentile(samples, fraction) * 1e3 for samples in per_repeat]
            lines.append((f"{latency.label}: {name}", figures(values, ".1f")))
    return lines


def weft_tables(results: Results, sizes: Sizes, repeats: int) -> list[Line]:
    lines = header(
        f"django-weft: {sizes.due_schedules:,} due one-off schedules, "
        f"{sizes.due_workers} runjobs processes",
        repeats,
    )
    for key, name, form in (
        ("executed_s", "all executed, s (first fire to last finish)", ".1f"),
        ("fires_per_s", "fires/s (first fire to last fire)", ",.0f"),
        ("wall_s", "wall s (from starting the processes)", ".1f"),
    ):
        lines.append((name, figures([fires[key] for fires in results.fires], form)))
    lines += header("idle tick, median ms (nothing due)", repeats)
    for system, ticks in (
        ("django-weft", results.weft_ticks),
        ("django-celery-beat", results.beat_ticks),
    ):
        for what, per_size in ticks[0].items():
            for size in per_size:
                values = [repeat[what][size] * 1e3 for repeat in ticks]
                lines.append((f"{system} {what}, {int(size):,} schedules", figures(values, ".3f")))
    return lines


def targets(results: Results, sizes: Sizes) -> tuple[list[Line], dict[int, float]]:
    """The target lines, and weft's runs/s over the best anchor's for each worker count."""
    lines: list[Line] = ["", "targets (printed, never asserted)"]
    ratios = {}
    (weft,) = (config for config in THROUGHPUT if config.system == "weft")
    for workers in WORKER_COUNTS:
        anchor, anchor_rate = best_anchor(results, workers)
        ratios[workers] = median_runs(results, weft.label, workers) / anchor_rate
        lines.append(
            f"  weft / best anchor runs/s, {workers_label(workers)}: {ratios[workers]:.2f} "
            f"(best anchor: {anchor}, {anchor_rate:,.0f} runs/s); target at least 2.0: "
            f"{verdict(ratios[workers] >= 2.0)}"
        )
    weft_median = median_percentile(results.latency["weft"], 0.5)
    weft_p99 = median_percentile(results.latency["weft"], 0.99)
    anchor_median = median_percentile(results.latency["procrastinate"], 0.5)
    lines.append(
        f"  start -> run begins median: weft {weft_median:.1f} ms, procrastinate "
        f"{anchor_median:.1f} ms; target at most procrastinate's: "
        f"{verdict(weft_median <= anchor_median)}"
    )
    lines.append(
        f"  start -> run begins p99: weft {weft_p99:.1f} ms; target at most 25 ms: "
        f"{verdict(weft_p99 <= 25.0)}"
    )
    executed = _setup.median([fires["executed_s"] for fires in results.fires])
    scale = (
        ""
        if (sizes.due_schedules, sizes.due_workers) == (10_000, 4)
        else f" (the target is for 10,000 and 4 workers; here {sizes.due_schedules:,} "
        f"and {sizes.due_workers})"
    )
    lines.append(
        f"  due fires all executed: {executed:.1f} s; target within 60 s: "
        f"{verdict(executed <= 60.0)}{scale}"
    )
    fires_per_second = _setup.median([fires["fires_per_s"] for fires in results.fires])
    lines.append(
        f"  fires/s: {fires_per_second:,.0f}; target at least 1,000: "
        f"{verdict(fires_per_second >= 1000)}"
    )
    return lines, ratios


def report(results: Results, sizes: Sizes) -> tuple[list[str], str]:
    """The summary lines, and the ratio line that ``compare.py`` prints last."""
    repeats = len(results.ceiling)
    lines = header("commit ceiling: BEGIN; single-row UPDATE; COMMIT on one connection", repeats)
    lines.append(("commits/s", figures(results.ceiling, ",.0f")))
    lines += throughput_table(results, sizes, repeats)
    lines += latency_table(results, sizes, repeats)
    lines += weft_tables(results, sizes, repeats)
    target_lines, ratios = targets(results, sizes)
    ratio_line = (
        f"ratio weft/best-anchor runs/s: {ratios[1]:.2f} (1 worker), {ratios[2]:.2f} (2 workers)"
    )
    return render(lines + target_lines), ratio_line
