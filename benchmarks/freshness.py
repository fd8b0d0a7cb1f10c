"""Per-call cost of keeping the index fresh: a stat scan before each call against the watcher.

    python benchmarks/freshness.py                 # 20,000 files
    python benchmarks/freshness.py --files 50000

Builds a tree of small Markdown files in a temporary folder, indexes it
keyword-only, then times, all in one run (docs/decisions/0015):

1. the stat scan alone (what a freshness check costs);
2. a search with no watcher and ``freshness_interval_s = 0``, so a scan runs
   before every call (what every call pays where the watcher cannot run);
3. the same search with the watcher running, which makes no scan on the
   call's path: the baseline the others are printed against.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.config import Settings

REPS = 15


def build(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 200:03}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i:05}.md").write_text(
            f"# Note {i}\n\nword{i % 977} body text number {i}.\n", encoding="utf-8"
        )


def median_ms(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(REPS):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbseek-freshness-") as tmp:
        root = Path(tmp) / "kb"
        build(root, args.files)
        started = time.perf_counter()
        kb = KnowledgeBase(settings=Settings(root=root, semantic=False, freshness_interval_s=0.0))
        kb.index()
        print(f"{args.files} files, indexed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        scan = median_ms(lambda: kb.refresh())  # the freshness check alone: a scan, no change found
        with_scan = median_ms(lambda: kb.search("word123 body"))
        kb.start_watching()
        deadline = time.monotonic() + 60
        while not kb.status().freshness.startswith("watcher") and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the watcher's first batch runs one pass; let it finish
        if not kb.status().freshness.startswith("watcher"):
            raise SystemExit(f"the watcher did not start: {kb.status().watcher}")
        watched = median_ms(lambda: kb.search("word123 body"))
        kb.close()
    print(f"| measure ({args.files:,} files) | median ms | ratio to the baseline |")
    print("|---|---|---|")
    print(f"| freshness check alone (stat scan, nothing changed) | {scan:.1f} | {scan / watched:.1f}× |")
    print(f"| search, stat scan before it | {with_scan:.1f} | {with_scan / watched:.1f}× |")
    print(f"| search, watcher running (baseline) | {watched:.1f} | 1.0× |")


if __name__ == "__main__":
    main()
