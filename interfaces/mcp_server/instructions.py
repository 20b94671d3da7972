"""What an agent reads about MMW as a whole: the ``/mcp`` server's instructions (``initialize``
and ``server/discover``), counted in the tool list's budget (``interfaces.mcp_server.budget``).
Each tool's own text is its app's (``memories.mcp.descriptions``, ``transcripts.mcp``, ``ledger.mcp``).
"""

from __future__ import annotations

INSTRUCTIONS = """\
MMW is the long-term memory of this project, shared by the people and agents who work on it.
Before answering questions about the project or starting a task, look up what is already known
(search, or recall_context for a ready-made pack). When you learn something durable — how things
are deployed, a decision and its reason, a convention, a user preference, the lesson of an
incident — store it with remember, citing where it came from (source_id, source_hash).
Every record has a status: "unverified" (usable, cite its source), "stale" (its source changed:
re-read the source and store the current fact), or "conflict" (another live record — a version
of the same fact_key, or one the archivist found contradicting it — says something else: show the
human both, never pick one silently).
Records are never overwritten; remove a wrong or outdated one explicitly with forget.
A short search names other_workspaces where the answer may be; time words ("last week") are read
against now (time_window); explain: true says why each result ranked.
Secrets are redacted before storage, and text that tries to instruct agents is refused.
Money is not memory: payments, invoices and payment reminders belong in the ledger (the ledger_*
tools, listed to keys with a ledger scope), never in remember.
Each tool's full reference (every parameter, bound and error text) is the resource
mmw://docs/<tool>; every error text is explained in mmw://docs/errors."""
