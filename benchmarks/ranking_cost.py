"""What the learned ranking costs a search, against the hand-set blend measured in the same run.

    python benchmarks/ranking_cost.py                                   # a copy of examples/kb
    python benchmarks/ranking_cost.py --kb DIR --index-dir DIR          # an index already built
    python benchmarks/ranking_cost.py --kb benchmarks/.work/filtered/100000/kb \\
        --index-dir benchmarks/.work/filtered/100000/index --queries 200   # 100,000 files (filtered.py)

One knowledge base, one loaded model: each question is ranked by the pipeline twice in a row, once
with ``fusion = "blend"`` and once with ``"learned"``, alternating which goes first, so both see
the same caches and the same machine load. The questions are SciFact's claims when the datasets
are beside the checkout (``KBSEEK_DATASETS``), else a fixed list. Prints each one's p50 and p95 in
milliseconds and the ratio of the p50s; only the ratio within one run means much on a shared machine.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from beir import datasets_dir, load, percentile
from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.facade.request import search_request
from kbseek.search_query import SearchQuery

HERE = Path(__file__).resolve().parent
FALLBACK = (
    "how do I roll back a release", "deploy", "cache invalidation", "on-call rotation",
    "database migration", "ロールバック", "監視", "incident review", "rate limiting", "backup restore",
)  # fmt: skip


def questions(n: int) -> list[str]:
    if (datasets_dir() / "scifact").is_dir():
        return list(load("scifact", "train").queries.values())[:n]
    return [FALLBACK[i % len(FALLBACK)] for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, help="The knowledge base (default: a copy of examples/kb).")
    parser.add_argument("--index-dir", type=Path, help="Its index, when not the default place.")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    scratch = None
    root = args.kb
    if root is None:
        scratch = Path(tempfile.mkdtemp(prefix="kbseek-ranking-"))
        root = scratch / "kb"
        shutil.copytree(HERE.parent / "examples" / "kb", root)
    kb = KnowledgeBase(settings=Settings(root=root, index_dir=args.index_dir, freshness_interval_s=1e9))
    try:
        kb.load_semantic()
        if args.index_dir is None:
            kb.index()
        retrieval = kb.retrieval()
        legs = {name: retrieval.policy(fusion=name) for name in ("blend", "learned")}
        dense = retrieval.dense_leg()
        if dense is None:
            raise SystemExit("the model did not load: the learned ranking needs the dense leg")
        times: dict[str, list[float]] = {name: [] for name in legs}
        asked = questions(args.queries)
        for i, query in enumerate(asked):
            request = search_request(kb.limits, SearchQuery(query))
            order = list(legs) if i % 2 == 0 else list(reversed(legs))
            for name in order:
                started = time.perf_counter()
                retrieval.run(request, dense, policy=legs[name])
                if i >= 5:  # the first few warm the caches
                    times[name].append((time.perf_counter() - started) * 1000)
        summary = kb.summary()
        print(
            f"{summary.documents} documents, {summary.chunks} chunks, {len(times['blend'])} questions timed"
        )
        for name, values in times.items():
            print(f"{name:8} p50 {percentile(values, 50):7.1f} ms  p95 {percentile(values, 95):7.1f} ms")
        ratio = percentile(times["learned"], 50) / percentile(times["blend"], 50)
        print(f"learned / blend at p50: {ratio:.2f}x")
    finally:
        kb.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
