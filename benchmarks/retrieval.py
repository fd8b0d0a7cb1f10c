"""Retrieval quality of each leg and of their fusion, plus indexing and query cost, on the BEIR collections.

    python benchmarks/retrieval.py                 # both collections, default fusion
    python benchmarks/retrieval.py scifact --fusion rrf
    python benchmarks/retrieval.py jsquad-ir --queries 1000
    python benchmarks/retrieval.py scifact --embedder e5 --reuse-index   # multilingual-e5-small
    python benchmarks/retrieval.py scifact --embedder use+e5             # both, gated by language

Every cost is printed next to a baseline measured in the same run, because
these machines are shared and noisy: indexing throughput next to the raw
embedder's throughput on the same chunks, and hybrid query latency next to the
sum of its parts (query embedding + lexical leg + dense leg).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK, doc_id, load, mean, mrr_at, ndcg_at, percentile, recall_at, write_markdown
from kbseek import KnowledgeBase
from kbseek.config import Limits, Settings
from kbseek.embed.base import EmbedderSpec
from kbseek.embed.chunk_vectors import passage_input
from kbseek.facade.retrieval import Retrieval
from kbseek.search.fts_query import compile_query
from kbseek.search.request import SearchPolicy, SearchRequest

SPLITS = {"scifact": "train", "jsquad-ir": "valid"}
LATENCY_QUERIES = 200


def metrics(ranked: list[str], rel: dict[str, int]) -> dict[str, float]:
    return {
        "ndcg@10": ndcg_at(ranked, rel), "recall@10": recall_at(ranked, rel, 10),
        "recall@100": recall_at(ranked, rel, 100), "mrr@10": mrr_at(ranked, rel),
    }  # fmt: skip


def bench(
    name: str, fusion: str, dense_weight: float, matched_weight: float, max_queries: int | None,
    variants: list[str], embedder: str, threads: int, reuse_index: bool,
) -> None:  # fmt: skip
    collection = load(name, SPLITS[name])
    root = write_markdown(collection)
    index_dir = (
        WORK / name / ("index-hybrid" if embedder == "use" else f"index-hybrid-{embedder.replace('+', '-')}")
    )
    if not reuse_index:
        shutil.rmtree(index_dir, ignore_errors=True)
    limits = Limits(default_limit=100, max_limit=100, max_hits_per_document=1, default_snippet_chars=120)
    settings = Settings(
        root=root, index_dir=index_dir, limits=limits, freshness_interval_s=1e9, fusion=fusion,
        dense_weight=dense_weight, dense_weight_matched=matched_weight, embed=EmbedderSpec(provider=embedder, threads=threads),
    )  # fmt: skip
    kb = KnowledgeBase(settings=settings)
    t0 = time.perf_counter()
    kb.load_semantic()  # timed apart from the pass; index() would load it on first need otherwise
    load_s = time.perf_counter() - t0
    legs = kb.retrieval()
    embedder, dense_index = legs.embedder, legs.dense
    assert embedder is not None and dense_index is not None, kb.status().notes

    t0 = time.perf_counter()
    report = kb.index()
    index_s = time.perf_counter() - t0
    summary = kb.summary()
    docs, chunks = summary.documents, summary.chunks

    # Every chunk has a vector now: rowid → chunk, for the legs' rowids and the raw throughput sample.
    rows = legs.store.chunks_by_rowid(legs.store.vector_rowids().tolist())
    rowid_path = {rowid: row.path for rowid, row in rows.items()}

    # Raw embedder throughput on (a sample of) the same chunk inputs, same batch size.
    inputs = [passage_input(row.heading_path, row.text) for _, row in sorted(rows.items())[:512]]
    batch = settings.embed.batch_size
    t0 = time.perf_counter()
    for i in range(0, len(inputs), batch):
        embedder.embed_documents(inputs[i : i + batch])
    raw_cps = len(inputs) / (time.perf_counter() - t0)
    pipeline_cps = report.chunks_embedded / index_s

    queries = list(collection.queries.items())[:max_queries]
    max_terms = settings.limits.max_query_terms
    per_leg: dict[str, list[dict[str, float]]] = {"lexical": [], "dense": [], "hybrid": []}
    variant_policies = {v: _policy(legs, v) for v in variants}
    dense_alone = legs.policy(fusion="blend", dense_weight=1.0, matched_weight=1.0)
    dense_leg = legs.dense_leg()
    per_leg.update({f"hybrid {v}": [] for v in variants})
    flagged = 0
    for qid, text in queries:
        rel = collection.qrels[qid]
        request = SearchRequest(query=text, limit=100, snippet_chars=0)
        answered = legs.run(request, dense_leg)
        hybrid = [doc_id(h.chunk.path) for h in answered.hits]
        flagged += answered.low_confidence  # every BEIR query has an answer: each flag is a false one
        compiled = compile_query(text, max_terms=max_terms)
        lexical = _dedupe(
            [doc_id(rowid_path[r]) for r, _ in legs.store.lexical_candidates(compiled.terms, limit=300)]
        )
        # The dense leg alone as the pipeline runs it (for two models: each read apart, gated by language).
        dense = [doc_id(h.chunk.path) for h in legs.run(request, dense_leg, policy=dense_alone).hits]
        per_leg["hybrid"].append(metrics(hybrid, rel))
        per_leg["lexical"].append(metrics(lexical, rel))
        per_leg["dense"].append(metrics(dense, rel))
        for v, policy in variant_policies.items():
            ranked = [doc_id(h.chunk.path) for h in legs.run(request, dense_leg, policy=policy).hits]
            per_leg[f"hybrid {v}"].append(metrics(ranked, rel))

    # Latency: warm hybrid search vs the sum of its parts, on the same queries.
    sample = [t for _, t in queries[:LATENCY_QUERIES]]
    full, parts = [], []
    for text in sample:
        t0 = time.perf_counter()
        kb.search(text, limit=10)
        full.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        qvec = embedder.embed_query(text)
        compiled = compile_query(text, max_terms=max_terms)
        legs.store.lexical_candidates(compiled.terms, limit=100)
        dense_index.search(qvec, 100)
        parts.append((time.perf_counter() - t0) * 1000)
    kb.close()

    print(f"\n## {name} ({SPLITS[name]} split, {len(queries)} queries, {docs} documents, {chunks} chunks)")
    print(
        f"fusion={fusion} dense_weight={dense_weight}→{matched_weight} model={embedder.model_id} "
        f"load {load_s:.1f}s\n"
    )
    print("| leg | nDCG@10 | recall@10 | recall@100 | MRR@10 |")
    print("|---|---|---|---|---|")
    for leg, ms in per_leg.items():
        print(f"| {leg} | " + " | ".join(f"{mean([m[k] for m in ms]):.3f}" for k in ms[0]) + " |")
    print(
        f"\nanswerable queries the hybrid flagged low_confidence: {flagged} of {len(queries)} "
        f"({flagged / max(len(queries), 1):.1%})"
    )
    print("\n| indexing | chunks/s |")
    print("|---|---|")
    print(f"| whole pipeline (scan, parse, chunk, analyze, embed, store) | {pipeline_cps:.1f} |")
    print(f"| raw embedder, same chunks, batch {batch} | {raw_cps:.1f} |")
    print(f"| ratio | {pipeline_cps / raw_cps:.0%} |")
    print(f"\n| query latency, warm, {len(sample)} queries | p50 ms | p95 ms |")
    print("|---|---|---|")
    print(f"| hybrid search (full response) | {percentile(full, 50):.1f} | {percentile(full, 95):.1f} |")
    print(
        f"| sum of parts (embed query + lexical + dense) | {percentile(parts, 50):.1f} | {percentile(parts, 95):.1f} |"
    )
    print(f"| ratio p50 | {percentile(full, 50) / percentile(parts, 50):.2f}× | |")


def _policy(legs: Retrieval, variant: str) -> SearchPolicy:
    """``blend:0.6`` (a fixed weight), ``blend:0.8:0.3`` (adaptive: unmatched, matched) or ``rrf``:
    the same pipeline with another fusion, for comparison in one run."""
    configured = legs.policy()
    method, *weights = variant.split(":")
    unmatched = float(weights[0]) if weights else configured.dense_weight
    matched = float(weights[1]) if len(weights) > 1 else unmatched
    return legs.policy(fusion=method, dense_weight=unmatched, matched_weight=matched)


def _dedupe(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("collections", nargs="*", help=f"Any of {', '.join(SPLITS)} (default: all).")
    parser.add_argument("--fusion", default="blend", choices=["blend", "learned", "rrf"])
    parser.add_argument(
        "--dense-weight", type=float, default=Settings.__dataclass_fields__["dense_weight"].default
    )
    parser.add_argument(
        "--dense-weight-matched",
        type=float,
        default=Settings.__dataclass_fields__["dense_weight_matched"].default,
    )
    parser.add_argument(
        "--embedder", default="use", choices=["use", "e5", "use+e5"], help="Embedding provider."
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="Embedder threads (the server's default is 1)."
    )
    parser.add_argument(
        "--reuse-index", action="store_true",
        help="Keep an existing index, resuming an interrupted embedding pass (for slow embedders); the "
        "indexing throughput is then that of the resumed part only.",
    )  # fmt: skip
    parser.add_argument("--queries", type=int, default=None, help="Use only the first N queries.")
    parser.add_argument(
        "--compare",
        default="",
        help="Other fusions to score in the same run, e.g. 'blend:0.6,blend:0.8:0.3,rrf'.",
    )
    args = parser.parse_args()
    unknown = [c for c in args.collections if c not in SPLITS]
    if unknown:
        parser.error(f"unknown collection(s) {', '.join(unknown)}; choose from {', '.join(SPLITS)}")
    for name in args.collections or list(SPLITS):
        variants = [v for v in args.compare.split(",") if v]
        bench(
            name, args.fusion, args.dense_weight, args.dense_weight_matched, args.queries, variants,
            args.embedder, args.threads, args.reuse_index,
        )  # fmt: skip


if __name__ == "__main__":
    main()
