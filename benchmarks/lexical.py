"""Lexical (BM25) baseline: index time, search latency and retrieval quality on the BEIR collections.

    python benchmarks/lexical.py            # both collections
    python benchmarks/lexical.py scifact    # one

Latency is reported next to a baseline measured in the same run: the bare
FTS5 query for the same compiled expression, so the ratio shows what the rest
of the pipeline (analysis, fetching rows, de-duplication, snippets, response
shaping) costs on this machine, whatever its load.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK, doc_id, load, mean, mrr_at, ndcg_at, percentile, recall_at, write_markdown
from kbseek import KnowledgeBase
from kbseek.config import Limits, Settings
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.parsers import Registry
from kbseek.ingest.scan import scan
from kbseek.search.fts_query import compile_query

SPLITS = {"scifact": "train", "jsquad-ir": "valid"}
LATENCY_QUERIES = 200


def bench(name: str) -> dict[str, float]:
    collection = load(name, SPLITS[name])
    root = write_markdown(collection)
    index_dir = WORK / name / "index-lexical"
    shutil.rmtree(index_dir, ignore_errors=True)
    limits = Limits(default_limit=100, max_limit=100, max_hits_per_document=1, default_snippet_chars=200)
    settings = Settings(
        root=root, index_dir=index_dir, semantic=False, limits=limits, freshness_interval_s=1e9
    )
    kb = KnowledgeBase(settings=settings)
    started = time.perf_counter()
    kb.index()
    index_s = time.perf_counter() - started
    summary = kb.summary()
    docs, chunks = summary.documents, summary.chunks

    # The stat scan a freshness check makes before answering, alone (the pass above ran one too).
    exclusion = Exclusion(root, settings.exclude_dirs, kb.index_dir)
    scan_started = time.perf_counter()
    scan(root, Registry(settings.parsers), exclusion, settings.max_file_bytes)
    scan_ms = (time.perf_counter() - scan_started) * 1000

    ndcg, r1, r10, r100, mrr = [], [], [], [], []
    for qid, text in collection.queries.items():
        ranked = [doc_id(h.path) for h in kb.search(text, limit=100).hits]
        rel = collection.qrels[qid]
        ndcg.append(ndcg_at(ranked, rel))
        r1.append(recall_at(ranked, rel, 1))
        r10.append(recall_at(ranked, rel, 10))
        r100.append(recall_at(ranked, rel, 100))
        mrr.append(mrr_at(ranked, rel))

    sample = list(collection.queries.values())[:LATENCY_QUERIES]
    full, bare = [], []
    for text in sample:
        t0 = time.perf_counter()
        kb.search(text, limit=10)
        full.append((time.perf_counter() - t0) * 1000)
        compiled = compile_query(text, max_terms=kb.settings.limits.max_query_terms)
        if compiled.terms:
            t0 = time.perf_counter()
            kb.retrieval().store.lexical_candidates(compiled.terms, limit=100)
            bare.append((time.perf_counter() - t0) * 1000)
    kb.close()
    return {
        "docs": docs, "chunks": chunks, "queries": len(collection.queries), "index_s": index_s,
        "chunks_per_s": chunks / index_s, "scan_ms": scan_ms,
        "ndcg10": mean(ndcg), "recall1": mean(r1), "recall10": mean(r10), "recall100": mean(r100), "mrr10": mean(mrr),
        "p50": percentile(full, 50), "p95": percentile(full, 95),
        "bare_p50": percentile(bare, 50), "bare_p95": percentile(bare, 95),
    }  # fmt: skip


def main(argv: list[str]) -> None:
    names = argv or list(SPLITS)
    rows = {name: bench(name) for name in names}
    print("\n| collection | docs | chunks | queries | index s | chunks/s | stat scan ms |")
    print("|---|---|---|---|---|---|---|")
    for n, r in rows.items():
        print(f"| {n} | {r['docs']:.0f} | {r['chunks']:.0f} | {r['queries']:.0f} | {r['index_s']:.1f} "
              f"| {r['chunks_per_s']:.0f} | {r['scan_ms']:.1f} |")  # fmt: skip
    print("\n| collection | nDCG@10 | recall@1 | recall@10 | recall@100 | MRR@10 |")
    print("|---|---|---|---|---|---|")
    for n, r in rows.items():
        print(f"| {n} | {r['ndcg10']:.3f} | {r['recall1']:.3f} | {r['recall10']:.3f} | {r['recall100']:.3f} "
              f"| {r['mrr10']:.3f} |")  # fmt: skip
    print(f"\nsearch latency over {LATENCY_QUERIES} queries, in process, warm (ms):")
    print("| collection | search p50 | search p95 | bare FTS5 p50 | bare FTS5 p95 | ratio p50 |")
    print("|---|---|---|---|---|---|")
    for n, r in rows.items():
        ratio = r["p50"] / r["bare_p50"] if r["bare_p50"] else float("nan")
        print(
            f"| {n} | {r['p50']:.2f} | {r['p95']:.2f} | {r['bare_p50']:.2f} | {r['bare_p95']:.2f} | {ratio:.1f}× |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
