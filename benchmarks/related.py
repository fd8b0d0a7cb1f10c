"""Is the vector side of ``related`` meaningful? Measured on pages that link to each other heavily.

    python benchmarks/related.py [--kb ../shared/realdocs/react-en] [--top 10] [--index-dir DIR] [--json]

The React documentation's pages link to each other wherever one explains what another uses, so a
page's outgoing links are a fair, independent set of its related pages. For every page with at
least one link to another indexed page, ``related(path, links=False, limit=top)`` ranks by vectors
alone, and the benchmark reports the share of the page's outgoing links found in that top list:

- **recall (links in reach)**: per page, links found / min(links, top), averaged over pages: the
  target (at least 0.8 at top 10), since a page with 25 links cannot have all of them in a top 10;
- **recall (all links)**: links found / links, pooled over every page: the plain share;
- the same with the link signal on, as a check that links, when present, come first.

The knowledge base is indexed with the default configuration (the bundled model) into a temporary
folder, so the documentation tree is left as it is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kbseek import KnowledgeBase
from kbseek.config import Settings

HERE = Path(__file__).resolve().parent
DEFAULT_KB = HERE.parent.parent / "shared" / "realdocs" / "react-en"


def measure(kb: KnowledgeBase, top: int) -> dict[str, Any]:
    in_reach: list[float] = []
    found = total = 0
    with_links: list[float] = []
    seconds: list[float] = []
    pages = 0
    for document in kb.store.documents():
        targets = {link.target for link in kb.store.links_from(document.path, limit=1000)}
        if not targets:
            continue
        pages += 1
        started = time.perf_counter()
        ranked = [h.path for h in kb.related(document.path, links=False, limit=top).hits]
        seconds.append(time.perf_counter() - started)
        hit = len(targets & set(ranked))
        in_reach.append(hit / min(len(targets), top))
        found += hit
        total += len(targets)
        linked = [h.path for h in kb.related(document.path, limit=top).hits]
        with_links.append(len(targets & set(linked)) / min(len(targets), top))
    return {
        "pages": pages,
        "documents": kb.summary().documents,
        "links": total,
        "top": top,
        "recall_in_reach_vectors_only": round(statistics.fmean(in_reach), 4),
        "recall_all_links_vectors_only": round(found / total, 4),
        "pages_at_least_0.8": round(sum(r >= 0.8 for r in in_reach) / pages, 4),
        "recall_in_reach_with_links": round(statistics.fmean(with_links), 4),
        "median_ms": round(statistics.median(seconds) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=Path, default=DEFAULT_KB)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument(
        "--index-dir", type=Path, help="Keep (and reuse) the index here instead of a temporary one."
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        index = args.index_dir or Path(scratch)
        settings = Settings(root=args.kb.resolve(), index_dir=index, freshness_interval_s=3600.0)
        with KnowledgeBase(settings=settings) as kb:
            kb.index()
            result = measure(kb, args.top)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:34} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
