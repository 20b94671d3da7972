"""Every reader answers any JSON with items, named problems or one clear error — never a crash
(a peer's file is as hostile as any upload). Property-based over arbitrary JSON shaped like each
service's export; no database."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from datarights.importers.items import PeerItem, Problem, Upload
from datarights.importers.services import READERS
from mmw.errors import MMWError

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = ["id", "memory", "text", "content", "summary", "title", "created_at", "updated_at", "createdAt", "updatedAt", "tags",
        "containerTags", "categories", "metadata", "user_id", "label", "value", "block_ids", "name", "system", "isLatest",
        "isForgotten", "is_deleted", "hash", "role", "customId", "type"]  # fmt: skip
entries = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)
documents = st.one_of(
    st.lists(entries, max_size=4),
    st.fixed_dictionaries({"results": st.lists(entries, max_size=4)}),
    st.fixed_dictionaries({"memories": st.lists(entries, max_size=4)}),
    st.fixed_dictionaries({"documents": st.lists(entries, max_size=3), "memories": st.lists(entries, max_size=3)}),
    st.fixed_dictionaries(
        {"agents": st.lists(entries, max_size=2), "blocks": st.lists(entries, max_size=3), "passages": values}
    ),
    st.fixed_dictionaries({"core_memory": st.lists(entries, max_size=3), "name": values, "passages": values}),
    values,
)


def read_all(service: str, document: Any) -> list[PeerItem | Problem]:
    return list(READERS[service](Upload.of_bytes(json.dumps(document).encode())))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents)
@example(document={"agents": [{"block_ids": 5, "name": "a"}], "blocks": []})  # found by hand: each once crashed
@example(document=[{"id": "p", "text": "t", "tags": 5}])
@example(document={"memories": [{"id": "d", "content": "c", "containerTags": 7}]})
@example(document={"memories": [], "documents": 3})
def test_no_json_crashes_a_reader(document: Any) -> None:
    for service in ("mem0", "letta", "supermemory"):
        try:
            found = read_all(service, document)
        except MMWError:
            continue
        for item in found:
            assert isinstance(item, PeerItem | Problem)
            if isinstance(item, PeerItem):
                assert isinstance(item.content, str)
                assert isinstance(item.origin_id, str)
                assert all(isinstance(t, str) for t in item.tags)
