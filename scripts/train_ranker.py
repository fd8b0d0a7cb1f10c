"""Train the learned ranking (``kbseek/search/ranker.json``) and report how it carries over.

    python scripts/train_ranker.py collect            # run every question, record each candidate's features
    python scripts/train_ranker.py develop            # choose the model's settings on the tune halves alone
    python scripts/train_ranker.py report             # held-out halves and leave-one-family-out, blend vs learned
    python scripts/train_ranker.py report --write     # ... and write the model trained on every tune half

The data (docs/decisions/0044):
- the five development collections (``benchmarks/devsets``: examples-kb, react-mixed, tldr-mixed and
  the two flipped ones), each question alone and with its ``also`` phrasings, halves as ``split.yml``;
- SciFact's train split and JSQuAD's valid split (``KBSEEK_DATASETS``), their questions split into
  halves by the same rule (a hash of the id, alternating), JSQuAD's first 1,200 by that order.

Training uses the tune halves only, and so does ``develop``, which chose the model's settings.
``report`` scores the held-out halves, and, for each family of collections (react, tldr, examples,
scifact, jsquad), a model trained on the tune halves of the *other* families and tested on this
one's held-out half: a flipped collection asks its source's questions, so leaving out one
collection alone would leak them. The ranking features are recorded
by the pipeline itself (``search.ranker.Ranking``), so training reads what a search computes.

Everything is deterministic: fixed question order, a Newton solver with no random start.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import sys
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import beir  # noqa: E402
import devset  # noqa: E402
from kbseek import KnowledgeBase  # noqa: E402
from kbseek.config import Limits, Settings  # noqa: E402
from kbseek.facade.request import search_request  # noqa: E402
from kbseek.search import features  # noqa: E402
from kbseek.search_query import SearchQuery  # noqa: E402

WORK = ROOT / "benchmarks" / ".work" / "ranker"
MODEL = ROOT / "src" / "kbseek" / "search" / "ranker.json"
DEPTH = 40
"""How many of the fused ranking's first candidates are recorded, and reordered at search time."""
JSQUAD_QUERIES = 1200
FAMILY = {
    "react-mixed": "react", "react-flipped": "react", "tldr-mixed": "tldr", "tldr-flipped": "tldr",
    "examples-kb": "examples", "scifact": "scifact", "jsquad-ir": "jsquad",
}  # fmt: skip
L2 = 0.01
"""The solver's ridge penalty on the standardised weights, except the fused score's: the model is
the blend corrected where the data says so, and the penalty pulls it back toward the blend."""
NEGATIVES = 10
TREE_LEAVES, TREE_ROUNDS, TREE_MIN_DATA = 4, 200, 200
"""Chosen by ``develop`` (leave one family out within the tune halves; decision 0044)."""
PRIOR = "fused_share"


@dataclass
class Group:
    """One question as searched: its candidate documents' features (in fused order) and how relevant each is."""

    collection: str
    qid: str
    half: str
    kind: str
    variant: str
    """``alone`` or ``also``."""
    expected: int
    """How many documents answer it (0: unanswerable)."""
    x: np.ndarray
    gain: np.ndarray
    """Per candidate document, its relevance (0: not relevant)."""
    doc: np.ndarray
    """A number per candidate document (kept so the metrics could read chunks as well)."""

    @property
    def family(self) -> str:
        return FAMILY[self.collection]


class Recorder:
    """A ranking stage that changes nothing and keeps what the learned stage would read."""

    def __init__(self) -> None:
        self.last: tuple[list[str], np.ndarray] | None = None

    def order(self, ranked, rows, view, japanese):  # type: ignore[no-untyped-def]
        live = [f for f in ranked if f.rowid in rows][:DEPTH]
        documents, x = features.matrix(live, rows, view, japanese)
        path = {rows[f.rowid].document_id: rows[f.rowid].path for f in live}
        self.last = ([path[d] for d in documents], x)
        return list(ranked)


def _halves(collection: str, ids: Sequence[str]) -> dict[str, str]:
    ordered = sorted(ids, key=lambda q: hashlib.sha256(f"{collection}/{q}".encode()).hexdigest())
    return {q: devset.HALVES[i % 2] for i, q in enumerate(ordered)}


def _search(
    kb: KnowledgeBase, recorder: Recorder, query: str, also: Sequence[str]
) -> tuple[list[str], np.ndarray]:
    retrieval = kb.retrieval()
    limits = kb.limits
    leg = retrieval.dense_leg()
    if leg is None:
        raise SystemExit("the dense leg did not load: the learned ranking is trained with the default model")
    asked = SearchQuery(query, limit=10, snippet_chars=0, also=list(also)[: limits.max_also])
    request = search_request(limits, asked)
    recorder.last = None
    retrieval.run(request, leg, policy=replace(retrieval.policy(fusion="blend"), ranker=recorder))
    if recorder.last is None:  # nothing ranked (no searchable words)
        return [], np.zeros((0, len(features.FEATURES)))
    return recorder.last


def _group(collection, qid, half, kind, variant, relevant: Mapping[str, int], found) -> Group:  # type: ignore[no-untyped-def]
    paths, x = found
    wanted = {unicodedata.normalize("NFC", p): g for p, g in relevant.items()}
    gain = np.array([wanted.get(unicodedata.normalize("NFC", p), 0) for p in paths], dtype=np.float64)
    doc = np.arange(len(paths), dtype=np.int64)
    return Group(collection, qid, half, kind, variant, len(relevant), x.astype(np.float64), gain, doc)


def collect_devsets(names: Sequence[str]) -> list[Group]:
    groups: list[Group] = []
    for name in names:
        queries, halves = devset.questions(name)
        root = devset.assemble(name)
        kb = KnowledgeBase(settings=Settings(root=root, freshness_interval_s=1e9))
        kb.load_semantic()
        kb.index()
        recorder = Recorder()
        started = time.perf_counter()
        for q in queries:
            relevant = {e.path: 1 for e in q.expected}
            for variant, also in (("alone", ()), ("also", q.also)):
                if variant == "also" and not also:
                    continue
                found = _search(kb, recorder, q.query, also)
                groups.append(_group(name, q.id, halves[q.id], q.kind or "", variant, relevant, found))
        kb.close()
        print(f"{name}: {len(queries)} questions in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return groups


def collect_beir(name: str, split: str, cap: int | None) -> list[Group]:
    collection = beir.load(name, split)
    root = beir.write_markdown(collection)
    limits = Limits(max_hits_per_document=1)
    kb = KnowledgeBase(settings=Settings(
        root=root, index_dir=beir.WORK / name / "index-hybrid", limits=limits, freshness_interval_s=1e9
    ))  # fmt: skip
    started = time.perf_counter()
    kb.load_semantic()
    kb.index()
    print(f"{name}: indexed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    halves = _halves(name, list(collection.queries))
    ids = sorted(collection.queries, key=lambda q: hashlib.sha256(f"{name}/{q}".encode()).hexdigest())
    ids = ids[:cap] if cap else ids
    recorder = Recorder()
    groups = []
    started = time.perf_counter()
    for qid in ids:
        relevant = {f"{d.replace('/', '_')}.md": g for d, g in collection.qrels[qid].items()}
        found = _search(kb, recorder, collection.queries[qid], ())
        groups.append(_group(name, qid, halves[qid], "beir", "alone", relevant, found))
    kb.close()
    print(f"{name}: {len(ids)} questions in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return groups


# -- fitting ------------------------------------------------------------------------------------


def _pairs(groups: Sequence[Group], mean: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Differences (relevant − not) of standardised features, and a weight per pair: each
    collection weighs the same in total, and each question the same within its collection. Only
    documents the fused ranking put in its first :data:`NEGATIVES` are paired against: what the
    numbers count is the top of the list, not how the fortieth document compares with the thirtieth."""
    per_collection: dict[str, int] = {}
    usable = [g for g in groups if g.gain.any() and not g.gain.all()]
    for g in usable:
        per_collection[g.collection] = per_collection.get(g.collection, 0) + 1
    diffs, weights = [], []
    for g in usable:
        z = (g.x - mean) / scale
        pos, neg = np.flatnonzero(g.gain > 0), np.flatnonzero(g.gain[:NEGATIVES] == 0)
        if not len(neg):
            continue
        d = (z[pos][:, None, :] - z[neg][None, :, :]).reshape(-1, z.shape[1])
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / (len(d) * per_collection[g.collection])))
    return np.concatenate(diffs), np.concatenate(weights)


def fit_linear(groups: Sequence[Group], l2: float = L2) -> dict:
    """A pairwise logistic model (RankNet with a linear scorer), solved by Newton's method: the
    simpler model, measured beside the trees and not taken (decision 0044)."""
    x = np.concatenate([g.x for g in groups])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    d, w = _pairs(groups, mean, scale)
    w = w / w.sum()
    weights = np.zeros(d.shape[1])
    penalty = np.full(d.shape[1], l2)
    penalty[features.FEATURES.index(PRIOR)] = 0.0
    for _ in range(50):
        m = d @ weights
        p = 1.0 / (1.0 + np.exp(m))  # the loss's slope: log(1 + exp(−m))
        grad = -(d * (w * p)[:, None]).sum(axis=0) + 2 * penalty * weights
        hess = (d * (w * p * (1 - p))[:, None]).T @ d + 2 * np.diag(penalty) + 1e-9 * np.eye(d.shape[1])
        step = np.linalg.solve(hess, grad)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return {
        "kind": "linear", "features": list(features.FEATURES), "mean": mean.tolist(),
        "scale": scale.tolist(), "weights": weights.tolist(), "bias": 0.0, "depth": DEPTH,
    }  # fmt: skip


def scores(model: dict, g: Group) -> np.ndarray:
    if model["kind"] == "column":  # one feature alone, e.g. the keyword leg's own order
        return g.x[:, features.FEATURES.index(model["feature"])]
    if model["kind"] == "trees":
        return model["booster"].predict(g.x)
    return ((g.x - np.array(model["mean"])) / np.array(model["scale"])) @ np.array(model["weights"])


def fit_trees(
    groups: Sequence[Group],
    leaves: int = TREE_LEAVES,
    rounds: int = TREE_ROUNDS,
    min_data: int = TREE_MIN_DATA,
) -> dict:
    """LightGBM's lambdarank: the shipped model. Each collection weighs the same in total."""
    import lightgbm

    per_collection: dict[str, int] = {}
    for g in groups:
        per_collection[g.collection] = per_collection.get(g.collection, 0) + 1
    usable = [g for g in groups if len(g.x)]
    x = np.concatenate([g.x for g in usable])
    y = np.concatenate([np.minimum(g.gain, 3) for g in usable]).astype(int)
    w = np.concatenate([np.full(len(g.x), 1000.0 / per_collection[g.collection]) for g in usable])
    data = lightgbm.Dataset(
        x, y, weight=w, group=[len(g.x) for g in usable], feature_name=list(features.FEATURES)
    )
    params = {
        "objective": "lambdarank", "metric": "ndcg", "learning_rate": 0.05, "num_leaves": leaves,
        "min_data_in_leaf": min_data, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
        "lambdarank_truncation_level": 10, "seed": 7, "deterministic": True, "num_threads": 2, "verbose": -1,
    }  # fmt: skip
    return {"kind": "trees", "booster": lightgbm.train(params, data, num_boost_round=rounds)}


# -- metrics ------------------------------------------------------------------------------------


def document_order(g: Group, s: np.ndarray | None) -> list[int]:
    """Documents in the order of their best candidate: the fused order (``s`` None) or by score."""
    order = range(len(g.doc)) if s is None else sorted(range(len(g.doc)), key=lambda i: (-s[i], i))
    seen: list[int] = []
    for i in order:
        if g.doc[i] not in seen:
            seen.append(int(g.doc[i]))
    return seen


def measure(groups: Sequence[Group], model: dict | None) -> dict[str, float | int | None]:
    """Document-level numbers as ``benchmarks/devset.py`` counts them (single-answer R@1, MRR, R@5)
    and, for the BEIR sets, nDCG@10 over the documents' grades."""
    r1, mrr, r5, ndcg = [], [], [], []
    for g in groups:
        if not g.expected:
            continue
        docs = document_order(g, None if model is None else scores(model, g))
        gain = {int(d): float(g.gain[np.flatnonzero(g.doc == d)[0]]) for d in set(g.doc.tolist())}
        hit = [gain.get(d, 0.0) > 0 for d in docs]
        first = next((i + 1 for i, h in enumerate(hit) if h), None)
        r5.append(first is not None and first <= 5)
        if g.expected == 1:
            r1.append(first == 1)
            mrr.append(1.0 / first if first else 0.0)
        if g.kind == "beir":
            dcg = sum(gain.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(docs[:10]))
            ideal = sum(1.0 / math.log2(i + 2) for i in range(min(g.expected, 10)))
            ndcg.append(dcg / ideal)

    def avg(v: list) -> float | None:
        return sum(v) / len(v) if v else None

    return {
        "n": len(groups),
        "single R@1": avg(r1),
        "single MRR": avg(mrr),
        "R@5": avg(r5),
        "nDCG@10": avg(ndcg),
    }


def load() -> list[Group]:
    path = WORK / "groups.pkl"
    if not path.exists():
        raise SystemExit("no recorded features: run `python scripts/train_ranker.py collect` first")
    with path.open("rb") as fh:
        return pickle.load(fh)


def _row(label: str, groups: Sequence[Group], models: Sequence[dict]) -> str:
    base, learned = measure(groups, None), [measure(groups, m) for m in models]
    cells = []
    for key in ("single R@1", "single MRR", "R@5", "nDCG@10"):
        b = base[key]
        cells.append("—" if b is None else f"{b:.3f} → " + " / ".join(f"{m[key]:.3f}" for m in learned))
    return f"| {label} | {base['n']} | " + " | ".join(cells) + " |"


def report(groups: Sequence[Group], write: bool) -> None:
    header = "| set | questions | single R@1 | single MRR | R@5 | nDCG@10 |\n|---|---|---|---|---|---|"
    tune = [g for g in groups if g.half == "tune"]
    fits = [fit_trees, fit_linear]
    models = [f(tune) for f in fits]
    model = models[0]
    print("Each cell: blend → trees (shipped) / linear (not taken)\n")
    print("## Held-out halves (trained on every tune half): blend → learned\n")
    print(header)
    for collection in sorted({g.collection for g in groups}):
        for variant in ("alone", "also"):
            chosen = [
                g
                for g in groups
                if g.collection == collection and g.variant == variant and g.half == "heldout"
            ]
            if chosen:
                print(_row(f"{collection} ({variant})", chosen, models))
    print("\n## The keyword leg alone (its BM25 order of the same candidates), held-out halves\n")
    print(header)
    bm25 = {"kind": "column", "feature": "document_lexical"}
    for collection in ("scifact", "jsquad-ir"):
        chosen = [g for g in groups if g.collection == collection and g.half == "heldout"]
        if chosen:
            print(_row(f"{collection} BM25", chosen, [bm25]))
    print(
        "\n## Leave one family out (trained on the other families' tune halves, tested on this one's held-out half)\n"
    )
    print(header)
    for family in sorted({g.family for g in groups}):
        loco = [f([g for g in tune if g.family != family]) for f in fits]
        for variant in ("alone", "also"):
            chosen = [
                g for g in groups if g.family == family and g.variant == variant and g.half == "heldout"
            ]
            if chosen:
                print(_row(f"{family} ({variant})", chosen, loco))
    importance = model["booster"].feature_importance(importance_type="gain")
    print("\n## The trees' gain by feature, trained on every tune half\n")
    total = importance.sum() or 1.0
    for name, gain in sorted(zip(features.FEATURES, importance, strict=True), key=lambda p: -p[1]):
        print(f"- {name}: {gain / total:.1%}")
    if write:
        flat = flatten(model["booster"], sources=sorted({f"{g.collection} (tune half)" for g in tune}))
        check(flat, model, tune)
        MODEL.write_text(json.dumps(flat, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"\nwrote {MODEL.relative_to(ROOT)} ({MODEL.stat().st_size:,} bytes)", file=sys.stderr)


def flatten(booster, sources: Sequence[str]) -> dict:  # type: ignore[no-untyped-def]
    """LightGBM's trees as the flat arrays ``kbseek.search.ranker`` walks."""
    nodes: dict[str, list] = {k: [] for k in ("feature", "threshold", "left", "right", "value")}
    roots, levels = [], 0

    def add(node: dict, level: int) -> int:
        nonlocal levels
        me = len(nodes["value"])
        for k in nodes:
            nodes[k].append(0)
        if "leaf_value" in node:
            levels = max(levels, level)
            nodes["left"][me] = nodes["right"][me] = me
            nodes["value"][me] = node["leaf_value"]
            return me
        if node["decision_type"] != "<=":
            raise SystemExit(f"a split of kind {node['decision_type']!r}: the ranker reads only '<='")
        nodes["feature"][me], nodes["threshold"][me] = node["split_feature"], node["threshold"]
        nodes["value"][me] = node["internal_value"]
        nodes["left"][me] = add(node["left_child"], level + 1)
        nodes["right"][me] = add(node["right_child"], level + 1)
        return me

    for tree in booster.dump_model()["tree_info"]:
        roots.append(add(tree["tree_structure"], 0))
    return {
        "kind": "trees", "features": list(features.FEATURES), "depth": DEPTH, "levels": levels,
        "trained": {"method": "LightGBM lambdarank", "leaves": TREE_LEAVES, "rounds": TREE_ROUNDS,
                    "min_data_in_leaf": TREE_MIN_DATA, "on": list(sources)},
        "roots": roots, "nodes": nodes,
    }  # fmt: skip


def check(flat: dict, model: dict, groups: Sequence[Group]) -> None:
    """The flat model must score as LightGBM does; a few of its scores go into the file for a test."""
    from kbseek.search.ranker import LearnedRanker

    ranker = LearnedRanker.from_dict(flat)
    x = np.concatenate([g.x for g in groups if len(g.x)])
    ours, parts = ranker.walk(x)
    theirs = model["booster"].predict(x)
    if not np.allclose(ours, theirs, atol=1e-9):
        raise SystemExit(f"the flattened trees disagree with LightGBM by {np.abs(ours - theirs).max()}")
    base = ranker.value[ranker.roots].sum()
    if not np.allclose(parts.sum(axis=1) + base, ours, atol=1e-9):
        raise SystemExit("the features' parts do not add up to the score")
    picked = np.linspace(0, len(x) - 1, 8).astype(int)
    flat["checks"] = [{"x": x[i].tolist(), "score": float(theirs[i])} for i in picked]


def develop(groups: Sequence[Group]) -> None:
    """Choosing the model's settings on the tune halves alone: leave one family out *within* them
    (train on the other families' tune halves, test on this family's tune half). The held-out
    halves are not read, so ``report`` can still speak for them."""
    tune = [g for g in groups if g.half == "tune"]
    candidates = {f"linear l2={l2}": partial(fit_linear, l2=l2) for l2 in (0.001, 0.01, 0.1, 1.0)}
    for leaves in (4, 7, 15):
        for rounds in (100, 200, 400):
            for min_data in (50, 200):
                candidates[f"trees {leaves} leaves, {rounds} rounds, {min_data} per leaf"] = partial(
                    fit_trees, leaves=leaves, rounds=rounds, min_data=min_data
                )
    for label, fitter in candidates.items():
        deltas = []
        cells = []
        for family in sorted({g.family for g in tune}):
            model = fitter([g for g in tune if g.family != family])
            for variant in ("alone", "also"):
                chosen = [g for g in tune if g.family == family and g.variant == variant]
                if chosen:
                    b, m = measure(chosen, None)["single R@1"], measure(chosen, model)["single R@1"]
                    deltas.append(m - b)
                    cells.append(f"{family}/{variant} {m - b:+.3f}")
        print(
            f"{label}: mean {sum(deltas) / len(deltas):+.3f}, worst {min(deltas):+.3f} | " + ", ".join(cells)
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=("collect", "develop", "report"))
    parser.add_argument("--write", action="store_true", help="Write the model trained on every tune half.")
    args = parser.parse_args()
    if args.step == "collect":
        WORK.mkdir(parents=True, exist_ok=True)
        groups = collect_devsets(sorted(devset.ASSEMBLE))
        groups += collect_beir("scifact", "train", None)
        groups += collect_beir("jsquad-ir", "valid", JSQUAD_QUERIES)
        with (WORK / "groups.pkl").open("wb") as fh:
            pickle.dump(groups, fh)
        print(f"recorded {len(groups)} searches", file=sys.stderr)
    elif args.step == "develop":
        develop(load())
    else:
        report(load(), args.write)


if __name__ == "__main__":
    main()
