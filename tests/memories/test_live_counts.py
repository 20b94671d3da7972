"""The trigger-kept counters (live records per scope, term statistics per project) always equal
a recount, whatever changed the records (services, bulk statements, deletes, truncation); the
limits and the keyword ranker read them."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Workspace
from memories import search, services
from memories.models import LiveCount, Memory, TermStat, VectorSum, live_count, project_live_counts
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db


def truth() -> dict[str, int]:
    """What the counters must say: live records per scope, by counting them."""
    out: dict[str, int] = {}
    for m in Memory.objects.filter(forgotten_at__isnull=True).values("workspace_id", "project_id", "account_id"):
        for scope in (f"w:{m['workspace_id']}", f"p:{m['project_id']}", f"a:{m['account_id']}"):
            out[scope] = out.get(scope, 0) + 1
    return out


def counters() -> dict[str, int]:
    return {c.scope: c.records for c in LiveCount.objects.all() if c.records}


def test_counters_follow_every_kind_of_change(tenancy: Tenancy) -> None:
    alice, charlie = Api(tenancy.alice.key), Api(tenancy.charlie.key)
    ids = [alice.ok_remember(content=f"fact number {i} about deploys")["id"] for i in range(5)]
    alice.ok_remember(content="a note in another workspace", workspace="ops")
    charlie.ok_remember(content="charlie's own fact")
    assert counters() == truth()
    assert live_count(project_id=tenancy.alice.project.pk) == 6
    assert live_count(account_id=tenancy.charlie.account.pk) == 1

    status, _ = alice.forget(memory_id=ids[0])
    assert status == 200
    assert counters() == truth()
    assert live_count(project_id=tenancy.alice.project.pk) == 5

    # Bulk statements that no service issues: one UPDATE touching several rows, one un-forget,
    # one UPDATE that changes nothing the counters track, one DELETE.
    Memory.objects.filter(id__in=ids[1:3]).update(forgotten_at=timezone.now())
    Memory.objects.filter(id=ids[1]).update(forgotten_at=None)
    Memory.objects.filter(id__in=ids).update(importance=0.9)
    Memory.objects.filter(id=ids[4]).delete()
    assert counters() == truth()
    ops = Workspace.objects.get(project=tenancy.alice.project, name="ops")
    assert live_count(workspace_id=ops.pk) == 1

    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's transaction holds deferred FK checks
        cursor.execute("TRUNCATE memories_memory CASCADE")
    assert counters() == {} == truth()


def test_project_counts_come_in_one_query_and_name_every_project_asked(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    first = alice.ok_remember(content="one fact")["id"]
    alice.ok_remember(content="another fact")
    alice.forget(memory_id=first)
    empty = uuid.uuid4()
    with CaptureQueriesContext(connection) as captured:
        counts = project_live_counts([tenancy.alice.project.pk, tenancy.charlie.project.pk, empty])
    assert len(captured.captured_queries) == 1
    assert counts == {tenancy.alice.project.pk: 1, tenancy.charlie.project.pk: 0, empty: 0}


def test_live_count_needs_exactly_one_scope() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        live_count()
    with pytest.raises(ValueError, match="exactly one"):
        live_count(workspace_id=1, account_id=1)


def test_technical_limits_read_the_counters(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    with override_settings(MMW_MAX_MEMORIES_PER_WORKSPACE=2):
        alice.ok_remember(content="first")
        alice.ok_remember(content="second")
        status, answer = alice.remember(content="third")
        assert (status, answer["error"]["code"]) == (403, "limit_exceeded")
        assert "workspace" in answer["error"]["message"]
        # Another workspace is not full; forgetting one record frees room in this one.
        alice.ok_remember(content="elsewhere", workspace="other")
        first = Memory.objects.filter(content="first").get()
        assert alice.forget(memory_id=str(first.id))[0] == 200
        alice.ok_remember(content="third, after a forget")
    with override_settings(MMW_MAX_MEMORIES_PER_TENANT=3):
        status, answer = alice.remember(content="one too many for the tenant", workspace="third")
        assert (status, answer["error"]["message"]) == (403, "maximum number of memories exceeded for tenant")
    assert services  # the limits are the service layer's (memories.services._check_technical_limits)


def test_a_remember_reads_its_workspace_and_account_counts_in_one_query(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    alice.ok_remember(content="the workspace exists and the caches are warm")
    with CaptureQueriesContext(connection) as captured:
        alice.ok_remember(content="one more record")
    reads = [q["sql"] for q in captured.captured_queries if 'FROM "memories_livecount"' in q["sql"]]
    technical = [sql for sql in reads if "'a:" in sql]
    assert len(technical) == 1, reads
    assert "'w:" in technical[0]


def stats(project_id: uuid.UUID) -> dict[str, int]:
    return {t.term: t.docs for t in TermStat.objects.filter(project_id=project_id) if t.docs}


def stats_truth(project_id: uuid.UUID) -> dict[str, int]:
    """Document frequencies by recounting: live records of visibility project/org only (their
    words and their recency buckets, ``memories.recency``), and the '!' words of the rest."""
    out: dict[str, int] = {}
    shared = Memory.objects.filter(project_id=project_id, forgotten_at__isnull=True, visibility__in=["project", "org"])
    for record in shared:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT tsvector_to_array(search_document || recency_document) FROM memories_memory WHERE id = %s",
                [record.id],
            )
            lexemes = cursor.fetchone()[0]
        for lexeme in [*lexemes, ""]:
            out[lexeme] = out.get(lexeme, 0) + 1
    # The words the shared counts miss, under '!' (migration 0013): every live record's context
    # document, and every word of a live record that is not shared.
    for record in Memory.objects.filter(project_id=project_id, forgotten_at__isnull=True):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT tsvector_to_array(CASE WHEN visibility IN ('project', 'org')"
                " THEN coalesce(context_document, ''::tsvector)"
                " ELSE search_document || coalesce(context_document, ''::tsvector) END)"
                " FROM memories_memory WHERE id = %s",
                [record.id],
            )
            for lexeme in cursor.fetchone()[0]:
                out["!" + lexeme] = out.get("!" + lexeme, 0) + 1
    return out


def test_term_statistics_count_only_what_every_member_reads(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    project = tenancy.alice.project.pk
    a = alice.ok_remember(content="Déploiement du cluster Kafka le mardi")["id"]
    alice.ok_remember(content="The Kafka cluster runs version 3.7", fact_key="kafka.version")
    alice.ok_remember(content="secret draft about kafka zookeeper", visibility="author")
    assert stats(project) == stats_truth(project)
    assert stats(project)[""] == 2  # the draft is not in the corpus
    assert stats(project)["kafka"] == 2
    assert stats(project)["deploiement"] == 1  # folded like the search document
    assert "zookeeper" not in stats(project)
    assert stats(project)["!zookeeper"] == 1  # known to spell a prefix with, never weighed
    assert alice.forget(memory_id=a)[0] == 200
    Memory.objects.filter(fact_key="kafka.version").update(visibility="author")
    assert stats(project) == stats_truth(project)
    assert not [t for t in stats(project) if not t.startswith("!")], "nothing shared is left to count"
    Memory.objects.filter(fact_key="kafka.version").update(visibility="org", content="Kafka 3.8 now")
    assert stats(project) == stats_truth(project)
    Memory.objects.filter(project_id=project).delete()
    assert not TermStat.objects.filter(project_id=project).exists()


def test_keyword_ranking_weighs_rare_terms_over_common_ones(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    for i in range(8):
        alice.ok_remember(content=f"Caroline talked about her weekend number {i}")
    rare = alice.ok_remember(content="Melanie signed up for a pottery class")["id"]
    common = alice.ok_remember(content="Caroline mentioned her pottery again")["id"]
    hits = search.keyword_hits(
        Memory.objects.filter(project_id=tenancy.alice.project.pk),
        "Caroline pottery class",
        10,
        tenancy.alice.project.pk,
    )
    # "class" and "pottery" are rare, "caroline" is in 9 of 10 records: the record with both
    # rare words ranks first, the one with one rare word second, the common-only ones after.
    assert [str(h.id) for h in hits[:2]] == [rare, common]
    assert len(hits) == 10
    weights = search.term_stats(tenancy.alice.project.pk, ["caroline:*", "pottery:*", "zzz"]).weights()
    assert weights[0] < weights[1] < weights[2]


def test_stemmed_query_words_find_other_inflections(tenancy: Tenancy) -> None:
    """ "studies" finds "studied" and "kids" finds "kid" through their stems (``studi:*``,
    ``kid``), which the words' own prefixes do not match; a term's alternatives sum their
    document frequencies."""
    alice = Api(tenancy.alice.key)
    inflected = alice.ok_remember(content="Melanie studied painting with her kid")["id"]
    alice.ok_remember(content="Caroline went hiking last weekend")
    project = tenancy.alice.project.pk
    hits = search.keyword_hits(Memory.objects.filter(project_id=project), "studies kids", 10, project)
    assert [str(h.id) for h in hits] == [inflected]
    assert hits[0].relevance == 1.0  # both query words covered
    assert search.term_stats(project, ["(kids:* | kid)", "studi:*", "(caroline:* | melanie:*)"]).frequencies == [
        1,
        1,
        2,
    ]


def background_sums() -> dict[tuple[int, str], tuple[int, list[float]]]:
    """What ``VectorSum`` says: (workspace, model) -> (records, summed vector)."""
    return {(s.workspace_id, s.model): (s.docs, [float(x) for x in s.total]) for s in VectorSum.objects.all()}


def background_truth() -> dict[tuple[int, str], tuple[int, list[float]]]:
    """What it must say: the vectors of the live shared records, summed per workspace and model."""
    out: dict[tuple[int, str], tuple[int, list[float]]] = {}
    rows = Memory.objects.filter(
        forgotten_at__isnull=True, visibility__in=["project", "org"], embedding__isnull=False
    ).values_list("workspace_id", "embedding_model", "embedding")
    for workspace_id, model, vector in rows:
        assert model is not None
        assert vector is not None
        docs, total = out.get((workspace_id, model), (0, [0.0] * len(vector)))
        out[(workspace_id, model)] = (docs + 1, [a + float(b) for a, b in zip(total, vector, strict=True)])
    return out


def assert_background_sums_are_true() -> None:
    got, want = background_sums(), background_truth()
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}
    for key, (_, total) in want.items():
        assert max(abs(a - b) for a, b in zip(got[key][1], total, strict=True)) < 1e-4, key


def test_background_sums_follow_every_kind_of_change(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    ids = [
        alice.ok_remember(content=f"the {w} service deploys on Fridays")["id"] for w in ("billing", "search", "auth")
    ]
    alice.ok_remember(content="a private draft about lunch", visibility="author")
    alice.ok_remember(content="ops runbook: restart the broker", workspace="ops")
    assert_background_sums_are_true()
    default = Memory.objects.get(id=ids[0]).workspace_id
    assert background_sums()[(default, "use-multilingual-v3@512")][0] == 3  # the draft is not counted

    def version() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT xmin::text FROM memories_vectorsum WHERE workspace_id = %s", [default])
            return str(cursor.fetchone()[0])

    before = version()
    Memory.objects.filter(id__in=ids).update(importance=0.9)  # nothing the sums count
    assert version() == before, "an update that changes no counted column writes no sum"

    assert alice.forget(memory_id=ids[0])[0] == 200
    assert_background_sums_are_true()
    vector = list(Memory.objects.get(id=ids[1]).embedding)
    Memory.objects.filter(id=ids[1]).update(embedding=None)  # a vector not there yet
    assert_background_sums_are_true()
    Memory.objects.filter(id=ids[1]).update(embedding=vector)  # ... and arriving later
    assert_background_sums_are_true()
    Memory.objects.filter(id=ids[2]).update(visibility="author")
    assert_background_sums_are_true()
    ops = Workspace.objects.get(project=tenancy.alice.project, name="ops")
    Memory.objects.filter(id=ids[1]).update(workspace=ops)
    assert_background_sums_are_true()
    Memory.objects.filter(project=tenancy.alice.project).delete()
    assert not VectorSum.objects.exists()


def test_the_dense_ranker_reads_each_records_background(tenancy: Tenancy) -> None:
    """``background`` is the cosine of a record's vector with its workspace's sum less the record
    itself when the sum counts it (a draft is not counted, so it meets the whole sum), 0 when
    nothing else is summed (a lone shared record, a workspace of drafts); computed in the dense
    ranker's statement."""
    import numpy as np

    from accounts.keys import resolve_key
    from memories import selectors, vectors

    alice = Api(tenancy.alice.key)
    for text in ("the billing service deploys on Fridays", "auth tokens expire after an hour", "lunch is at noon"):
        alice.ok_remember(content=text)
    alice.ok_remember(content="a draft beside the shared records", visibility="author")
    alice.ok_remember(content="a draft alone in its workspace", workspace="drafts", visibility="author")
    alice.ok_remember(content="the only shared record of its workspace", workspace="solo")
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    scope = selectors.memory_queryset(principal=principal, workspace="*")
    assert scope is not None
    embedded = vectors.embed_query("when do we deploy billing")
    assert embedded is not None
    vector, backend = embedded
    found = search.nearest(scope, vector, backend.model_id, 10)
    assert len(found) == 6
    rows: dict[object, Memory] = {
        m.id: m for m in Memory.objects.select_related("workspace").filter(id__in=[c.id for c in found])
    }
    default = [m for m in rows.values() if m.workspace.name == "default"]
    total = np.sum([np.array(m.embedding) for m in default if m.visibility != "author"], axis=0)

    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    checked = 0
    for c in found:
        m = rows[c.id]
        v = np.array(m.embedding)
        if m.workspace.name != "default":
            assert c.background == 0.0  # nothing else shared in its workspace: no background
            continue
        want = cosine(v, total) if m.visibility == "author" else cosine(v, total - v)
        assert abs(c.background - want) < 1e-4
        assert 0.0 < c.background < 1.0
        checked += 1
    assert checked == 4
