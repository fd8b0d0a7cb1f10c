"""Lexical leg at scale: warm latency at ~140k chunks, and what bounding OR queries costs in ranking.

    python benchmarks/lexical_scale.py                  # build once (~3-4 min), then measure
    python benchmarks/lexical_scale.py --queries 300    # how many real queries to time
    python benchmarks/lexical_scale.py --skip-quality   # latency only
    python benchmarks/lexical_scale.py --rebuild        # write and index the large knowledge base again

The large knowledge base is the BEIR collections the other benchmarks use (SciFact and JSQuAD,
from ``KBSEEK_DATASETS``) written again under several sub-folders until about 140k chunks, cached
under ``benchmarks/.work/lexical-scale`` (git-ignored) and indexed keyword-only. Each copy after the
first drops a seeded fifth of every document's sentences, so the copies are near-duplicates with
their own lengths and term counts (as a real, large knowledge base has) instead of exact ties that
would make any top-k comparison a coin toss.

Every latency is printed next to baselines measured in the same run, on the same index and the same
queries (docs/decisions/0016): the old full OR query (every term MATCHed and ranked by BM25), and a
bare FTS5 MATCH of the query's single rarest term with LIMIT 100 (about the least work any ranking
that uses the index at all can do). Quality of the bounded query is measured against the full one
(overlap@10, recall of the full top-100) at scale, and as nDCG@10 of lexical-only search at the
collections' normal size, with the bound on and off.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK, Collection, doc_id, load, mean, ndcg_at, percentile, write_markdown
from kbseek import KnowledgeBase
from kbseek.config import Limits, Settings
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.search.lexical import lexical_candidates
from kbseek.search.pipeline import CANDIDATES_PER_LEG
from kbseek.store import lexical_bound
from kbseek.store.lexical_bound import rare_terms
from kbseek.store.sqlite.fts_match import match_expression
from kbseek.store.sqlite.store import SqliteStore

SPLITS = {"scifact": "train", "jsquad-ir": "valid"}
SCALE = WORK / "lexical-scale"
TARGET_CHUNKS = 140_000
CHUNKS_PER_COPY = 9_000
"""A perturbed copy of both collections holds about this many chunks (the exact one about 10.3k)."""
DROP = 0.2
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


def _perturbed(text: str, rng: random.Random) -> str:
    kept = [s for s in _sentences(text) if rng.random() >= DROP]
    return " ".join(kept) if kept else text


def build(collections: list[Collection], rebuild: bool) -> KnowledgeBase:
    """The ~140k-chunk knowledge base, written and indexed once, then reused."""
    root, index_dir = SCALE / "kb", SCALE / "index"
    marker = SCALE / ".complete"
    if rebuild or not marker.exists():
        shutil.rmtree(SCALE, ignore_errors=True)
        copies = -(-TARGET_CHUNKS // CHUNKS_PER_COPY)
        for copy in range(copies):
            rng = random.Random(copy)
            for c in collections:
                folder = root / f"copy-{copy:02d}" / c.name
                folder.mkdir(parents=True)
                for did, (title, text) in c.corpus.items():
                    body = text if copy == 0 else _perturbed(text, rng)
                    page = f"# {title}\n\n{body}\n" if title else f"{body}\n"
                    (folder / f"{did.replace('/', '_')}.md").write_text(page, encoding="utf-8")
    kb = KnowledgeBase(
        settings=Settings(root=root, index_dir=index_dir, semantic=False, freshness_interval_s=1e9)
    )
    if not marker.exists():
        started = time.perf_counter()
        kb.index()
        took = time.perf_counter() - started
        chunks = kb.summary().chunks
        print(f"indexed {chunks} chunks in {took:.0f} s ({chunks / took:.0f} chunks/s)", file=sys.stderr)
        marker.write_text("", encoding="utf-8")
    return kb


@contextmanager
def full_or() -> Iterator[None]:
    """The store as it was before the bound: every query term MATCHed (the bound switched off)."""
    saved = lexical_bound.LEXICAL_POSTINGS_BUDGET
    lexical_bound.LEXICAL_POSTINGS_BUDGET = None
    try:
        yield
    finally:
        lexical_bound.LEXICAL_POSTINGS_BUDGET = saved


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _rarest_term(store: SqliteStore, compiled: CompiledQuery) -> str:
    """The query's rarest term (looked up outside the timing, so the baseline is the MATCH alone)."""
    df = store.document_frequencies(compiled.terms)
    expression = match_expression(
        [min((t for t in compiled.terms if t in df), key=lambda t: df[t], default=compiled.terms[0])]
    )
    assert expression is not None
    return expression


def _bare(store: SqliteStore, expression: str) -> None:
    store.conn.execute(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?",
        (expression, CANDIDATES_PER_LEG),
    ).fetchall()


def latency(kb: KnowledgeBase, queries: list[str]) -> None:
    store = kb.retrieval().store
    assert isinstance(store, SqliteStore)
    max_terms = kb.settings.limits.max_query_terms
    compiled = [c for c in (compile_query(q, max_terms=max_terms) for q in queries) if c.terms]

    def leg(c: CompiledQuery) -> list[tuple[int, float]]:
        return lexical_candidates(store, c, limit=CANDIDATES_PER_LEG, path_prefix=None, tags=())

    # Warm: every query once through each path, so the pages they touch are in the cache.
    rarest = [_rarest_term(store, c) for c in compiled]
    for c, r in zip(compiled, rarest, strict=True):
        leg(c)
        _bare(store, r)
    with full_or():
        for c in compiled:
            leg(c)
    times: dict[str, list[float]] = {"bounded leg": [], "full OR leg": [], "rarest term bare": []}
    for c, r in zip(compiled, rarest, strict=True):  # interleaved: load on a shared machine hits all alike
        times["bounded leg"].append(_timed(lambda c=c: leg(c)))
        times["rarest term bare"].append(_timed(lambda r=r: _bare(store, r)))
        with full_or():
            times["full OR leg"].append(_timed(lambda c=c: leg(c)))
    search: dict[str, list[float]] = {"kb.search, bounded": [], "kb.search, full OR": []}
    for q in queries:
        search["kb.search, bounded"].append(_timed(lambda q=q: kb.search(q, limit=10)))
        with full_or():
            search["kb.search, full OR"].append(_timed(lambda q=q: kb.search(q, limit=10)))

    overlap, recall, bounded_runs = [], [], 0
    budget = lexical_bound.LEXICAL_POSTINGS_BUDGET or 0
    for c in compiled:
        bounded = [r for r, _ in leg(c)]
        with full_or():
            full = [r for r, _ in leg(c)]
        if full:
            overlap.append(len(set(bounded[:10]) & set(full[:10])) / min(10, len(full)))
            recall.append(len(set(bounded) & set(full)) / len(full))
        # The store's own plan for this query (the benchmark may look inside it).
        plan = rare_terms(store._postings(c.terms, budget), budget, least=CANDIDATES_PER_LEG)
        bounded_runs += plan is not None and len(bounded) >= CANDIDATES_PER_LEG

    chunks = kb.summary().chunks
    base = percentile(times["rarest term bare"], 50)
    full50 = percentile(times["full OR leg"], 50)
    print(f"\n{chunks} chunks, {len(compiled)} queries, warm, in process (ms):")
    print("| path | p50 | p95 | p50 / rarest-term bare | p50 / full OR leg |")
    print("|---|---|---|---|---|")
    for name, values in {**times, **search}.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        print(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / base:.1f}× | {p50 / full50:.2f}× |")
    print(f"\nbounded vs full OR top-100 at {chunks} chunks:")
    print(f"overlap@10 {mean(overlap):.3f}, recall of the full top-100 {mean(recall):.3f}, ", end="")
    print(
        f"queries answered by the bounded query: {bounded_runs} of {len(compiled)} (the rest ran the full OR)"
    )


def quality(collection: Collection) -> tuple[float, float, float]:
    """nDCG@10 of lexical-only search at the collection's normal size, bound on and off, and overlap@10."""
    root = write_markdown(collection)
    index_dir = WORK / collection.name / "index-lexical"
    limits = Limits(default_limit=100, max_limit=100, max_hits_per_document=1, default_snippet_chars=120)
    settings = Settings(
        root=root, index_dir=index_dir, semantic=False, limits=limits, freshness_interval_s=1e9
    )
    kb = KnowledgeBase(settings=settings)
    kb.index()
    bounded, full, overlap = [], [], []
    for qid, text in collection.queries.items():
        rel = collection.qrels[qid]
        a = [doc_id(h.path) for h in kb.search(text, limit=100).hits]
        with full_or():
            b = [doc_id(h.path) for h in kb.search(text, limit=100).hits]
        bounded.append(ndcg_at(a, rel))
        full.append(ndcg_at(b, rel))
        if b:
            overlap.append(len(set(a[:10]) & set(b[:10])) / min(10, len(b)))
    kb.close()
    return mean(full), mean(bounded), mean(overlap)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--queries", type=int, default=300, help="real queries timed, half SciFact, half JSQuAD"
    )
    parser.add_argument("--skip-quality", action="store_true", help="no nDCG@10 at normal size")
    parser.add_argument(
        "--rebuild", action="store_true", help="write and index the large knowledge base again"
    )
    args = parser.parse_args()
    collections = [load(name, split) for name, split in SPLITS.items()]
    kb = build(collections, args.rebuild)
    per = args.queries // len(collections)
    queries = [q for c in collections for q in list(c.queries.values())[:per]]
    latency(kb, queries)
    kb.close()
    if not args.skip_quality:
        print("\nlexical-only nDCG@10 at normal size:")
        print("| collection | full OR | bounded | delta | overlap@10 |")
        print("|---|---|---|---|---|")
        for c in collections:
            f, b, o = quality(c)
            print(f"| {c.name} | {f:.4f} | {b:.4f} | {b - f:+.4f} | {o:.3f} |")


if __name__ == "__main__":
    main()
