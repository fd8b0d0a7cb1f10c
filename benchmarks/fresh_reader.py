"""A reader's searches on a knowledge base fresh from its first pass, beside the SQLite server.

    python benchmarks/fresh_reader.py                                  # embedded PostgreSQL 18
    python benchmarks/fresh_reader.py --store postgresql://kb@db/kbseek  # a team's own server

A team measured 421-588 ms per search through a reader on a fresh 19-document knowledge base, on a
distribution's PostgreSQL with stock settings, against 16 ms for the SQLite server on the same
notes: autovacuum had not analyzed the new tables, the BM25 query was estimated at a cost of two
million, and ``jit = on`` compiled it. This measures exactly that moment, in one run:

1. **Baseline**: the installed ``kbseek index`` on a copy of ``--kb`` (default ``examples/kb``, 19
   notes), then ``kbseek serve --http`` on it; every query of ``examples/golden.yml`` is asked
   ``--rounds`` times through ``/api/search`` (after three warm-up searches).
2. **Reader**: ``kbseek index --store URL`` into a schema made for this run, and *at once* a
   ``kbseek serve --http --read-only`` reader without the files, asked the same searches.

Printed: the server's ``jit`` setting and whether it has a JIT provider, the statistics and the
BM25 plan's estimated cost right after the pass, then p50 / p95 for both and the reader's p50 as a
multiple of the SQLite server's (the target: within 2×). The schema is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK
from load import free_port
from processes import kbseek_script
from scale import drop_schema, embedded_postgres

ROOT = Path(__file__).resolve().parents[1]
HERE = WORK / "fresh-reader"
TARGET = 2.0
"""The reader's p50 may be at most this multiple of the SQLite server's."""


def queries() -> list[str]:
    import yaml

    golden = yaml.safe_load((ROOT / "examples" / "golden.yml").read_text(encoding="utf-8"))
    return [q["query"] for q in golden["queries"]]


@contextmanager
def server(args: list[str]) -> Iterator[int]:
    """``kbseek serve --http`` with ``args`` on a free port, until it answers ``/readyz``."""
    port = free_port()
    with subprocess.Popen(
        [kbseek_script(), "serve", "--http", "--port", str(port), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                        break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(
                            f"the server did not start: {proc.stderr and proc.stderr.read()}"
                        ) from None
                    time.sleep(0.1)
            yield port
        finally:
            proc.terminate()
            proc.communicate(timeout=30)


def search(port: int, query: str) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/api/search?" + urllib.parse.urlencode({"q": query, "limit": 5})
    with urllib.request.urlopen(url, timeout=60) as answer:
        body: dict[str, Any] = json.loads(answer.read())
        return body


def latencies(port: int, asked: list[str], rounds: int) -> list[float]:
    for q in asked[:3]:
        search(port, q)  # the model and caches warm
    out: list[float] = []
    for _ in range(rounds):
        for q in asked:
            started = time.perf_counter()
            search(port, q)
            out.append((time.perf_counter() - started) * 1000)
    return out


def server_facts(url: str, name: str) -> dict[str, Any]:
    """What the server says of itself and of the fresh schema, on a plain connection (no kbseek)."""
    import psycopg

    from kbseek.store.postgres.lexical import BM25_B, BM25_K1, BM25_WEIGHTS, FULL_QUERY
    from kbseek.text.analyzer import terms

    schema = f"kbseek_{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        jit = conn.execute("SHOW jit").fetchone()
        available = conn.execute("SELECT pg_jit_available()").fetchone()
        version = conn.execute("SHOW server_version").fetchone()
        vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        unanalyzed = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r' AND c.reltuples < 0",
            (schema,),
        ).fetchone()
        conn.execute(f"SET search_path TO {schema}, public")
        params = {
            "terms": terms("rollback the deploy"), "wh": BM25_WEIGHTS[0], "wb": BM25_WEIGHTS[1],
            "k1": BM25_K1, "b": BM25_B, "limit": 50,
        }  # fmt: skip
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + FULL_QUERY.format(join=""), params).fetchone()
    assert jit and available and version and unanalyzed and plan
    tree = plan[0] if isinstance(plan[0], list) else json.loads(plan[0])
    return {
        "server": version[0], "pgvector": vector[0] if vector else None, "jit": jit[0],
        "jit_available": bool(available[0]), "tables_never_analyzed": int(unanalyzed[0]),
        "bm25_estimated_cost": float(tree[0]["Plan"]["Total Cost"]),
    }  # fmt: skip


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", default="embedded", help="'embedded' or a postgresql:// URL")
    parser.add_argument("--kb", type=Path, default=ROOT / "examples" / "kb")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lexical-only", action="store_true", help="no model on either side")
    args = parser.parse_args()

    stop = None
    url = args.store
    if url == "embedded":
        url, stop = embedded_postgres()
    name = f"fresh_{os.getpid()}"
    model = ["--lexical-only"] if args.lexical_only else []
    asked = queries()
    shutil.rmtree(HERE, ignore_errors=True)
    kb = HERE / "kb"
    shutil.copytree(args.kb, kb, ignore=shutil.ignore_patterns(".kbseek"))
    try:
        subprocess.run([kbseek_script(), "index", "--kb", str(kb), "--quiet", *model], check=True)
        with server(["--kb", str(kb), *model]) as port:
            baseline = latencies(port, asked, args.rounds)

        store = ["--store", url, "--kb-name", name]
        subprocess.run([kbseek_script(), "index", "--kb", str(kb), "--quiet", *store, *model], check=True)
        with server(["--read-only", *store, *model]) as port:
            facts = server_facts(url, name)  # right after the pass, before any search
            reader = latencies(port, asked, args.rounds)
    finally:
        try:
            drop_schema(url, name)
        finally:
            if stop is not None:
                stop()
            shutil.rmtree(HERE, ignore_errors=True)

    ratio = pct(reader, 50) / pct(baseline, 50)
    print(f"server: PostgreSQL {facts['server']}, pgvector {facts['pgvector']}, jit = {facts['jit']}"
          f" (JIT provider {'present' if facts['jit_available'] else 'absent'})")  # fmt: skip
    print(f"right after the first pass: {facts['tables_never_analyzed']} tables never analyzed, "
          f"BM25 plan estimated at {facts['bm25_estimated_cost']:,.0f} (jit_above_cost 100,000)")  # fmt: skip
    print(f"{len(asked)} queries × {args.rounds} rounds through /api/search, "
          f"{'keywords only' if args.lexical_only else 'the default model on'}")  # fmt: skip
    print(f"  SQLite server          p50 {pct(baseline, 50):7.1f} ms   p95 {pct(baseline, 95):7.1f} ms")
    print(f"  PostgreSQL reader      p50 {pct(reader, 50):7.1f} ms   p95 {pct(reader, 95):7.1f} ms")
    print(
        f"  reader / SQLite at p50: {ratio:.2f}×  (target ≤ {TARGET:g}×: {'met' if ratio <= TARGET else 'NOT met'})"
    )
    print(f"  mean {statistics.mean(reader):.1f} ms against {statistics.mean(baseline):.1f} ms")


if __name__ == "__main__":
    main()
