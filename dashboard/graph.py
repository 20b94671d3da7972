"""A record's relations as a small server-rendered SVG graph (no JavaScript): the record in the
middle, each related record around it in a box naming the relation in words (``is refined by``)
and the record's first words, one arrow per edge in its direction.

Every related record is an SVG link (``<a href>``): focusable with Tab, opened with Enter (the
browser's own link behaviour), named for screen readers by its ``aria-label``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Sized for a phone (a 520-wide picture shrinks least) and for MAX_NODES boxes around the ellipse
# without overlapping: neighbours 45° apart are more than a box's height apart vertically.
WIDTH, HEIGHT = 520, 390
CENTRE_X, CENTRE_Y = WIDTH / 2, HEIGHT / 2
RADIUS_X, RADIUS_Y = 180, 165
NODE_W, NODE_H = 150, 44
LABEL_CHARS = 18
MAX_NODES = 8  # more are listed under the picture (every relation is), not drawn


@dataclass(frozen=True)
class Edge:
    """One relation seen from the record: the other record's id, the words (``refines``, ``is
    derived from``…), ``out`` (this record → other) or ``in``, and the other record's first words."""

    other_id: str
    words: str
    direction: str
    preview: str


@dataclass(frozen=True)
class Node:
    other_id: str
    x: float
    y: float
    words: str
    preview: str
    outgoing: bool
    incoming: bool


def layout(edges: Sequence[Edge]) -> list[Node]:
    """One node per related record (edges to the same record merged, their words joined), at
    most ``MAX_NODES``, evenly around an ellipse starting at the top, clockwise."""
    merged: dict[str, list[Edge]] = {}
    for edge in edges:
        merged.setdefault(edge.other_id, []).append(edge)
    chosen = list(merged.items())[:MAX_NODES]
    nodes = []
    for i, (other_id, group) in enumerate(chosen):
        angle = -math.pi / 2 + 2 * math.pi * i / max(len(chosen), 1)
        words = ", ".join(dict.fromkeys(e.words for e in group))
        nodes.append(
            Node(
                other_id=other_id,
                x=round(CENTRE_X + RADIUS_X * math.cos(angle), 1),
                y=round(CENTRE_Y + RADIUS_Y * math.sin(angle), 1),
                words=words,
                preview=group[0].preview,
                outgoing=any(e.direction == "out" for e in group),
                incoming=any(e.direction == "in" for e in group),
            )
        )
    return nodes


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1].rstrip() + "…"


def _border_point(x: float, y: float, towards_x: float, towards_y: float) -> tuple[float, float]:
    """Where the segment from a node's centre (x, y) toward another point leaves its box."""
    dx, dy = towards_x - x, towards_y - y
    if dx == 0 and dy == 0:
        return x, y
    scale = min(
        (NODE_W / 2) / abs(dx) if dx else math.inf,
        (NODE_H / 2) / abs(dy) if dy else math.inf,
    )
    return round(x + dx * scale, 1), round(y + dy * scale, 1)


def relation_graph(
    *, record_text: str, edges: Sequence[Edge], url_for: Callable[[str], str], title: str = "Relations"
) -> SafeString:
    """The SVG (responsive ``viewBox``) of ``edges`` around the record; ``url_for(id)`` is each
    related record's page. Empty when there is nothing to draw."""
    nodes = layout(edges)
    if not nodes:
        return mark_safe("")
    parts = [
        f'<svg class="graph" viewBox="0 0 {WIDTH} {HEIGHT}" role="group" aria-label="{escape(title)}" '
        'data-testid="relation-graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>',
    ]
    for node in nodes:
        x1, y1 = _border_point(CENTRE_X, CENTRE_Y, node.x, node.y)
        x2, y2 = _border_point(node.x, node.y, CENTRE_X, CENTRE_Y)
        ends = (' marker-end="url(#arrow)"' if node.outgoing else "") + (
            ' marker-start="url(#arrow)"' if node.incoming else ""
        )
        parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" class="edge"{ends}/>')
    parts.append(_box(CENTRE_X, CENTRE_Y, _short(record_text) or "this record", "node node-self"))
    for node in nodes:
        label = node.preview or "a related record"
        parts.append(
            f'<a href="{escape(url_for(node.other_id))}" class="node-link" '
            f'aria-label="{escape(f"This record {node.words}: {label}")}">'
            f"<title>{escape(node.words)}: {escape(label)}</title>"
            + _box(node.x, node.y, _short(label), "node", caption=_short(node.words))
            + "</a>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text is escaped above


def _box(x: float, y: float, text: str, css: str, caption: str = "") -> str:
    """A rounded box with the record's first words, and above them (small) the relation's."""
    left, top = round(x - NODE_W / 2, 1), round(y - NODE_H / 2, 1)
    lines = (
        f'<text x="{x}" y="{round(y - 5, 1)}" text-anchor="middle" class="relation">{escape(caption)}</text>'
        f'<text x="{x}" y="{round(y + 13, 1)}" text-anchor="middle">{escape(text)}</text>'
        if caption
        else f'<text x="{x}" y="{round(y + 5, 1)}" text-anchor="middle">{escape(text)}</text>'
    )
    return f'<g class="{css}"><rect x="{left}" y="{top}" width="{NODE_W}" height="{NODE_H}" rx="8"/>{lines}</g>'
