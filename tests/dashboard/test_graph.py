"""The record page's relation graph: a server-rendered SVG whose related records are links
(focusable, opened with Enter), drawn in their direction, named, escaped, bounded."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from dashboard import graph
from dashboard.principals import principal_for_user
from memories.models import MemoryRelation
from memories.services import memory_remember
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

SVG = "{http://www.w3.org/2000/svg}"


def edge(other: str, words: str = "refines", direction: str = "out", preview: str = "a note") -> graph.Edge:
    return graph.Edge(other, words, direction, preview)


def render(edges: list[graph.Edge], text: str = "the record") -> str:
    return graph.relation_graph(record_text=text, edges=edges, url_for=lambda i: f"/r/{i}/")


def test_each_related_record_is_a_named_link_around_the_record() -> None:
    svg = render([edge("a", preview="deploys on Friday"), edge("b", "is a source of", "in", "the runbook")])
    root = ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))  # noqa: S314 - our own output
    links = root.findall(f".//{SVG}a")
    assert [a.get("href") for a in links] == ["/r/a/", "/r/b/"]
    assert links[0].get("aria-label") == "This record refines: deploys on Friday"
    lines = root.findall(f"{SVG}line")
    assert lines[0].get("marker-end") == "url(#arrow)"  # out: the arrow points at the other record
    assert lines[0].get("marker-start") is None
    assert lines[1].get("marker-start") == "url(#arrow)"  # in: the arrow points at this record
    assert lines[1].get("marker-end") is None


def test_edges_to_one_record_merge_and_the_drawing_is_bounded() -> None:
    nodes = graph.layout([edge("a"), edge("a", "is refined by", "in"), edge("b")])
    assert [(n.other_id, n.words, n.outgoing, n.incoming) for n in nodes] == [
        ("a", "refines, is refined by", True, True),
        ("b", "refines", True, False),
    ]
    many = graph.layout([edge(str(i)) for i in range(30)])
    assert len(many) == graph.MAX_NODES
    centre = graph.Node("self", graph.CENTRE_X, graph.CENTRE_Y, "", "", False, False)
    boxes = [(n.x - graph.NODE_W / 2, n.y - graph.NODE_H / 2) for n in [centre, *many]]
    for left, top in boxes:  # inside the picture
        assert left >= 0
        assert top >= 0
        assert left + graph.NODE_W <= graph.WIDTH
        assert top + graph.NODE_H <= graph.HEIGHT
    for i, (a_left, a_top) in enumerate(boxes):  # and no two boxes overlap
        for b_left, b_top in boxes[i + 1 :]:
            apart = abs(a_left - b_left) >= graph.NODE_W or abs(a_top - b_top) >= graph.NODE_H
            assert apart, (a_left, a_top, b_left, b_top)


def test_text_is_escaped_and_nothing_is_drawn_without_relations() -> None:
    svg = render([edge("x", preview='<script>alert("x")</script>')], text="<b>me</b>")
    assert "<script>" not in svg
    assert "<b>" not in svg
    assert render([]) == ""


@pytest.mark.django_db
def test_the_record_page_draws_only_relations_the_person_can_read(tenancy: Tenancy) -> None:
    alice = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    bob = principal_for_user(tenancy.bob.user, tenancy.bob.project)
    assert alice is not None
    assert bob is not None
    record = memory_remember(principal=alice, payload={"content": "deploys need two approvals"})["id"]
    shared = memory_remember(principal=alice, payload={"content": "the release checklist"})["id"]
    private = memory_remember(principal=bob, payload={"content": "bob's private draft", "visibility": "author"})["id"]
    for other in (shared, private):
        MemoryRelation.objects.create(from_memory_id=record, to_memory_id=other, relation="related", score=0.9)
    page = client_for(tenancy.alice.user).get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, record]))
    html = page.content.decode()
    svg = re.search(r"<svg class=\"graph\".*?</svg>", html, re.S)
    assert svg is not None
    assert f"/memories/{shared}/" in svg.group(0)
    assert str(private) not in svg.group(0)
