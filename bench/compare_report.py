"""The tables ``compare.py`` prints at the end: every figure per repeat and as a median.

Targets are printed beside the figures, met or not; nothing here fails a run.
"""

from __future__ import annotations

from collections.abc import Sequence

import _setup
from compare_plan import (
    DURABLE,
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


def label_of(system: str) -> str:
    (config,) = (config for config in THROUGHPUT if config.system == system)
    return config.label


def best_anchor(results: Results, workers: int) -> tuple[str, float]:
    """The durable systems' configuration with the highest median runs/s for ``workers``."""
    anchors = {
        config.label: median_runs(results, config.label, workers)
        for config in THROUGHPUT
        if config.system in DURABLE
    }
    label = max(anchors, key=anchors.__getitem__)
    return label, anchors[label]


def throughput_table(results: Results, sizes: Sizes, repeats: int) -> list[Line]:
    fewer = "".join(
        f", {config.label} {config.jobs(sizes):,}"
        for config in THROUGHPUT
        if config.jobs(sizes) < sizes.jobs
    )
    lines = header(
        f"no-op runs/s, {sizes.jobs:,} jobs enqueued{fewer}, then drained (first job starting "
        "to last finishing), and the share of that repeat's commit ceiling",
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
    fewer = "".join(
        f", {SYSTEM_NAMES[latency.system]} {latency.samples(sizes)}"
        for latency in LATENCY
        if latency.samples(sizes) < sizes.latency_samples
    )
    lines = header(
        f"start -> run begins, ms: one idle worker, {sizes.latency_samples} spaced samples "
        f"per repeat{fewer}",
        repeats,
    )
    for latency in LATENCY:
        per_repeat = results.latency[latency.system]
        for name, fraction in (("median", 0.5), ("p99", 0.99)):
            values = [_setup.percentile(samples, fraction) * 1e3 for samples in per_repeat]
            lines.append((f"{latency.label}: {name}", figures(values, ".1f")))
    return lines


def start_tables(results: Results, sizes: Sizes, repeats: int) -> list[Line]:
    lines = header(
        f"django-weft starts, runs/s: start() one call and one commit each "
        f"({sizes.start_singles:,}), start_many() of {sizes.start_batch:,} runs a call",
        repeats,
    )
    for system, rates in results.start_rates.items():
        for key, name in (("start_per_s", "start()"), ("start_many_per_s", "start_many()")):
            values = [rate[key] for rate in rates]
            lines.append((f"{SYSTEM_NAMES[system]}: {name}", figures(values, ",.0f")))
    lines += header(
        f"fan-out, ms: commit -> a run's frame on {sizes.fanout_sockets:,} guest sockets "
        f"(uvicorn, channels-redis), {sizes.fanout_samples} samples per repeat",
        repeats,
    )
    for key, name in (("first_ms", "first socket"), ("last_ms", "last socket")):
        for statistic, fraction in (("median", 0.5), ("p99", 0.99)):
            values = [_setup.percentile(fanout[key], fraction) for fanout in results.fanout]
            lines.append((f"{name}: {statistic}", figures(values, ".1f")))
    return lines


def weft_tables(results: Results, sizes: Sizes) -> list[Line]:
    """The first repeat's figures of one system each (see :mod:`compare_plan`)."""
    lines = header(
        f"django-weft: {sizes.due_schedules:,} due one-off schedules, "
        f"{sizes.due_workers} runjobs processes",
        len(results.fires),
    )
    for key, name, form in (
        ("executed_s", "all executed, s (first fire to last finish)", ".1f"),
        ("fires_per_s", "fires/s (first fire to last fire)", ",.0f"),
        ("wall_s", "wall s (from starting the processes)", ".1f"),
    ):
        lines.append((name, figures([fires[key] for fires in results.fires], form)))
    lines += header("idle tick, median ms (nothing due)", len(results.weft_ticks))
    for system, ticks in (
        ("django-weft", results.weft_ticks),
        ("django-celery-beat", results.beat_ticks),
    ):
        for what, per_size in ticks[0].items():
            for size in per_size:
                values = [repeat[what][size] * 1e3 for repeat in ticks]
                lines.append((f"{system} {what}, {int(size):,} schedules", figures(values, ".3f")))
    return lines


def ratios_of(results: Results, label: str, over: str) -> dict[int, float]:
    """Median runs/s of ``label`` over ``over``'s, per worker count."""
    return {
        workers: median_runs(results, label, workers) / median_runs(results, over, workers)
        for workers in WORKER_COUNTS
    }


def targets(results: Results, sizes: Sizes) -> tuple[list[Line], dict[str, dict[int, float]]]:
    """The target lines, and the three ratios of runs/s per worker count."""
    lines: list[Line] = ["", "targets (printed, never asserted)"]
    weft, live, celery = label_of("weft"), label_of("weft_live"), label_of("celery")
    durable = {}
    for workers in WORKER_COUNTS:
        anchor, anchor_rate = best_anchor(results, workers)
        durable[workers] = median_runs(results, weft, workers) / anchor_rate
        lines.append(
            f"  weft / best durable runs/s, {workers_label(workers)}: {durable[workers]:.2f} "
            f"(best durable: {anchor}, {anchor_rate:,.0f} runs/s); target at least 2.0: "
            f"{verdict(durable[workers] >= 2.0)}"
        )
    over_celery = ratios_of(results, weft, celery)
    for workers, least in zip(WORKER_COUNTS, (1.0, 1.5), strict=True):
        lines.append(
            f"  weft / Celery (no results) runs/s, {workers_label(workers)}: "
            f"{over_celery[workers]:.2f}; target at least {least}: "
            f"{verdict(over_celery[workers] >= least)}"
        )
    live_over = ratios_of(results, live, weft)
    for workers in WORKER_COUNTS:
        lines.append(
            f"  weft with channels-redis / without, runs/s, {workers_label(workers)}: "
            f"{live_over[workers]:.2f}; target at least 0.9: {verdict(live_over[workers] >= 0.9)}"
        )
    starts = {
        system: _setup.median([rate["start_per_s"] for rate in rates])
        for system, rates in results.start_rates.items()
    }
    bulk = _setup.median([rate["start_many_per_s"] for rate in results.start_rates["weft"]])
    extra_ms = 1e3 / starts["weft_live"] - 1e3 / starts["weft"]
    lines.append(
        f"  start() with channels-redis: {extra_ms:+.2f} ms against without; target within "
        f"0.3 ms: {verdict(extra_ms <= 0.3)}"
    )
    defer = _setup.median(
        [
            result["enqueue_per_s"]
            for config in THROUGHPUT
            if config.system == "procrastinate"
            for workers in WORKER_COUNTS
            for result in results.throughput[(config.label, workers)]
        ]
    )
    lines.append(
        f"  start() {starts['weft']:,.0f} runs/s, procrastinate defer {defer:,.0f} jobs/s; "
        f"target at least procrastinate's: {verdict(starts['weft'] >= defer)}"
    )
    lines.append(
        f"  start_many() {bulk:,.0f} runs/s, {bulk / starts['weft']:.1f} x start(); target at "
        f"least 10 x: {verdict(bulk >= 10 * starts['weft'])}"
    )
    fanout_p99 = _setup.median([_setup.percentile(f["last_ms"], 0.99) for f in results.fanout])
    scale = "" if sizes.fanout_sockets == 1_000 else f" (here {sizes.fanout_sockets:,} sockets)"
    lines.append(
        f"  commit -> last of 1,000 guest sockets p99: {fanout_p99:.1f} ms; target at most "
        f"100 ms: {verdict(fanout_p99 <= 100.0)}{scale}"
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
        f"  start -> run begins p99: weft {weft_p99:.1f} ms; target at most 10 ms: "
        f"{verdict(weft_p99 <= 10.0)}"
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
    return lines, {
        "weft/best-durable": durable,
        "weft/celery": over_celery,
        "weft-live/weft": live_over,
    }


def report(results: Results, sizes: Sizes) -> tuple[list[str], list[str]]:
    """The summary lines, and the three ratio lines that ``compare.py`` prints last."""
    repeats = len(results.ceiling)
    lines = header("commit ceiling: BEGIN; single-row UPDATE; COMMIT on one connection", repeats)
    lines.append(("commits/s", figures(results.ceiling, ",.0f")))
    lines += throughput_table(results, sizes, repeats)
    lines += latency_table(results, sizes, repeats)
    lines += start_tables(results, sizes, repeats)
    lines += weft_tables(results, sizes)
    target_lines, ratios = targets(results, sizes)
    ratio_lines = [
        f"ratio {name} runs/s: {per[1]:.2f} (1 worker), {per[2]:.2f} (2 workers)"
        for name, per in ratios.items()
    ]
    return render(lines + target_lines), ratio_lines
