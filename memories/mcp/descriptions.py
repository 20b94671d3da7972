"""What an agent reads about MMW and each tool: when to use it, the key parameters, the answer.

Per-parameter details live in ``memories.inputs`` (they become the input schemas); these texts
say how the tools fit together. Modelled on the product's reference pages (``seeds/000``, ``004``).
"""

from __future__ import annotations

INSTRUCTIONS = """\
MMW is the long-term memory of this project, shared by the people and agents who work on it.
Before answering questions about the project or starting a task, look up what is already known
(search, or recall_context for a ready-made pack). When you learn something durable — how things
are deployed, a decision and its reason, a convention, a user preference, the lesson of an
incident — store it with remember, citing where it came from (source_id, source_hash).
Every record has a status: "unverified" (usable, cite its source), "stale" (its source changed:
re-read the source and store the current fact), or "conflict" (another live record with the same
fact_key says something else: show the human both, never pick one silently).
Records are never overwritten; remove a wrong or outdated one explicitly with forget.
Visibility, not scope, decides who sees a record. Secrets are redacted before storage, and text
that tries to instruct agents is refused.
Financial records never go into memory: record transactions and payment reminders with
ledger_record (keys with the ledger:write scope), and read them with ledger_list, ledger_balance
and ledger_upcoming."""

REMEMBER = """\
Store a new durable fact, decision or convention in the memory of the key's project.

Use it when you learn something worth keeping across sessions. Write content that stands on its
own (no "as discussed above"). Money is not memory: payments, invoices, amounts and payment
reminders go to the ledger (ledger_record), whose exact amounts can be summed and reversed.
remember never updates or deletes anything: saving again with the same fact_key adds a newer
version, and the older versions stay live, marked as not the latest; if their contents differ,
all of them are in "conflict" until a person forgets the wrong one.

Key parameters:
- content (required): the fact itself, 1-100,000 characters.
- source_id / source_hash / source_revision: where the fact comes from (file, document, URL,
  session) and the source's hash when you read it, so MMW can later tell you it went stale.
- fact_key: a stable topic key such as "deploy-staging"; use the same key for the same topic.
- expected_version: write only if the newest version of fact_key still has this number.
- derived_from: ids of the records this one summarises; the summary inherits their statuses.
- tags: "kind:decision", "kind:pinned", "kind:incident", ... set the importance used by recall.
- visibility: "author" (a draft), "department", "project" (default) or "org".

Returns: id (needed for forget, derived_from, get_memory), status ("unverified" for every new
record), version, fact_key, workspace, scope, visibility, source_id and source_hash (after secret
redaction), derived_from (sorted, [] if none), redactions (what was redacted), expires_at,
created_at, api_version, tenant_id, project_id.

Secrets (API keys, tokens, passwords, private keys) are replaced by [REDACTED:...] and the record
is kept; instructions aimed at agents ("ignore previous instructions"), role tags or invisible
characters make the write fail with "Memory rejected by Security Guard: <reason>". Sending the
same X-Idempotency-Key HTTP header with the same parameters returns the first answer again
without writing twice."""

SEARCH = """\
Find records relevant to a question or task, by meaning and by keywords, in any language.

Use it before answering questions about the project and before changing something that may
have a recorded convention or decision. A record is findable as soon as remember returns.

Key parameters:
- query (required): what you are looking for, in your own words.
- workspace: "default" unless told otherwise; "*" searches every workspace of the project.
- fact_key / source_id / scope / tags / min_confidence / min_importance: narrow the results.
- source_id + current_source_hash: the hash of the source as it is now; records stored with
  another hash come back as "stale".
- latest_only: only the newest version of each fact_key.

Returns {query, workspace, results: [...]}, best first. Each result has id, content, score,
status ("unverified" / "stale" / "conflict"), conflicts_with (ids of live records that disagree),
fact_key, version, is_latest, source, source_id, source_hash, source_revision, confidence,
importance, tags, derived_from, visibility, graph_relations (related records found by the
archivist), reason, author, created_at. Cite the source when you use a record; when a result is in
"conflict", show the human the differing records instead of choosing one."""

FORGET = """\
Remove records from memory (a soft delete): one record by memory_id, or every record of one
source by source_id.

Use it when a record is wrong or outdated (typically the losing side of a "conflict"), or when a
source document was rewritten and its old facts must go (forget by source_id, then remember the
current facts). Give exactly one of memory_id and source_id — passing both is an error, so a
cascade never happens by accident. Only records you can read are touched (others' drafts with
the same source_id stay). A forgotten record leaves search, its graph relations are removed, and
the deletion is kept for audit; it cannot be restored through MCP.

Returns, by id: {id, forgotten: true|false, workspace, at}; by source: {source_id,
forgotten_count, workspace, at}. A record that does not exist, is already forgotten or is not
visible to you is not an error: forgotten is false / forgotten_count is 0."""

VALIDATE_MEMORY = """\
Check which stored records of one source are out of date, without changing anything.

Use it after reading a source (a file, a document) that facts were stored from: pass its
source_id and the hash of its current content. Then re-read the source for the stale records,
remember the current facts and forget the stale ones.

Returns {source_id, current_source_hash, stale_count, fresh_count, stale: [...], fresh: [...]};
each entry has the record's id, fact_key, stored source_hash and version."""

MEMORY_HISTORY = """\
List every version of a fact (all records with one fact_key), oldest first, with why each was
written, who wrote it and when.

Use it to understand how a decision evolved or to see both sides of a "conflict" before asking the
human which is right. Give fact_key (with workspace), or memory_id to get the versions of that
record's fact_key (or the record alone if it has none).

Returns {fact_key, workspace, versions: [...]}: each live version has the same fields as a search
result (status, is_latest, reason, author, created_at, ...); a forgotten version appears only as
{id, version, forgotten: true, forgotten_at, reason, author, created_at}, without its content."""

RECALL_CONTEXT = """\
Get a ready-to-use context pack for a task: the records most useful for it, highest importance
first (pinned records always considered), cut to a token budget.

Use it at the start of a task instead of several searches. Describe the task in task; set
token_budget to how much of your context you can spend (about 4 characters per token).

Returns {task, token_budget, used_tokens, omitted (relevant records left out for lack of
budget), items: [...]}; each item has the same fields as a search result, including status:
cite "unverified" ones, re-check "stale" ones, and show "conflict" ones to the human."""

LIST_WORKSPACES = """\
List the workspaces of the key's project with how many records you can read in each.

Use it to discover where memories are kept before searching a specific workspace (or search with
workspace "*"). Returns {workspaces: [{id, name, memory_count, created_at}], tenant_id,
project_id}."""

GET_MEMORY = """\
Fetch one record by id, with its current status, versions info and graph relations.

Use it to follow an id you got from search, recall_context, conflicts_with, derived_from or
graph_relations. Returns {memory: {...same fields as a search result...}, workspace}; an id that
does not exist, was forgotten or is not visible to you answers "memory not found"."""

SEARCH_SESSIONS = """\
Search past conversations (sessions uploaded by mmw-agent or the REST API) by meaning and by
keywords; each hit comes with the turns around it.

Use it when the answer may have been said in an earlier session rather than stored as a memory:
"what did we decide about the retry policy last week?", "which command fixed the build?". In a
conversation the answer is often the turn after the one that matches, so each hit carries
`context` turns before and after it (default 2). Sessions are kept apart from memory records:
search never returns turns, and search_sessions never returns records.

Key parameters:
- query (required): what you are looking for, in your own words, any language.
- client / session_id: only one client's sessions, or one session (the client's own id).
- since / until: RFC 3339 times; only turns said in that window.
- limit (1-100, default 10), context (0-10 turns on each side, default 2).

Returns {query, results: [...]}, best first; each result has score, session (client, session_id,
title, working_directory, device, started_at, ended_at, author, shared_with_project), turn
(position, role, occurred_at, content, withheld) and context_before / context_after (turns in
order). You see your own sessions and those shared with the project. Turns passed Memory Guard:
secrets are redacted, and a turn the Guard refused is a stub "[withheld by Memory Guard: ...]"."""

FORGET_SESSION = """\
Forget one uploaded session (a soft delete): the session and its turns leave every read and
search_sessions, and the deletion is kept for audit. Give the client (e.g. "claude-code") and the
client's own session_id.

Use it when a person asks to remove a conversation from MMW. Your own session is forgotten first
when another member shared one with the same id. It cannot be uploaded again afterwards (the
upload answers 409). Returns {client, session_id, forgotten: true|false, at}; a session that does
not exist or that you cannot see is not an error: forgotten is false."""

LEDGER_RECORD = """\
Append one entry to the project's ledger: a transaction (money that moved) or a reminder (money
falling due). Use this, never remember, for payments, invoices, refunds, subscriptions, salaries
and anything else with an amount: the ledger keeps the amount exact, sums it per currency, and can
reverse it; a memory record cannot.

Key parameters:
- kind (required): "transaction" or "reminder".
- amount (required): a decimal STRING, signed ("-1240.18" paid out, "2500" received), with at most
  the currency's minor units (JPY none, EUR two, BHD three); never a JSON number.
- currency (required): ISO 4217 code in upper case.
- occurred_at (transactions, default now) / due_at (reminders, required) and repeat
  ("FREQ=MONTHLY;COUNT=12": daily, weekly, monthly, yearly; month ends are clamped).
- counterparty, category, memo, tags, visibility ("project" by default).
- reference: your own id (invoice or payment id). Recording the same reference again with the same
  content returns the stored entry (replayed: true); with other content it fails with a 409.

Entries are append-only: to correct or cancel one, use ledger_reverse. Card numbers and IBANs in
any text field are redacted; text that tries to instruct agents is refused."""

LEDGER_LIST = """\
List ledger entries you may read, newest first, one page at a time (limit, offset; next_offset is
null on the last page). Filters: kind, since/until (occurred_at, or due_at for reminders),
category, counterparty, currency, text (words in memo or counterparty). Each entry says whether it
reverses another (reverses) or was reversed (reversed_by)."""

LEDGER_BALANCE = """\
Sum the transactions you may read, per currency (amounts are never added across currencies),
optionally per category (by_category) and per calendar month in UTC (by_month), within
since/until, for one currency or category. Reversed entries and their reversals are left out, so
a reversal nets its original out of every period. Balances are exact decimal strings."""

LEDGER_REVERSE = """\
Correct or cancel a ledger entry by appending its reversal: the same currency and category, the
opposite amount, your reason as its memo. Nothing is edited or deleted. An entry can be reversed
once, and a reversal cannot itself be reversed (409). Reversing a reminder cancels it; to mark
one occurrence of a reminder paid, use ledger_complete instead."""

LEDGER_UPCOMING = """\
Reminders falling due from now up to until (default 30 days ahead, at most 366), repeats expanded
into one item per occurrence, soonest first; cancelled (reversed) reminders and completed
occurrences are left out. Use it before planning payments or when asked what is due."""

LEDGER_COMPLETE = """Mark one occurrence of a reminder as paid: appends a transaction with the reminder's amount,
currency, counterparty and category that completes it. due_at names the occurrence (as
ledger_upcoming lists it); without it, the earliest occurrence not completed yet. occurred_at is
when it was paid (default now); memo is kept on the transaction. A completed occurrence leaves
ledger_upcoming and is not e-mailed. Each occurrence is completed once: a second completion fails
with a 409 (occurrence was already completed); a cancelled reminder, or an entry that is not a
reminder, cannot be completed (409)."""
