"""Server-rendered SVG bar charts: pictures without a JavaScript charting library."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from dashboard.selectors import Point

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP = 640, 200, 44, 28, 12


def bar_chart(points: Sequence[Point], *, title: str, colour: str = "#4f46e5") -> SafeString:
    """A responsive bar chart (``viewBox``) with a y-axis maximum, every few x labels and a
    ``<title>`` per bar so a hover shows the exact value."""
    top = max((p.value for p in points), default=0) or 1
    inner_w, inner_h = WIDTH - PAD_LEFT - 8, HEIGHT - PAD_BOTTOM - PAD_TOP
    step = inner_w / max(len(points), 1)
    bar_w = max(step * 0.7, 1.0)
    every = max(1, len(points) // 8)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<line x1="{PAD_LEFT}" y1="{PAD_TOP + inner_h}" x2="{WIDTH - 8}" y2="{PAD_TOP + inner_h}" class="axis"/>',
        f'<text x="{PAD_LEFT - 6}" y="{PAD_TOP + 4}" text-anchor="end" class="tick">{top}</text>',
        f'<text x="{PAD_LEFT - 6}" y="{PAD_TOP + inner_h}" text-anchor="end" class="tick">0</text>',
    ]
    for i, point in enumerate(points):
        h = inner_h * point.value / top
        x = PAD_LEFT + i * step + (step - bar_w) / 2
        y = PAD_TOP + inner_h - h
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0):.1f}" fill="{colour}" rx="2">'
            f"<title>{escape(point.label)}: {point.value}</title></rect>"
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" class="tick">'
                f"{escape(point.label)}</text>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text is escaped above
