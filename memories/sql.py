"""The read hot paths' hand-written SQL, in one place (issue #19): a search's scope compiled once,
the keyword and dense rankers' statements over it, and its winners' presented rows.

Why: the ORM rebuilt and recompiled the same visibility rule for each statement of a search (the
keyword ranker, the dense ranker, loading the winners), 1–3 ms of Python each, and built 40 model
objects to present 10 records (docs/latency.md, "One SQL module around a scope compiled once"). Here the
ORM compiles a queryset's ``FROM`` and ``WHERE`` once (``Scope.of``), and every statement of the
search is text around them: the rules of who reads what stay the ORM's (``Memory.objects.visible_to``,
``live``, the filters), written once.

Contract: each function answers exactly what the ORM query it replaced answered. The references
are kept in ``bench.common`` (``orm_keyword_ranked``, ``orm_nearest``, ``orm_presented``) and
``tests/memories/test_sql.py`` compares both on every kind of scope (one workspace, every
workspace, filters, ``latest_only``, another principal's visibility, an empty scope).

Columns of the scope's table are always qualified (``Scope.column``): the scope may join other
tables (``workspace="*"`` joins the workspaces) whose columns share names with ours.

Why one module of this length: raw SQL is kept in one module on purpose (docs/architecture.md), so
every hand-written statement is reviewed and tested against its ORM reference in one place.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models import QuerySet

from memories.models import NOT_PRESENTED, Memory, VectorSum, Visibility
from mmw import replicas

TSQUERY = "to_tsquery('simple'::regconfig, mmw_unaccent(%s))"
SPELLED_TSQUERY = "%s::tsquery"


@dataclass(frozen=True)
class Spelled:
    """A keyword term written out as the words it stands for (``search.term_stats`` spells a
    prefix ``inspir:*`` as every word of the project it covers): matched as ordinary GIN entries
    instead of a prefix scan that collects every posting of every covered word first. ``words``
    are lexemes as stored, taken literally; ``term`` is the term they spell (its IDF, its name)."""

    term: str
    words: tuple[str, ...]


Term = str | Spelled


def tsquery(term: Term) -> tuple[str, object]:
    """``term`` as a ``tsquery`` SQL expression and its one parameter: a ``to_tsquery`` term
    (``deploy:*``, ``(kids:* | kid)``) is parsed and folded as documents are; a ``Spelled``
    term is a literal disjunction of its words."""
    if isinstance(term, Spelled):
        return SPELLED_TSQUERY, " | ".join(_quoted_lexeme(word) for word in term.words)
    return TSQUERY, term


def any_of(terms: Sequence[Term]) -> tuple[str, list[object]]:
    """One ``tsquery`` expression matching a document that contains any of ``terms``."""
    parts = [tsquery(term) for term in terms]
    return "(" + " || ".join(sql for sql, _ in parts) + ")", [param for _, param in parts]


@dataclass(frozen=True)
class Scope:
    """The rows of a queryset as SQL: its ``FROM`` (the table and the joins its filters need) and
    ``WHERE``, compiled once by the ORM. A statement drawing on ``FROM {from_sql} WHERE
    {where_sql}`` with ``params`` (the FROM's, then the WHERE's) draws on exactly the queryset's rows."""

    table: str  # the scope's table, quoted: what ``column`` qualifies with
    from_sql: str
    where_sql: str
    params: tuple[Any, ...]
    using: str

    @classmethod
    def of(cls, candidates: QuerySet[Any]) -> Scope | None:
        """``candidates``' scope (its ordering, selection and ``select_related`` are ignored);
        None when it can hold nothing (``none()``, ``id__in=[]``). A queryset whose rows are not
        just its table's rows meeting a condition — sliced, distinct, grouped or aggregated
        (``HAVING``), a union — has no such scope: ``ValueError``, never a wider scope."""
        query = candidates.values("pk").query.chain()
        query.clear_ordering(force=True)
        compiler = query.get_compiler(using=candidates.db)
        compiler.pre_sql_setup()
        shaped = query.combinator or query.is_sliced or query.distinct or query.group_by is not None
        if shaped or compiler.having is not None or compiler.qualify is not None:
            raise ValueError("a scope is a table's rows meeting a condition: slice, group or combine it after")
        try:
            where, where_params = compiler.compile(compiler.where) if compiler.where is not None else ("", [])
        except EmptyResultSet:
            return None
        except FullResultSet:
            where, where_params = "", []
        from_parts, from_params = compiler.get_from_clause()
        quote = compiler.connection.ops.quote_name
        return cls(
            table=quote(candidates.model._meta.db_table),
            from_sql=" ".join(from_parts),
            where_sql=where or "TRUE",
            params=(*from_params, *where_params),
            using=candidates.db,
        )

    def narrowed(self, condition: str, params: Sequence[Any]) -> Scope:
        """This scope's rows that also meet ``condition``: SQL text of constants and qualified
        columns only, every value a ``%s`` bound from ``params``."""
        where = f"({self.where_sql}) AND ({condition})"
        return Scope(self.table, self.from_sql, where, (*self.params, *params), self.using)

    def column(self, name: str) -> str:
        """``name`` of the scope's table, qualified."""
        return f'{self.table}."{name}"'

    def rows(self, select: str, condition: str = "TRUE", tail: str = "", joins: str = "") -> str:
        """``SELECT {select} FROM … {joins} WHERE (scope) AND ({condition}) {tail}``: bind the
        select's parameters first, then ``params``, then the condition's and the tail's.
        ``select``, ``joins``, ``condition`` and ``tail`` are SQL text of constants and columns
        (``joins`` binds nothing); values are bound."""
        return f"SELECT {select} FROM {self.from_sql} {joins} WHERE ({self.where_sql}) AND ({condition}) {tail}"  # noqa: S608


# --- the keyword ranker ------------------------------------------------------------------------


def term_sum(terms: Sequence[Term], weights: Sequence[float], context_weight: float) -> tuple[str, list[object]]:
    """SQL summing ``weights[i]`` over the ``terms[i]`` a row's ``search_document`` contains (with
    ``context_weight`` > 0, ``context_weight`` of it for a term only in ``context_document``), and
    its parameters. The columns are unqualified: it reads the rows of ``keyword_ranked``'s inner scan.
    The weights are ``float8``: a bare literal is ``numeric`` to PostgreSQL, whose arithmetic over
    ~1,000 rows made the statement 1.7x slower (docs/latency.md, "One SQL module around a scope
    compiled once")."""
    params: list[object] = []
    cases = []
    for term, weight in zip(terms, weights, strict=True):
        query, bound = tsquery(term)
        if context_weight > 0:
            cases.append(
                f"CASE WHEN search_document @@ {query} THEN %s::float8"
                f" WHEN context_document @@ {query} THEN %s::float8 ELSE 0::float8 END"
            )
            params += [bound, weight, bound, weight * context_weight]
        else:
            cases.append(f"CASE WHEN search_document @@ {query} THEN %s::float8 ELSE 0::float8 END")
            params += [bound, weight]
    return "(" + " + ".join(f"({case})" for case in cases) + ")", params


@dataclass(frozen=True)
class KeywordQuery:
    """What the keyword ranker asks (``search.keyword_ranking`` decides it): records containing
    one of ``match`` (or, with ``context_weight`` > 0, whose ``context_document`` does), scored
    by the IDF ``weights`` of the ``terms`` they contain; with ``newest`` only the newest
    ``newest`` matches are scored (0: all of them), looked for first among the records of the
    recency ``window`` (bucket lexemes, ``memories.recency``; empty: no window)."""

    terms: Sequence[Term]
    weights: Sequence[float]
    match: Sequence[Term]
    context_weight: float
    newest: int = 0
    window: Sequence[str] = ()


def term_hits(terms: Sequence[Term], context_weight: float) -> tuple[list[str], list[object]]:
    """One SQL expression per term saying where a row of ``keyword_ranked``'s inner scan holds it:
    1 in ``search_document``, 2 only in ``context_document`` (with ``context_weight`` > 0), else
    0; and their parameters. Each document is matched against each term once per row."""
    params: list[object] = []
    hits = []
    for term in terms:
        query, bound = tsquery(term)
        if context_weight > 0:
            hits.append(
                f"CASE WHEN search_document @@ {query} THEN 1 WHEN context_document @@ {query} THEN 2 ELSE 0 END"
            )
            params += [bound, bound]
        else:
            hits.append(f"CASE WHEN search_document @@ {query} THEN 1 ELSE 0 END")
            params.append(bound)
    return hits, params


def hit_sum(weights: Sequence[float], context_weight: float) -> tuple[str, list[object]]:
    """SQL summing ``weights[i]`` over the terms a row holds (``h<i>`` = 1, ``term_hits``) and
    ``context_weight`` of it over the terms only its context holds (``h<i>`` = 2): ``term_sum``'s
    value, in the same order, from each term's match computed once."""
    params: list[object] = []
    cases = []
    for i, weight in enumerate(weights):
        if context_weight > 0:
            cases.append(f"CASE h{i} WHEN 1 THEN %s::float8 WHEN 2 THEN %s::float8 ELSE 0::float8 END")
            params += [weight, weight * context_weight]
        else:
            cases.append(f"CASE h{i} WHEN 1 THEN %s::float8 ELSE 0::float8 END")
            params.append(weight)
    return "(" + " + ".join(f"({case})" for case in cases) + ")", params


# A keyword document read into memory once per row: a long record's or turn's ``tsvector`` is stored
# compressed (TOAST), and every ``@@`` on the stored value decompresses it again; concatenating the
# empty vector yields the same lexemes and positions, decompressed once (issue #37: term statistics
# over a LongMemEval client's ~490 turns 1.7x faster).
IN_MEMORY = "({} || ''::tsvector)"


def keyword_ranked(scope: Scope, asked: KeywordQuery, limit: int) -> list[tuple[Any, float, Any, float, float]]:
    """The best ``limit`` rows of ``scope`` for ``asked``, best first (rank, then newest, then
    the greater id: records of one batch share ``created_at``, and a cut among equals must not
    depend on the plan), as
    ``(id, rank, created_at, matched idf, matched term count)``. A row's rank is its matched IDF
    divided by sqrt(1 + ln(1 + its distinct words)).

    One statement: an inner scan of the matching rows (carrying their keyword columns out, the
    newest first and cut when ``asked.newest``; ``matched_rows``), where each term is matched once
    per row (``term_hits``; ``OFFSET 0`` keeps the planner from folding the matches back into
    each sum), and the scores over them (``hit_sum``). Matching a term thrice per row (the rank,
    the IDF and the count each asked it) cost long records most: each match reads the row's whole
    keyword document again (issue #37, BENCHMARKS.md); the documents are read into memory once per
    row (``IN_MEMORY``), another ``OFFSET 0`` apart."""
    hits, hit_params = term_hits(asked.terms, asked.context_weight)
    idf_sql, idf_params = hit_sum(asked.weights, asked.context_weight)
    count_sql, count_params = hit_sum([1.0] * len(asked.terms), asked.context_weight)
    matched, matched_params = matched_rows(scope, asked)
    flags = "".join(f", {hit} AS h{i}" for i, hit in enumerate(hits))
    context = f", {IN_MEMORY.format('context_document')} AS context_document" if asked.context_weight > 0 else ""
    sql = (
        f"SELECT id, {idf_sql} / sqrt(1.0::float8 + ln(1.0::float8 + length)) AS rank, created_at, "  # noqa: S608
        f"{idf_sql} AS idf, {count_sql} AS count FROM ("
        f"SELECT id, created_at, length(search_document) AS length{flags} FROM ("
        f"SELECT id, created_at, {IN_MEMORY.format('search_document')} AS search_document{context}"
        f" FROM ({matched}) AS matched OFFSET 0) AS read OFFSET 0"
        ") AS scored ORDER BY rank DESC, created_at DESC, id DESC LIMIT %s"
    )
    params: list[Any] = [*idf_params, *idf_params, *count_params, *hit_params, *matched_params, limit]
    with connections[scope.using].cursor() as cursor:
        cursor.execute(sql, params)
        return [(rid, float(rank), created, float(idf), float(count)) for rid, rank, created, idf, count in cursor]


def matched_rows(scope: Scope, asked: KeywordQuery) -> tuple[str, list[Any]]:
    """The rows ``keyword_ranked`` scores (a ``SELECT`` of their keyword columns) and its parameters:
    every row of ``scope`` containing one of ``asked.match``, or only the newest ``asked.newest``.

    With a recency ``window`` the newest are looked for inside it first: the GIN index intersects
    the words' posting lists with the window's buckets, and only those rows reach the heap. The
    window is the newest stretch of time, so when it holds ``newest`` matches they are the newest
    of all; when it holds fewer, the same statement scans without it (a one-time filter on the
    windowed count decides which branch runs), so the rows never depend on the window."""
    contextual = asked.context_weight > 0
    columns = ["id", "created_at", "search_document"] + (["context_document"] if contextual else [])
    select = ", ".join(f"{scope.column(c)} AS {c}" for c in columns)
    wanted, wanted_params = any_of(asked.match)
    condition = f"{scope.column('search_document')} @@ {wanted}"
    if contextual:
        condition += f" OR {scope.column('context_document')} @@ {wanted}"
    bound = wanted_params * (2 if contextual else 1)
    if not asked.newest:
        return scope.rows(select, condition), [*scope.params, *bound]
    newest = f"ORDER BY {scope.column('created_at')} DESC, {scope.column('id')} DESC LIMIT %s"
    everywhere = scope.rows(select, condition, newest)
    if not asked.window:
        return everywhere, [*scope.params, *bound, asked.newest]
    inside = scope.rows(select, f"({condition}) AND {scope.column('recency_document')} @@ %s::tsquery", newest)
    enough = "(SELECT count(*) FROM windowed) >= %s"
    sql = (
        f"WITH windowed AS MATERIALIZED ({inside}) "  # noqa: S608 - text of columns and placeholders
        f"SELECT * FROM windowed WHERE {enough} "
        f"UNION ALL SELECT * FROM ({everywhere}) AS everywhere WHERE NOT {enough}"
    )
    window = " | ".join(_quoted_lexeme(lexeme) for lexeme in asked.window)
    return sql, [
        *scope.params,
        *bound,
        window,
        asked.newest,
        asked.newest,
        *scope.params,
        *bound,
        asked.newest,
        asked.newest,
    ]


def _quoted_lexeme(lexeme: str) -> str:
    """``lexeme`` as a ``tsquery`` operand taken literally (no parsing, no normalisation)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


# --- the dense ranker --------------------------------------------------------------------------

_MEMORY_TABLE = f'"{Memory._meta.db_table}"'
_VECTOR_SUM_TABLE = f'"{VectorSum._meta.db_table}"'
_SHARED = f"('{Visibility.PROJECT.value}', '{Visibility.ORG.value}')"


def _in_background(scope: Scope) -> str:
    """Whether ``VectorSum`` counts a row of ``scope`` (with a vector of the sum's model): the
    trigger's rule (migration 0014, ``_COUNTED``), live and shared."""
    return f"{scope.column('forgotten_at')} IS NULL AND {scope.column('visibility')} IN {_SHARED}"


# Stands for the query's vector in ``nearest_statement``'s SQL until the caller binds it.
QUERY_VECTOR = "mmw:query-vector"


def nearest_statement(scope: Scope, model_id: str, dim: int, limit: int) -> tuple[str, tuple[object, ...]]:
    """The statement for the ``limit`` rows of ``scope`` carrying a ``dim``-long ``model_id``
    vector nearest to the query's (cosine distance), as ``(id, distance, created_at, background)``;
    the query vector's parameter is ``QUERY_VECTOR`` until bound. The vector expression and the
    ``embedding_model`` test are the partial HNSW index's (``memories.vector_index``), so the
    planner uses it.

    ``background`` is a memory record's cosine with its workspace's background direction
    (``VectorSum``: the sum of the shared records' vectors of that model) *without the record's
    own vector* when the sum counts it: how much the record resembles everything else, which the
    relevance floor discounts (``memories.search``). 0 when nothing else is summed (a workspace's
    only shared record, a workspace of drafts) or the table is not the records' (session turns).
    Leaving the record out matters in small workspaces: a sum of three vectors is a third the
    record itself, which would discount a lone record's every match."""
    vector = f"({scope.column('embedding')})::vector({int(dim)})"
    if scope.table != _MEMORY_TABLE:
        select = f"{scope.column('id')}, {vector} <=> %s::vector AS distance, {scope.column('created_at')}, 0.0"
        sql = scope.rows(select, f"{scope.column('embedding_model')} = %s", "ORDER BY distance ASC LIMIT %s")
        return sql, (QUERY_VECTOR, *scope.params, model_id, limit)
    select = (
        f"{scope.column('id')} AS id, {vector} <=> %s::vector AS distance, {scope.column('created_at')} AS created_at,"
        f" {vector} AS v, {scope.column('workspace_id')} AS w, ({_in_background(scope)}) AS summed"
    )
    inner = scope.rows(select, f"{scope.column('embedding_model')} = %s", "ORDER BY distance ASC LIMIT %s")
    total = f"b.total::vector({int(dim)})"
    sql = (
        f"SELECT n.id, n.distance, n.created_at,"  # noqa: S608 (text of constants; values are bound)
        f" CASE WHEN n.summed AND b.docs > 1 THEN 1 - (n.v <=> ({total} - n.v))"
        f" WHEN NOT n.summed AND b.docs > 0 THEN 1 - (n.v <=> {total}) ELSE 0.0 END"
        f" FROM ({inner}) AS n LEFT JOIN {_VECTOR_SUM_TABLE} AS b ON b.workspace_id = n.w AND b.model = %s"
        f" ORDER BY n.distance ASC"
    )
    # The inner ``select`` binds first: the query vector, then the scope's, the condition's, the
    # tail's; the join's model last.
    return sql, (QUERY_VECTOR, *scope.params, model_id, limit, model_id)


# --- the winners' rows -------------------------------------------------------------------------

_PRESENTED_FIELDS = [f for f in Memory._meta.concrete_fields if f.name not in NOT_PRESENTED]
_COLUMNS = [str(f.column) for f in _PRESENTED_FIELDS]
_NAMES = [f.attname for f in _PRESENTED_FIELDS]
_AUTHOR = Memory._meta.get_field("author").related_model
_KEY = Memory._meta.get_field("api_key").related_model
_WORKSPACE = Memory._meta.get_field("workspace").related_model


def presented(scope: Scope, ids: Sequence[Any]) -> dict[uuid.UUID, Memory]:
    """The rows of ``scope`` among ``ids`` (records' ids), by id, loaded as ``present`` reads
    them (see ``loaded``): what ``selectors._presentable(…).in_bulk(ids)`` loaded."""
    if not ids:
        return {}
    return {r.id: r for r in loaded(scope, f"{scope.column('id')} = ANY(%s::uuid[])", [list(ids)])}


def loaded(scope: Scope, condition: str = "TRUE", params: Sequence[Any] = (), order: str = "") -> list[Memory]:
    """The records of ``scope`` meeting ``condition`` (SQL text of constants and columns, its
    values bound from ``params``), in ``order`` (an ``ORDER BY`` list of qualified columns), as
    ``present`` reads them: without the ``NOT_PRESENTED`` columns, with their author (id, email),
    key (id, prefix) and workspace (id, name) loaded in the same statement. One statement, four
    small objects per record, nothing compiled."""
    own = ", ".join(scope.column(column) for column in _COLUMNS)
    select = f"{own}, mmw_author.id, mmw_author.email, mmw_key.id, mmw_key.prefix, mmw_ws.id, mmw_ws.name"
    joins = (
        f"LEFT OUTER JOIN {_quoted(_AUTHOR)} mmw_author ON mmw_author.id = {scope.column('author_id')} "
        f"LEFT OUTER JOIN {_quoted(_KEY)} mmw_key ON mmw_key.id = {scope.column('api_key_id')} "
        f"INNER JOIN {_quoted(_WORKSPACE)} mmw_ws ON mmw_ws.id = {scope.column('workspace_id')}"
    )
    sql = scope.rows(select, condition, f"ORDER BY {order}" if order else "", joins)
    with connections[scope.using].cursor() as cursor:
        cursor.execute(sql, [*scope.params, *params])
        rows = cursor.fetchall()
    return [_record(scope.using, row) for row in rows]


# --- vectors still to compute ------------------------------------------------------------------


def pending_vectors(scope: Scope, cap: int) -> int:
    """How many rows of ``scope`` (records or session turns) still wait for their vector
    (``embedding_model`` IS NULL: stored, not yet embedded), counted up to ``cap``: a backlog of
    more answers ``cap``. The scan stops at ``cap`` rows and reads only the partial indexes of
    unembedded rows (``memory_unembedded``, ``turn_unembedded``), so a scope with nothing pending
    costs one index probe whatever its size."""
    inner = scope.rows("1", f"{scope.column('embedding_model')} IS NULL", "LIMIT %s")
    with connections[scope.using].cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({inner}) AS pending", [*scope.params, cap])  # noqa: S608
        return int(cursor.fetchone()[0])


def workspace_counts(project_id: uuid.UUID, rule: Scope | None, pending_cap: int) -> list[tuple[Any, int, int]]:
    """The project's live workspaces by name, each with how many live records the rows of ``rule``
    (a principal's readable records, forgotten ones included: ``readable_scope(live=False)``;
    None: reads nothing) hold there, and how many of those still wait for their vector (counted up
    to ``pending_cap`` per workspace, as ``pending_vectors`` counts). One statement: each
    workspace's trigger-kept ``LiveCount`` (every record not forgotten) less the restricted
    records (drafts, department records) outside ``rule`` and the expired ones inside it that the
    expiry job has not forgotten yet. Only restricted, expired or unembedded records are read (the
    partial indexes ``memory_ws_restricted``, ``memory_unembedded``), so a workspace of embedded
    project-visible records costs O(1) whatever its size. ``rule`` is a scope of the
    records' table alone (no joins): its ``WHERE`` is used inside a count over that table."""
    if rule is not None and rule.from_sql != rule.table:
        raise ValueError("workspace_counts needs a rule over the records' table alone (readable_scope)")
    fields = list(_WORKSPACE._meta.concrete_fields)
    own = ", ".join(f'w."{f.column}"' for f in fields)
    hidden, params = "", []
    if rule is not None:  # the records the rule hides, per workspace (the rule's columns are of its table)
        m = rule.table
        restricted = f"{m}.visibility IN ('author', 'department')"
        expired = f"{m}.expires_at <= statement_timestamp()"
        readable = rule.where_sql
        hidden = (
            f"LEFT OUTER JOIN (SELECT {m}.workspace_id, count(*) FILTER (WHERE {restricted})"  # noqa: S608
            f" - count(*) FILTER (WHERE {restricted} AND ({readable}))"
            f" + count(*) FILTER (WHERE {expired} AND ({readable})) AS n FROM {m}"
            f" WHERE {m}.project_id = %s AND {m}.forgotten_at IS NULL AND ({restricted} OR {expired})"
            f" GROUP BY {m}.workspace_id) hidden ON hidden.workspace_id = w.id"
        )
        params = [*rule.params, *rule.params, project_id]
    live = "COALESCE((SELECT records FROM memories_livecount WHERE scope = 'w:' || w.id), 0)"
    count = f"{live} - COALESCE(hidden.n, 0)" if rule is not None else "0"
    pending, pending_params = "0", []
    if rule is not None:  # the readable unembedded records of each workspace, at most pending_cap
        m = rule.table
        unembedded = (
            f"SELECT 1 FROM {m} WHERE {m}.workspace_id = w.id AND {m}.embedding_model IS NULL"  # noqa: S608
            f" AND {m}.forgotten_at IS NULL AND ({m}.expires_at IS NULL OR {m}.expires_at > statement_timestamp())"
            f" AND ({rule.where_sql}) LIMIT %s"
        )
        pending = f"(SELECT count(*) FROM ({unembedded}) AS p)"  # noqa: S608 - text of columns and placeholders
        pending_params = [*rule.params, pending_cap]
    sql = (
        f"SELECT {own}, {count}, {pending} FROM {_quoted(_WORKSPACE)} w {hidden}"  # noqa: S608
        " WHERE w.project_id = %s AND w.deleted_at IS NULL ORDER BY w.name"
    )
    using = rule.using if rule is not None else replicas.current()
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [*pending_params, *params, project_id])
        rows = cursor.fetchall()
    names = [f.attname for f in fields]
    return [(_WORKSPACE.from_db(using, names, row[: len(fields)]), int(row[-2]), int(row[-1])) for row in rows]


def ids_among(scope: Scope, ids: Sequence[Any]) -> set[uuid.UUID]:
    """Which of ``ids`` (records' ids) are rows of ``scope``."""
    if not ids:
        return set()
    select = scope.column("id")
    with connections[scope.using].cursor() as cursor:
        cursor.execute(scope.rows(select, f"{select} = ANY(%s::uuid[])"), [*scope.params, list(ids)])
        return {row[0] for row in cursor.fetchall()}


def _record(using: str, row: Sequence[Any]) -> Memory:
    """A ``presented`` row as a record with its author, key and workspace cached on it — only the
    fields ``present`` reads (author id/email, key id/prefix, workspace id/name): another field
    of them would be loaded by a query of its own."""
    width = len(_PRESENTED_FIELDS)
    record = Memory.from_db(
        using, _NAMES, [_to_python(f, v) for f, v in zip(_PRESENTED_FIELDS, row[:width], strict=True)]
    )
    author_id, email, key_id, prefix, ws_id, ws_name = row[width:]
    _cache(record, "author", _AUTHOR.from_db(using, ["id", "email"], [author_id, email]) if author_id else None)
    _cache(record, "api_key", _KEY.from_db(using, ["id", "prefix"], [key_id, prefix]) if key_id else None)
    _cache(record, "workspace", _WORKSPACE.from_db(using, ["id", "name"], [ws_id, ws_name]))
    return record


def _quoted(model: Any) -> str:
    return f'"{model._meta.db_table}"'


def _cache(record: Memory, name: str, value: Any) -> None:
    Memory._meta.get_field(name).set_cached_value(record, value)  # type: ignore[union-attr]


def _to_python(field: Any, value: Any) -> Any:
    """A column's value through its field's own ``from_db_value`` (none of the presented columns
    has one today; the backend's converters are not applied: psycopg already gives these columns'
    Python types, and ``test_sql`` compares every field with the ORM's)."""
    convert = getattr(field, "from_db_value", None)
    return convert(value, None, None) if convert is not None and value is not None else value


def workspaces_of(scope: Scope, ids: Sequence[Any], limit: int) -> list[tuple[str, int]]:
    """The workspaces ``ids`` (records of ``scope``, best first) lie in: ``(name, matches)``, most
    matches first, then the one holding the better-ranked record; at most ``limit``."""
    if not ids:
        return []
    records, workspaces = scope.table, _quoted(_WORKSPACE)
    statement = (
        f"SELECT w.name, count(*) AS n, min(array_position(%s::uuid[], {records}.id)) AS best"  # noqa: S608
        f" FROM {records} JOIN {workspaces} w ON w.id = {records}.workspace_id"
        f" WHERE {records}.id = ANY(%s::uuid[]) GROUP BY w.name ORDER BY n DESC, best LIMIT %s"
    )
    wanted = [str(i) for i in ids]
    with connections[scope.using].cursor() as cursor:
        cursor.execute(statement, [wanted, wanted, limit])
        return [(str(name), int(n)) for name, n, _ in cursor.fetchall()]


def row_values(
    scope: Scope, ids: Sequence[Any], columns: Sequence[str], *, chars: int | None = None
) -> dict[Any, tuple[str | None, ...]]:
    """``columns`` (a record's ``source_id`` or ``content``, a turn's ``session_id`` or ``role``) of
    each of ``ids`` (rows of ``scope``'s table), as text (None where null), in one statement.
    ``chars``: each value cut to its first ``chars`` characters by PostgreSQL, so a long record is
    not read whole to be cut here (the reranker's texts)."""
    if not ids or not columns:
        return {}
    table = scope.table
    wanted = [str(i) for i in ids]
    values = [f'{table}."{column}"::text' for column in columns]
    if chars is not None:
        values = [f"left({value}, {int(chars)})" for value in values]
    selected = ", ".join(values)
    statement = (
        f"SELECT {table}.id, {selected} FROM {table}"  # noqa: S608 - names from the model
        f" WHERE {table}.id = ANY(%s::{_id_type(ids)}[])"
    )
    with connections[scope.using].cursor() as cursor:
        cursor.execute(statement, [wanted])
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


def matched_terms(scope: Scope, ids: Sequence[Any], terms: Sequence[str]) -> dict[Any, tuple[list[str], list[str]]]:
    """For ``explain``: which of the query's keyword ``terms`` (``words.keyword_terms``) each row
    of ``ids`` holds in its own words, and which only in its predecessor's (``context_document``,
    the words a sequence member is also found by). One statement; rows of ``scope``'s table."""
    if not ids or not terms:
        return {i: ([], []) for i in ids}
    table = scope.table
    tsq = "to_tsquery('simple'::regconfig, mmw_unaccent(t.term))"
    statement = (
        f"SELECT {table}.id, array_remove(array_agg(CASE WHEN {table}.search_document @@ {tsq} THEN t.term END), NULL),"  # noqa: S608
        f" array_remove(array_agg(CASE WHEN NOT {table}.search_document @@ {tsq}"
        f" AND coalesce({table}.context_document @@ {tsq}, false) THEN t.term END), NULL)"
        f" FROM {table} CROSS JOIN unnest(%s::text[]) WITH ORDINALITY AS t(term, i)"
        f" WHERE {table}.id = ANY(%s::{_id_type(ids)}[]) GROUP BY {table}.id"
    )
    with connections[scope.using].cursor() as cursor:
        cursor.execute(statement, [list(terms), [str(i) for i in ids]])
        return {row_id: (list(own), list(context)) for row_id, own, context in cursor.fetchall()}


def _id_type(ids: Sequence[Any]) -> str:
    """The SQL array type of row ids: a record's UUID, a turn's bigint."""
    return "uuid" if isinstance(ids[0], uuid.UUID) else "bigint"
