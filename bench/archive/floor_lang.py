"""A language-aware cosine scale for the relevance floor, replayed offline (issue #17).

    .venv/bin/python -m bench.archive.floor_lang [--split]

Reads the fused candidate lists ``bench.floor`` caches in ``bench/out`` (floor-<dataset>-use-*.json,
at the shipped ``KEYWORD_IDF_SHARE``) and the datasets' texts. Each (query, record) pair gets a
language from text alone -- Cyrillic -> ru, else ``query_words.latin_language`` (French or English) --
and its cosine is scaled by a same-language (low, high) or a cross-language (low, high) pair; the
rest is ``bench.floor``'s replay (``Floor.keep``: answer when the best relevance reaches
``answer_from``, then keep what reaches ``keep_from``). The grid is vectorised with numpy; the
settings reported are re-checked through ``bench.floor.kept`` and ``retrieval.breakdown``.

``--split``: choose the setting on half of the LoCoMo conversations, multilingual queries and
unrelated queries, report it on the other half. Nothing is served; no database is needed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, retrieval

# The single-signal floor these measurements were made with (the default until 2026-12-04, when
# the joint floor with a workspace background replaced it: bench/floor.py); a plain pair, so this
# module needs no Django at import.
PREVIOUS_FLOOR = SimpleNamespace(answer_from=0.5, keep_from=0.25)


def setup() -> None:
    """Django configured (memories.search imports models), without a database or migrations."""
    env = common.bench_environment(common.data_dir())
    os.environ.update({k: v for k, v in env.items() if k.startswith(("MMW_", "DJANGO_"))})
    import django

    django.setup()


def detect(text: str) -> str:
    """ru / fr / en from text alone, as production could: Cyrillic script, else latin_language."""
    from memories import words as query_words

    lower = text.lower()
    if query_words._CYRILLIC.search(lower):
        return "ru"
    return "fr" if query_words.latin_language(query_words._WORD.findall(lower)) == "french" else "en"


class PairScale:
    """A cosine scale chosen per candidate by whether it shares the query's language."""

    def __init__(self, same: tuple[float, float], cross: tuple[float, float], qlang: str, dlang: dict[str, str]):
        from memories import search

        self.same, self.cross = search.CosineScale(*same), search.CosineScale(*cross)
        self.qlang, self.dlang = qlang, dlang

    def for_key(self, key: str) -> Any:
        return self.same if self.dlang[key] == self.qlang else self.cross


def kept_lang(rows: list[Any], floor: Any, scale: PairScale) -> list[str]:
    """``bench.floor.kept`` with one change: the cosine scale depends on the pair's languages."""
    relevance = {k: max(cov, scale.for_key(k).relevance(cos) if cos is not None else 0.0) for k, cov, cos in rows}
    chosen = set(floor.keep(relevance))
    return [k for k, _, _ in rows if k in chosen]


@dataclass
class Part:
    """One dataset's queries as padded arrays (rows best first)."""

    cov: np.ndarray  # Q x N coverage
    cos: np.ndarray  # Q x N cosine (nan when the keyword ranker alone found it)
    same: np.ndarray  # Q x N bool: record language == query language
    rel: np.ndarray  # Q x N bool: relevant record
    valid: np.ndarray  # Q x N bool: a row exists
    qids: list[str]


def pack(
    lists: dict[str, list[Any]], qids: list[str], qlang: dict[str, str], dlang: dict[str, str], relevant: dict[str, Any]
) -> Part:
    n = max((len(lists[q]) for q in qids), default=1) or 1
    shape = (len(qids), n)
    cov, cos = np.zeros(shape), np.full(shape, np.nan)
    same, rel, valid = np.zeros(shape, bool), np.zeros(shape, bool), np.zeros(shape, bool)
    for i, q in enumerate(qids):
        for j, (key, c, s) in enumerate(lists[q]):
            cov[i, j] = c
            if s is not None:
                cos[i, j] = s
            same[i, j] = dlang[key] == qlang[q]
            rel[i, j] = key in relevant.get(q, ())
            valid[i, j] = True
    return Part(cov, cos, same, rel, valid, qids)


def relevance(p: Part, same: tuple[float, float], cross: tuple[float, float]) -> np.ndarray:
    """Q x N: each candidate's max(coverage, scaled cosine), the scale by the pair's languages
    (-1 for padding)."""
    low = np.where(p.same, same[0], cross[0])
    high = np.where(p.same, same[1], cross[1])
    scaled = np.clip((p.cos - low) / (high - low), 0.0, 1.0)
    scaled = np.where(np.isnan(scaled), 0.0, scaled)
    return np.where(p.valid, np.maximum(p.cov, scaled), -1.0)


def floor_hits(p: Part, rel: np.ndarray, answer_from: float, keep_from: float) -> tuple[np.ndarray, np.ndarray]:
    """Per query: answered (bool) and hit@5 (bool), as Floor.keep + rank_of would give."""
    answered = rel.max(axis=1) >= answer_from
    keep = (rel >= keep_from) & answered[:, None]
    place = np.cumsum(keep, axis=1)
    hit = (keep & p.rel & (place <= 5)).any(axis=1)
    return answered, hit


def replay(
    p: Part, same: tuple[float, float], cross: tuple[float, float], answer_from: float, keep_from: float
) -> tuple[np.ndarray, np.ndarray]:
    return floor_hits(p, relevance(p, same, cross), answer_from, keep_from)


def load() -> dict[str, Any]:
    from bench import floor as fl
    from memories import search

    share = str(search.KEYWORD_IDF_SHARE)
    locomo, multi = retrieval.locomo(), retrieval.multilingual()
    out: dict[str, Any] = {}
    spec = json.loads(fl.UNRELATED_PATH.read_text())
    for name, data in (("locomo", locomo), ("multilingual", multi)):
        extra = fl.unrelated_queries(data, name)
        caches = sorted(
            common.OUT_DIR.glob(f"floor-{name}-use-{len(data.queries)}-*.json"), key=lambda p: p.stat().st_mtime
        )
        assert caches, f"run bench.floor first: no floor-{name}-use-{len(data.queries)}-*.json"
        lists = json.loads(caches[-1].read_text())[share]
        dlang = {d.key: detect(d.content) for d in data.docs}
        qlang = {q.qid: detect(q.text) for q in [*data.queries, *extra]}
        relevant = {q.qid: q.relevant for q in data.queries}
        out[name] = dict(
            data=data, extra=extra, lists=lists, dlang=dlang, qlang=qlang, relevant=relevant, cache=caches[-1].name
        )
    out["unrelated_spec"] = spec
    return out


def detector_accuracy(d: dict[str, Any]) -> dict[str, Any]:
    ml = json.loads(common.MULTILINGUAL_PATH.read_text())
    res: dict[str, Any] = {}
    for what, items, text in (("facts", ml["facts"], "content"), ("queries", ml["queries"], "query")):
        confusion = Counter((it["lang"], detect(it[text])) for it in items)
        res[f"multilingual {what}"] = {
            "accuracy": round(sum(v for (a, b), v in confusion.items() if a == b) / len(items), 3),
            "confusion (true, detected)": {f"{a}->{b}": v for (a, b), v in sorted(confusion.items())},
        }
    spec = d["unrelated_spec"]
    uq = spec["both"] + spec["locomo"]
    conf = Counter((q["lang"], detect(q["query"])) for q in uq)
    res["unrelated queries"] = {
        "accuracy": round(sum(v for (a, b), v in conf.items() if a == b) / len(uq), 3),
        "confusion": {f"{a}->{b}": v for (a, b), v in sorted(conf.items())},
    }
    loc = d["locomo"]["data"]
    docs = Counter(d["locomo"]["dlang"].values())
    qs = Counter(detect(q.text) for q in loc.queries)
    res["locomo turns (all en)"] = {"accuracy": round(docs["en"] / sum(docs.values()), 4), "detected": dict(docs)}
    res["locomo questions (all en)"] = {"accuracy": round(qs["en"] / sum(qs.values()), 4), "detected": dict(qs)}
    wrong = [x.content for x in loc.docs if d["locomo"]["dlang"][x.key] != "en"][:5]
    res["locomo turns misdetected, sample"] = [w[:100] for w in wrong]
    return res


SCALES_SAME = [
    (lo, hi)
    for lo in (0.07, 0.09, 0.11, 0.13, 0.15, 0.17, 0.19)
    for hi in (0.25, 0.27, 0.29, 0.31, 0.33, 0.36, 0.40, 0.45, 0.50)
]
SCALES_CROSS = [
    (lo, hi)
    for lo in (0.0, 0.03, 0.05, 0.07, 0.09, 0.11, 0.13)
    for hi in (0.17, 0.19, 0.21, 0.23, 0.25, 0.27, 0.29, 0.32, 0.36)
]
ANSWER_FROM = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
KEEP_SHARE = (0.4, 0.5, 0.6, 0.75)


def build(d: dict[str, Any], select: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """Packed arrays per part: locomo questions, multilingual cross / same, unrelated (pooled)."""
    parts = {}
    for name in ("locomo", "multilingual"):
        x = d[name]
        chosen = None if select is None else select[name]
        qs = [q.qid for q in x["data"].queries if chosen is None or q.qid in chosen]
        ex = [q.qid for q in x["extra"] if chosen is None or q.qid in chosen]
        if name == "locomo":
            parts["locomo"] = pack(x["lists"], qs, x["qlang"], x["dlang"], x["relevant"])
        else:
            kind = {q.qid: q.group["kind"] for q in x["data"].queries}
            for k in ("cross-lingual", "same-language"):
                parts[k] = pack(x["lists"], [q for q in qs if kind[q] == k], x["qlang"], x["dlang"], x["relevant"])
        parts[f"unrelated-{name}"] = pack(x["lists"], ex, x["qlang"], x["dlang"], {})
    return parts


def measure(
    parts: dict[str, Part],
    same: tuple[float, float],
    cross: tuple[float, float],
    answer_from: float,
    keep_from: float,
    rels: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    rels = rels or {k: relevance(p, same, cross) for k, p in parts.items()}
    r: dict[str, Any] = {}
    for k in ("locomo", "cross-lingual", "same-language"):
        _, hit = floor_hits(parts[k], rels[k], answer_from, keep_from)
        r[k] = (int(hit.sum()), len(hit))
    empty = total = 0
    for k in ("unrelated-locomo", "unrelated-multilingual"):
        ans, _ = floor_hits(parts[k], rels[k], answer_from, keep_from)
        empty += int((~ans).sum())
        total += len(ans)
    r["empty"] = (empty, total)
    return r


def grid(parts: dict[str, Part]) -> list[dict[str, Any]]:
    rows = []
    for same, cross in itertools.product(SCALES_SAME, SCALES_CROSS):
        rels = {k: relevance(p, same, cross) for k, p in parts.items()}
        for af, ks in itertools.product(ANSWER_FROM, KEEP_SHARE):
            m = measure(parts, same, cross, af, round(af * ks, 4), rels)
            rows.append(dict(same=same, cross=cross, answer_from=af, keep_from=round(af * ks, 4), **m))
    return rows


def frac(x: tuple[int, int]) -> float:
    return x[0] / x[1] if x[1] else 0.0


def summarise(
    rows: list[dict[str, Any]], base: dict[str, Any], tol: float = 0.01, same_from: float = 0.0
) -> dict[str, Any]:
    """``same_from``: also require same-language R@5 at least this (e.g. the shipped floor's)."""
    lb, xb = frac(base["locomo"]), frac(base["cross-lingual"])
    ok_l = [r for r in rows if frac(r["locomo"]) >= lb - tol - 1e-9 and frac(r["same-language"]) >= same_from - 1e-9]
    meets = [r for r in ok_l if frac(r["cross-lingual"]) >= xb - tol - 1e-9 and frac(r["empty"]) >= 0.9]
    meets.sort(key=lambda r: (-frac(r["empty"]), -frac(r["cross-lingual"]), -frac(r["locomo"])))
    best_empty = sorted(
        (r for r in ok_l if frac(r["cross-lingual"]) >= xb - tol - 1e-9),
        key=lambda r: (-frac(r["empty"]), -frac(r["cross-lingual"]), -frac(r["locomo"]), -frac(r["same-language"])),
    )
    best_cross = sorted(
        (r for r in ok_l if frac(r["empty"]) >= 0.9),
        key=lambda r: (-frac(r["cross-lingual"]), -frac(r["empty"]), -frac(r["locomo"]), -frac(r["same-language"])),
    )
    return {"meets": meets[:5], "best_empty": best_empty[:5], "best_cross": best_cross[:5], "n_meets": len(meets)}


def fmt(r: dict[str, Any]) -> str:
    def f(k: str) -> str:
        a, n = r[k]
        return f"{a / n:.3f} ({a}/{n})" if n else "-"

    return (
        f"same={r['same']} cross={r['cross']} answer={r['answer_from']} keep={r['keep_from']} | empty {f('empty')}"
        f" | LoCoMo {f('locomo')} | xling {f('cross-lingual')} | same-lang {f('same-language')}"
    )


def verify(d: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    """The same setting through bench.floor.kept (real Floor) and retrieval.breakdown."""
    from memories import search

    floor = search.Floor(r["answer_from"], r["keep_from"])
    res: dict[str, Any] = {}
    empty = total = 0
    for name in ("locomo", "multilingual"):
        x = d[name]
        scales = {
            q.qid: PairScale(r["same"], r["cross"], x["qlang"][q.qid], x["dlang"])
            for q in [*x["data"].queries, *x["extra"]]
        }
        got = {q.qid: kept_lang(x["lists"][q.qid], floor, scales[q.qid]) for q in x["data"].queries}
        parts = retrieval.breakdown(x["data"], got)
        res[f"{name} R@5"] = parts["all"]["R@5"]
        for k in ("kind=cross-lingual", "kind=same-language"):
            if k in parts:
                res[k] = parts[k]["R@5"]
        empty += sum(1 for q in x["extra"] if not kept_lang(x["lists"][q.qid], floor, scales[q.qid]))
        total += len(x["extra"])
    res["unrelated empty"] = round(empty / total, 3)
    return res


def halves(d: dict[str, Any], seed: int) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Split A/B: LoCoMo by conversation (its questions and unrelated queries go together);
    multilingual questions stratified by kind and query language; multilingual unrelated by query."""
    rng = np.random.default_rng(seed)
    a: dict[str, set[str]] = {"locomo": set(), "multilingual": set()}
    b: dict[str, set[str]] = {"locomo": set(), "multilingual": set()}
    loc = d["locomo"]
    ws = sorted(loc["data"].workspaces())
    rng.shuffle(ws)
    wa = set(ws[: (len(ws) + 1) // 2])
    for q in [*loc["data"].queries, *loc["extra"]]:
        (a if q.workspace in wa else b)["locomo"].add(q.qid)
    ml = d["multilingual"]
    strata: dict[Any, list[str]] = {}
    for q in ml["data"].queries:
        strata.setdefault((q.group["kind"], ml["qlang"][q.qid]), []).append(q.qid)
    strata["unrelated"] = [q.qid for q in ml["extra"]]
    for ids in strata.values():
        ids = list(ids)
        rng.shuffle(ids)
        a["multilingual"].update(ids[: len(ids) // 2])
        b["multilingual"].update(ids[len(ids) // 2 :])
    return a, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", action="store_true", help="also pick on one half, report on the other")
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    setup()
    from memories import search

    d = load()
    report: dict[str, Any] = {"caches": [d[n]["cache"] for n in ("locomo", "multilingual")]}
    report["detector"] = detector_accuracy(d)
    print(json.dumps(report["detector"], indent=1, ensure_ascii=False))

    parts = build(d)
    shipped_scale = search.COSINE_SCALES["use-multilingual-v3@512"]
    base = measure(parts, shipped_scale, shipped_scale, 0.0, 0.0)
    shipped = measure(parts, shipped_scale, shipped_scale, PREVIOUS_FLOOR.answer_from, PREVIOUS_FLOOR.keep_from)
    base.update(same=shipped_scale, cross=shipped_scale, answer_from=0.0, keep_from=0.0)
    shipped.update(
        same=shipped_scale,
        cross=shipped_scale,
        answer_from=PREVIOUS_FLOOR.answer_from,
        keep_from=PREVIOUS_FLOOR.keep_from,
    )
    print("no floor:", fmt(base))
    print("shipped: ", fmt(shipped))
    print("shipped via bench.floor.kept:", verify(d, shipped))
    # the single-scale grid (same == cross) as a control: what the language split adds
    rows = grid(parts)
    single = [r for r in rows if r["same"] == r["cross"]]
    print(f"grid: {len(rows)} settings")
    out = summarise(rows, base)
    ctrl = summarise(single, base)
    out_sl = summarise(rows, base, same_from=frac(shipped["same-language"]))
    ctrl_sl = summarise(single, base, same_from=frac(shipped["same-language"]))
    for k in ("meets", "best_empty", "best_cross"):
        out[k + "_sl"], ctrl[k + "_sl"] = out_sl[k], ctrl_sl[k]
    titles: tuple[tuple[str, str], ...] = (
        ("meets all three", "meets"),
        ("best empty at xling drop <= .01", "best_empty"),
        ("best xling at empty >= 90 %", "best_cross"),
    )
    titles += tuple((t + ", same-language R@5 >= shipped", k + "_sl") for t, k in titles)
    for title, key in titles:
        print(f"\n## {title}" + (f" ({out['n_meets']} settings)" if key == "meets" else ""))
        for r in out[key]:
            print(fmt(r))
        if ctrl[key]:
            print("  single-scale control:", fmt(ctrl[key][0]))
    for _, key in titles:
        if out[key]:
            print(f"verify {key}[0] via bench.floor.kept:", verify(d, out[key][0]))
    report.update(base=base, shipped=shipped, **out)

    if args.split:
        report["split"] = []
        print("\n## split check: pick on half A, report on half B (and the reverse)")
        for seed in range(args.seeds):
            ha, hb = halves(d, seed)
            for pick, test, label in ((ha, hb, "A->B"), (hb, ha, "B->A")):
                pa, pb = build(d, pick), build(d, test)
                ra = grid(pa)
                base_a = measure(pa, shipped_scale, shipped_scale, 0.0, 0.0)
                base_b = measure(pb, shipped_scale, shipped_scale, 0.0, 0.0)
                ship_b = measure(pb, shipped_scale, shipped_scale, PREVIOUS_FLOOR.answer_from, PREVIOUS_FLOOR.keep_from)
                ship_a = measure(pa, shipped_scale, shipped_scale, PREVIOUS_FLOOR.answer_from, PREVIOUS_FLOOR.keep_from)
                sa = summarise(ra, base_a)
                sa.update(
                    {k + "_sl": v for k, v in summarise(ra, base_a, same_from=frac(ship_a["same-language"])).items()}
                )
                for key in ("best_empty", "best_cross", "best_empty_sl", "best_cross_sl"):
                    if not sa[key]:
                        print(f"seed {seed} {label} {key}: none on the picking half")
                        continue
                    r = sa[key][0]
                    m = measure(pb, r["same"], r["cross"], r["answer_from"], r["keep_from"])
                    m.update(same=r["same"], cross=r["cross"], answer_from=r["answer_from"], keep_from=r["keep_from"])
                    nf = f"LoCoMo {frac(base_b['locomo']):.3f} xling {frac(base_b['cross-lingual']):.3f}"
                    sh = (
                        f"empty {frac(ship_b['empty']):.3f} LoCoMo {frac(ship_b['locomo']):.3f}"
                        f" xling {frac(ship_b['cross-lingual']):.3f} same-lang {frac(ship_b['same-language']):.3f}"
                    )
                    line = (
                        f"seed {seed} {label} {key}: picked {fmt(r)}\n   held-out: {fmt(m)}\n"
                        f"   held-out no floor: {nf}; shipped: {sh}"
                    )
                    print(line)
                    report["split"].append(
                        dict(
                            seed=seed,
                            direction=label,
                            key=key,
                            picked=r,
                            heldout=m,
                            heldout_base=base_b,
                            heldout_shipped=ship_b,
                        )
                    )
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (common.OUT_DIR / "floor_lang.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
