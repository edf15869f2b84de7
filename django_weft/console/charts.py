"""The overview's charts as inline SVG: no script library, no CDN, drawn on the server.

A chart is a row of stacked bars, runs that finished and runs that failed per minute, in
a ``viewBox`` that scales to its container, so it never makes a page wider than the
window. Each bar has a ``<title>`` with its figures, which browsers show on hover.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from django_weft.console.formatting import moment
from django_weft.console.history import Bucket

WIDTH, HEIGHT = 600, 100


def _figure(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def bar_chart(title: str, buckets: Sequence[Bucket], zone: tzinfo) -> SafeString:
    """Stacked bars of ``buckets`` (finished below, failed on top), scaled to the highest."""
    top = max(
        (bucket.finished_per_minute + bucket.failed_per_minute for bucket in buckets), default=0
    )
    scale = HEIGHT / top if top else 0.0
    step = WIDTH / max(len(buckets), 1)
    bars = []
    for index, bucket in enumerate(buckets):
        x = index * step
        finished = bucket.finished_per_minute * scale
        failed = bucket.failed_per_minute * scale
        base = HEIGHT
        label = (
            f"{moment(bucket.start, zone)}: {bucket.finished} done or aborted, "
            f"{bucket.failed} failed or lost"
            + (f" in {bucket.minutes} minutes" if bucket.minutes > 1 else "")
        )
        bars.append(
            (
                f"{x:.2f}",
                f"{max(step - 1, 0.5):.2f}",
                label,
                f"{base - finished:.2f}",
                f"{finished:.2f}",
                f"{base - finished - failed:.2f}",
                f"{failed:.2f}",
            )
        )
    first = moment(buckets[0].start, zone) if buckets else ""
    # The labels are HTML around the drawing: text inside a stretched viewBox is distorted.
    return format_html(
        '<figure class="weft-chart-figure">'
        '<figcaption class="weft-chart-label">{} a minute at most</figcaption>'
        '<svg class="weft-chart" viewBox="0 0 {} {}" role="img" aria-label="{}" '
        'preserveAspectRatio="none">'
        "{}"
        "</svg>"
        '<div class="weft-chart-label weft-chart-ends"><span>{}</span><span>now</span></div>'
        "</figure>",
        _figure(top),
        WIDTH,
        HEIGHT,
        title,
        format_html_join(
            "",
            '<g><title>{2}</title><rect class="weft-bar-finished" x="{0}" width="{1}" '
            'y="{3}" height="{4}"></rect><rect class="weft-bar-failed" x="{0}" width="{1}" '
            'y="{5}" height="{6}"></rect></g>',
            bars,
        ),
        first,
    )
