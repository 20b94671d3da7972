"""What an agent reads about each memory tool: when to use it, the key parameters, the answer
(what it reads about MMW as a whole, the server's instructions, is ``interfaces.mcp_server.instructions``).

Every ``tools/list`` carries these texts, so each is a few lines (``interfaces.mcp_server.budget``): the
rest — every parameter, bound, answer field and error — is the tool's reference page, which each
text names as an MCP resource (``mmw://docs/<tool>``, docs/reference/<tool>.md). Per-parameter
texts live in ``memories.inputs`` (they become the input schemas); these say how the tools fit
together.
"""

from __future__ import annotations

REMEMBER = """\
Store a durable fact, decision or convention: content that stands on its own, with its source \
(source_id, source_hash) so MMW can tell when it goes stale. The same fact_key again adds a \
version (differing live versions: "conflict"). Money goes to the ledger. Secrets are redacted; \
text instructing agents is refused. Returns id, status, version. Reference: mmw://docs/remember"""

SEARCH = """\
Find records by meaning and keywords, any language, best first. Use it before answering about \
the project or changing what may have a recorded decision. Each result has content, source and \
status: "unverified" (use it, cite the source), "stale" (source changed: re-read it) or \
"conflict" (see conflicts_with: show the human both). Reference: mmw://docs/search"""

FORGET = """\
Remove records (a soft delete, audited): one by memory_id, or all of a source by source_id. \
Use it for a wrong or outdated record (the losing side of a conflict) or a rewritten source. \
Nothing matching is not an error (forgotten: false). Reference: mmw://docs/forget"""

VALIDATE_MEMORY = """\
Which records of a source are out of date (changes nothing): pass source_id and its current \
hash. Then re-read the source, remember the current facts and forget the stale records. \
Reference: mmw://docs/validate_memory"""

MEMORY_HISTORY = """\
Every version of a fact (by fact_key or memory_id), oldest first, with why, who and when; \
forgotten ones without content. Use it to see how a decision evolved or both sides of a \
conflict. Reference: mmw://docs/memory_history"""

RECALL_CONTEXT = """\
A context pack for a task: the most useful records, most important first, cut to token_budget; \
use it at a task's start instead of several searches. Items carry search's fields and statuses. \
Reference: mmw://docs/recall_context"""

LIST_WORKSPACES = """\
The project's workspaces, with how many records you can read in each. \
Reference: mmw://docs/list_workspaces"""

GET_MEMORY = """\
One record by id (from search, conflicts_with, derived_from, graph_relations), with its status; \
"memory not found" if unknown, forgotten or not yours to read. Reference: mmw://docs/get_memory"""
