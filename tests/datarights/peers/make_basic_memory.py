"""Writes a folder of notes with basic-memory's own ``write_note`` (the tool behind ``bm tool
write-note``), for tests/datarights/test_import_from_peers.py.

Run with the Python of a venv where ``basic-memory`` is installed (Python >= 3.12;
scripts/ensure_peers.sh): ``python make_basic_memory.py OUT_FOLDER``. Local only: basic-memory's
home and database go to a temporary folder, the notes to OUT_FOLDER.
"""

import json
import os
import sys
import tempfile

out = os.path.abspath(sys.argv[1])
home = tempfile.mkdtemp()
os.environ.update({"HOME": home, "BASIC_MEMORY_HOME": out, "BASIC_MEMORY_NO_PROMO": "1"})

from basic_memory.cli.commands.command_utils import run_with_cleanup  # noqa: E402
from basic_memory.cli.commands.routing import force_routing  # noqa: E402
from basic_memory.mcp.tools import write_note  # noqa: E402

NOTES = [
    (
        "Deploy process",
        "engineering",
        ["deploy", "ops"],
        "Deploys go through staging first.\n\n## Observations\n- [decision] Staging before production #deploy\n"
        "- [fact] The VPN must be on for staging\n\n## Relations\n- relates_to [[Release checklist]]",
    ),
    ("Release checklist", "engineering", ["release"], "Tag, build, deploy to staging, smoke test, then production."),
    (
        "Vendor access",
        "ops",
        None,
        "The billing dashboard is at https://billing.example.com; the API key is "
        "sk_live_51HcbBaQa8yXnVbRtN2s9W3fZq4pLm0XcVbNm7Kj",
    ),
]


async def main() -> None:
    for title, folder, tags, content in NOTES:
        answer = await write_note(title=title, content=content, directory=folder, tags=tags, output_format="json")
        print(json.dumps(answer, default=str)[:200])


with force_routing(local=True, cloud=False):
    run_with_cleanup(main())
