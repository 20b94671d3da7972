"""Hybrid ranking: meaning (pgvector) and keywords (full text), fused; filters stay exact."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, cast

import pytest
from django.db import connection

from accounts.keys import resolve_key
from memories import search, selectors, vectors
from memories import words as query_words
from memories.models import Memory
from memories.search import Candidate, Ranking, fuse
from memories.vector_index import index_name
from memories.words import keyword_terms
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

FACTS = {
    "ru": "Стейджинговая база данных — PostgreSQL 15 в регионе eu-west-3, без реплик.",
    "fr": "Les sauvegardes de la base de production sont conservées trente jours sur S3.",
    "en": "The on-call engineer is paged only for customer-facing outages.",
    "distractor": "Frontend builds use Vite and run on every pull request.",
}


def remember_all(api: Api) -> dict[str, str]:
    return {name: api.ok_remember(content=text)["id"] for name, text in FACTS.items()}


def test_remember_stores_the_current_models_vector(tenancy: Tenancy) -> None:
    answer = Api(tenancy.alice.key).ok_remember(content="vectors are stored with their model id")
    record = Memory.objects.get(id=answer["id"])
    backend = vectors.current()
    assert record.embedding_model == backend.model_id
    assert record.embedding is not None
    assert len(record.embedding) == backend.dim


def test_the_models_hnsw_index_exists() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [index_name(vectors.current().model_id)])
        row = cursor.fetchone()
    assert row is not None
    assert "hnsw" in row[0]
    assert "vector_cosine_ops" in row[0]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("which PostgreSQL version does the staging database run?", "ru"),
        ("how long are production backups kept?", "fr"),
        ("когда будят дежурного инженера?", "en"),
    ],
)
def test_cross_lingual_queries_find_the_fact_first(tenancy: Tenancy, query: str, expected: str) -> None:
    api = Api(tenancy.alice.key)
    ids = remember_all(api)
    results = api.search(query=query)["results"]
    assert results[0]["id"] == ids[expected]


def test_exact_keyword_still_wins_for_identifiers(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    remember_all(api)
    target = api.ok_remember(content="Error E4012 means the Stripe webhook secret is wrong")["id"]
    assert api.search(query="E4012")["results"][0]["id"] == target


def test_filters_apply_before_ranking_so_selective_filters_keep_recall(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    for i in range(30):
        api.ok_remember(content=f"backup policy note number {i} for the production database")
    tagged = api.ok_remember(content="the backup policy for the billing database", tags=["billing"])["id"]
    results = api.search(query="backup policy database", tags=["billing"])["results"]
    assert [r["id"] for r in results] == [tagged]


def test_fusion_rewards_agreement_between_rankers() -> None:
    a, b, c = (Candidate(uuid.uuid4(), 1.0, dt.datetime.fromtimestamp(ts, tz=dt.UTC)) for ts in (1, 2, 3))
    fused = fuse([Ranking([a, b], 1.0), Ranking([b, c], 1.0)], 3)
    assert [h.id for h in fused] == [b.id, a.id, c.id]
    assert fused[0].score <= 1.0


def test_near_equal_keyword_scores_do_not_outvote_a_clear_dense_preference() -> None:
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    first, second, other = (uuid.uuid4() for _ in range(3))
    keyword = [Candidate(first, 1.20, when), Candidate(second, 1.18, when)]
    dense = [Candidate(second, 0.80, when), Candidate(first, 0.40, when), Candidate(other, 0.35, when)]
    fused = fuse([Ranking(keyword, 1.0), Ranking(dense, 1.0)], 3)
    assert fused[0].id == second  # without the spread floor the 0.02 keyword gap is z = +1 / -1
    clear = [Candidate(first, 3.0, when), Candidate(second, 0.5, when)]
    assert fuse([Ranking(clear, 1.0), Ranking(dense, 0.2)], 3)[0].id == first


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the deploy", "deploy:*"),
        ("PG 15", "pg | 15"),
        ("что такое репликация", "такое:* | репликация:*"),
        ("'; DROP TABLE x; --", "drop:* | tabl:* | x"),
        ("the a of", None),
    ],
)
def test_keyword_query_keeps_only_words(query: str, expected: str | None) -> None:
    assert (" | ".join(keyword_terms(query)) or None) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # English: the stem's prefix covers the word; a short stem is matched exactly beside it.
        ("studies of kids", "studi:* | (kids:* | kid)"),
        # A stem that is not a prefix of the word is an alternative beside it.
        ("happy", "(happy:* | happi:*)"),
        # Digits are never stemmed; short words stay exact.
        ("runs 2024 cat", "(runs:* | run) | 2024:* | cat"),
        # Only English is stemmed (STEM_LANGUAGES): Russian words, and the Latin words of a query
        # with French marks, keep their own prefix.
        ("собаки API", "собаки:* | api"),
        ("les maisons", "maisons:*"),
    ],
)
def test_english_query_words_also_match_by_their_stem(query: str, expected: str) -> None:
    assert " | ".join(keyword_terms(query)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("собаки API", "собак:* | api"),  # Cyrillic: Russian, whatever the other words
        ("les maisons", "maison:*"),  # a French function word
        ("maisons habitées à Lyon", "maison:* | habit:* | lyon:*"),  # a letter English hardly uses (à)
        ("l'offre Business", "l | offre:* | business:*"),  # an elided article: French stems
        ("offre Business", "offr:* | busi:*"),  # no French mark: English stems
        ("cafés near the station", "café:* | near:* | station:*"),  # é alone: English
    ],
)
def test_each_stemmed_language_gets_its_own_stemmer(query: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query_words, "STEM_LANGUAGES", frozenset({"english", "french", "russian"}))
    assert " | ".join(keyword_terms(query)) == expected


# --- the relevance floor (min_score) ---------------------------------------------------------


def test_a_query_about_nothing_stored_returns_no_results(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    remember_all(api)
    assert api.search(query="how often to feed a sourdough starter")["results"] == []
    assert api.search(query="telescope mirror grinding at home")["results"] == []


# Small talk that resembles every query because it resembles the rest: one session of a LoCoMo dev
# conversation (conv-43, session 28), as an uploader sends it: each turn with its session as
# source_id and its place as position.
SESSION = [
    "Tim: Hey John, long time no talk. On Friday, I got great news - I'm finally in the study abroad program I applied for! Next month, I'm off to Ireland for a semester.",
    "John: Congrats, Tim! That's amazing news. So, where are you going to stay?",
    "Tim: Thanks! I'm gonna stay in Galway, it's great for its arts and Irish music. This place has such a vibrant atmosphere.",
    "John: Awesome, Galway looks amazing! Is there anything in particular that you're keen to check out while you're there?",
    "Tim: Yep! I'm so excited to explore the nature - it looks amazing!",
    "John: Wow, great view! Have you visited any other places?",
    "Tim: I want to visit The Cliffs of Moher. It has amazing ocean views and awesome cliffs.",
    "John: Wow, that's awesome! I could stop by there after my season.",
    "Tim: Cool, let me know if you're around!",
    "John: Yep, I'll let you know. Oh, I held a benefit basketball game last week.",
    "Tim: Wow! How did the game go?",
    "John: The game turned out to be a total success! Lots of people showed up and had a great time, plus we were able to raise some money for charity.",
    "Tim: Great job organizing the event. That's really making a difference!",
    "John: Thanks! It's amazing how basketball brings people together and creates a positive impact!",
    "Tim: You rock! Keep it up!",
    "John: Thanks, Tim! It's awesome to see how sports can unite people. By the way, what book are you currently reading?",
    "Tim: I'm currently reading a fantasy novel called \"The Name of the Wind\" by Patrick Rothfuss. It's really good!",
    'John: "The Name of the Wind" sounds cool. I\'ll add it to my list. Thanks!',
    "Tim: I hope you enjoy it! Let me know your thoughts.",
    "John: Will do! Thanks for the recommendation!",
    "Tim: No problem. Talk to you soon!",
]


def test_a_record_typical_of_its_workspace_does_not_answer_a_query_about_nothing_stored(tenancy: Tenancy) -> None:
    """The cricket question's nearest turn is small talk ("How did the game go?") close enough to
    pass the joint floor on its cosine alone; discounted by its closeness to the rest of its
    workspace, it no longer answers. A question about something said still is."""
    api = Api(tenancy.alice.key)
    for position, text in enumerate(SESSION):
        api.ok_remember(content=text, source_id="conv-43/session-28", position=position)
    everything = api.search(query="What is the lbw rule in cricket?", min_score=0)["results"]
    assert everything[0]["content"] == "Tim: Wow! How did the game go?"
    assert everything[0]["score"] < 0.3  # the shown score already says it hardly answers
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    scope = selectors.memory_queryset(principal=principal, workspace="default")
    assert scope is not None
    ranked = search.hybrid_ranking(
        scope, "What is the lbw rule in cricket?", 10, lambda t: search.term_stats(principal.project.pk, t)
    )
    assert ranked[0].relevance >= search.DEFAULT_FLOOR.answer_from, "without the background it would answer"
    assert api.search(query="What is the lbw rule in cricket?")["results"] == []
    answered = api.search(query="Where will Tim stay during his semester in Ireland?")["results"]
    assert any(r["content"].startswith("Tim: Thanks! I'm gonna stay in Galway") for r in answered[:3])


def test_a_lone_record_answers_a_query_in_another_language(tenancy: Tenancy) -> None:
    """A workspace's only record is its whole background: measured against itself it would
    discount every vector match (this French fact would not answer its English question, cosine
    0.24). Its background leaves it out, so it answers; an unrelated query still gets nothing."""
    api = Api(tenancy.alice.key)
    fact = "L'équipe Plateforme, dirigée par Olga Petrova, est responsable de Kubernetes et de la CI."
    record = api.ok_remember(content=fact, workspace="platform")
    answered = api.search(query="who leads the platform team", workspace="platform")["results"]
    assert [r["id"] for r in answered] == [record["id"]]
    assert api.search(query="What is the lbw rule in cricket?", workspace="platform")["results"] == []


def test_min_score_zero_returns_everything_ranked(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = remember_all(api)
    results = api.search(query="how often to feed a sourdough starter", min_score=0)["results"]
    assert {r["id"] for r in results} == set(ids.values())
    assert all(0.0 <= r["score"] < 0.5 for r in results)


def test_a_related_query_still_finds_its_fact_under_the_default_floor(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    ids = remember_all(api)
    results = api.search(query="how long are production backups kept?")["results"]
    assert results[0]["id"] == ids["fr"]
    assert results[0]["score"] >= 0.4


def test_an_explicit_min_score_is_strict_for_every_result(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    remember_all(api)
    everything = api.search(query="production database backups", min_score=0)["results"]
    strict = api.search(query="production database backups", min_score=0.1)["results"]
    assert [r["id"] for r in strict] == [r["id"] for r in everything if r["score"] >= 0.1]
    assert 0 < len(strict) < len(everything)
    assert all(r["score"] >= 0.1 for r in strict)


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_min_score_outside_0_1_is_refused(tenancy: Tenancy, value: float) -> None:
    code, body = Api(tenancy.alice.key).call("POST", "/memories/search", {"query": "backups", "min_score": value})
    assert code == 400
    assert body["error"]["message"] == "min_score must be between 0 and 1"


def test_recall_context_applies_the_floor_but_keeps_pinned_records(tenancy: Tenancy) -> None:
    api = Api(tenancy.alice.key)
    remember_all(api)
    pinned = api.ok_remember(content="never deploy on Fridays", tags=["kind:pinned"])["id"]
    code, pack = api.call("POST", "/recall-context", {"task": "repot the orchid after it blooms"})
    assert code == 200
    assert [i["id"] for i in pack["items"]] == [pinned]


def test_an_unrelated_record_never_ties_with_the_answer_at_the_top(tenancy: Tenancy) -> None:
    """The issue's reproduction: "production deploys go out on Tuesdays" showed 1.000 for "how do we
    deploy staging", as the record that answers it did. Scores now say how likely a result
    answers, and each is below the one before it."""
    api = Api(tenancy.alice.key)
    answer = api.ok_remember(content="Staging is deployed with `make deploy-staging` from the release branch.")["id"]
    api.ok_remember(content="Production deploys go out on Tuesdays.")
    api.ok_remember(content="The staging database is refreshed from a production snapshot every night.")
    api.ok_remember(content="Our sourdough starter is fed twice a day.")
    results = api.search(query="how do we deploy staging", min_score=0)["results"]
    assert results[0]["id"] == answer
    scores = [r["score"] for r in results]
    assert all(later < earlier for earlier, later in itertools.pairwise(scores))
    assert scores[0] - scores[1] >= 0.05


def test_floor_answers_only_when_the_best_candidate_reaches_it() -> None:
    from memories.search import Floor

    single = Floor(0.5, 0.25)
    assert single.keep({"a": 0.49, "b": 0.3}) == []
    assert sorted(single.keep({"a": 0.5, "b": 0.3, "c": 0.2})) == ["a", "b"]
    assert single.keep({"a": 0.49, "b": 0.3}, evidence=0.9) == [], "a single-signal floor ignores the evidence"
    assert Floor.strict(0.4).keep({"a": 0.9, "b": 0.39}) == ["a"]


def test_the_default_floor_answers_on_the_rankers_evidence_summed() -> None:
    """Joint: the best keyword coverage plus the best vector evidence must reach 0.34; then what
    reaches relevance 0.25 is kept. Two weak signals together answer, either alone does not."""
    from memories.search import DEFAULT_FLOOR, Candidate, Ranking, fuse

    assert DEFAULT_FLOOR.joint
    assert DEFAULT_FLOOR.keep_from == 0.25
    assert DEFAULT_FLOOR.keep({"a": 0.9, "b": 0.3}, evidence=DEFAULT_FLOOR.answer_from - 0.01) == []
    assert sorted(DEFAULT_FLOOR.keep({"a": 0.3, "b": 0.26, "c": 0.2}, evidence=DEFAULT_FLOOR.answer_from)) == ["a", "b"]

    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    word, vector = uuid.uuid4(), uuid.uuid4()
    keyword = Ranking([Candidate(word, 1.0, when, relevance=0.2)], 1.0)
    # relevance 0.5 (its cosine) but evidence 0.16 (its cosine less its background)
    dense = Ranking([Candidate(vector, 0.2, when, relevance=0.5, evidence=0.16)], 1.0)
    assert {c.id for c in fuse([keyword, dense], 10, DEFAULT_FLOOR)} == {vector}  # 0.36: answered
    assert fuse([dense], 10, DEFAULT_FLOOR) == []
    assert fuse([keyword], 10, DEFAULT_FLOOR) == []


def test_a_vector_matchs_evidence_discounts_its_background_and_its_relevance_does_not() -> None:
    from memories.search import BACKGROUND_WEIGHT, Candidate, _scaled, cosine_scale

    model = "use-multilingual-v3@512"
    backend = cast(Any, SimpleNamespace(model_id=model))
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    [plain, typical] = _scaled(
        ([0.0], backend), [Candidate(uuid.uuid4(), 0.25, when), Candidate(uuid.uuid4(), 0.25, when, background=0.6)]
    )
    scale = cosine_scale(model)
    assert plain.relevance == typical.relevance == pytest.approx(scale.relevance(0.25))
    assert plain.evidence == pytest.approx(scale.relevance(0.25))
    assert typical.evidence == pytest.approx(scale.relevance(0.25 - BACKGROUND_WEIGHT * 0.6))
    assert typical.evidence is not None
    assert typical.evidence < plain.relevance


def test_a_model_without_a_calibrated_background_weight_is_not_discounted() -> None:
    """e5's vectors share a common direction (its backgrounds sit near 0.9): USE's weight on its
    scale (0.7..0.9) would take 0.67 of every match's evidence, so an uncalibrated model's
    evidence is its relevance."""
    from memories.search import Candidate, _scaled, background_weight, cosine_scale

    model = "multilingual-e5-small-q4@384"
    assert background_weight(model) == 0.0
    backend = cast(Any, SimpleNamespace(model_id=model))
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    [match] = _scaled(([0.0], backend), [Candidate(uuid.uuid4(), 0.82, when, background=0.89)])
    assert match.relevance == pytest.approx(cosine_scale(model).relevance(0.82))
    assert match.evidence == pytest.approx(match.relevance)
    assert match.evidence is not None
    assert match.evidence > search.DEFAULT_FLOOR.answer_from  # a cross-lingual e5 match still answers


def test_keyword_coverage_weighs_rare_words_and_the_share_of_terms() -> None:
    from memories.search import coverage

    assert coverage(1.0, 1.0) == 1.0
    assert coverage(0.0, 0.0) == 0.0
    # one common word of a two-word query: half its terms, little of its IDF
    assert 0.25 < coverage(0.06, 0.5) < 0.5


def test_stemming_is_safe_under_concurrent_searches() -> None:
    """Requests stem their queries in parallel threads; a Snowball stemmer keeps its word in
    itself, so a stemmer shared between threads corrupts words (IndexError, wrong stems)."""
    words = ["studies", "happiness", "generously", "organizational", "relational", "kids", "running"] * 300
    expected = [query_words.word_forms(w) for w in words]

    def stem_all(_: int) -> list[list[str]]:
        return [query_words.word_forms(w) for w in words]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(stem_all, range(8)))
    assert all(result == expected for result in results)
