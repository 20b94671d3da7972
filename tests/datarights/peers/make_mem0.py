"""Writes what mem0's own ``Memory.get_all`` answers, as JSON, for tests/datarights/test_import_from_peers.py.

Run with the Python of a venv where ``mem0ai`` is installed (scripts/ensure_peers.sh):
``python make_mem0.py OUT.json``. Nothing hosted is called: ``infer=False`` stores each message
as a memory without the LLM, the vector store is Qdrant on a local folder, and the embedder is
mem0's own ``MockEmbeddings`` (the vectors are not part of what ``get_all`` answers).
"""

import json
import os
import sys
import tempfile

os.environ.setdefault("OPENAI_API_KEY", "not-used-infer-is-false")
os.environ["MEM0_TELEMETRY"] = "False"

with tempfile.TemporaryDirectory() as home:
    os.environ["MEM0_DIR"] = home
    from mem0 import Memory
    from mem0.embeddings.mock import MockEmbeddings

    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {"path": os.path.join(home, "qdrant"), "embedding_model_dims": 10, "on_disk": True},
            },
            "history_db_path": os.path.join(home, "history.db"),
        }
    )
    memory.embedding_model = MockEmbeddings()
    alice = {"user_id": "alice"}
    memory.add(
        [
            {"role": "user", "content": "I prefer dark roast coffee, brewed with a French press."},
            {"role": "assistant", "content": "Noted: the staging deploy needs the VPN turned on first."},
        ],
        user_id="alice",
        infer=False,
        metadata={"category": "preferences"},
    )
    memory.add(
        [{"role": "user", "content": "Our database password is hunter2-Secr3t!xyz, keep it safe", "name": "ops"}],
        user_id="alice",
        agent_id="helper",
        infer=False,
    )
    first = memory.get_all(filters=alice)["results"][0]
    memory.update(first["id"], text=first["memory"] + " (updated)")
    exported = memory.get_all(filters=alice, top_k=100)
    with open(sys.argv[1], "w") as out:
        json.dump(exported, out, indent=2, default=str)
