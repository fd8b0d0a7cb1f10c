"""Filtered search at 10,000 and 100,000 files: each filter's latency as a ratio to unfiltered search
in the same run, and whether a narrow filter still fills a page with hits that all pass it.

    python benchmarks/filtered.py                          # 10,000 files, default configuration
    python benchmarks/filtered.py --files 10000 100000     # both sizes, one after the other
    python benchmarks/filtered.py --files 100000 --lexical-only
    python benchmarks/filtered.py --files 100000 --keep-index   # the searches again, on the last index

The requirement measured: a filter applies inside both legs (the lexical SQL and the dense leg's
allowed rows), so a filter passing 1 % of the documents still returns a full page when that many
documents exist, and at 100,000 files filtered p50 stays within 1.5× of unfiltered p50.

The tree is ``benchmarks/scale.py``'s (the BEIR SciFact and JSQuAD collections from
``KBSEEK_DATASETS`` as Markdown, written again under ``copy-NN/`` folders, at most 500 files a
folder, until it holds ``--files`` files), with front matter on every file::

    ---
    date: 2024-05-17      # spread evenly over 2023-01-01 … 2025-12-31 by a hash of copy, collection, id
    bucket: 37            # another hash of the same, mod 100
    ---

and the bucket repeated in the file name (``<id>-b37.md``), so a path glob can select the same
share of documents as a field does. Copies are otherwise exact: the front matter is not part of a
chunk's text and every document keeps its H1 title, so each distinct chunk is still embedded once.
Trees (with ``manifest.json``: each path's bucket and date) and indexes live under
``benchmarks/.work/filtered``.

For each size, through the installed ``kbseek`` command as a user runs it: ``kbseek index`` from
nothing (timed), then ``kbseek serve`` on stdio JSON-RPC; once its catch-up pass is done, the first
100 SciFact claims as ``search`` calls (``limit`` 5), each query unfiltered and with each filter, in
two measured rounds after one warm-up round:

- **the same filter for every query** (an agent narrowing several searches alike; the server may
  keep what it read for a filter, so this is the cost once a filter has been seen):
  ``where={"bucket": [0]}``: 1 % of the documents; ``[0..9]``: 10 %; ``[0..49]``: 50 %;
  ``after`` a day chosen so that about 10 % of the documents are on or after it;
  ``path_globs=["*-b0?.md"]``: the same 10 % as buckets 0-9, read from the path (a regular
  expression per path, where the field is an indexed lookup);
- **a different filter for each query**, of the same selectivity (buckets ``[i+1]``,
  ``[i+1..i+10]``, ``[i+1..i+50]`` mod 100; a 110-day ``after``…``before`` window starting 9 days
  later each query; ``*-bN?.md`` with N = i+1 mod 10): nothing kept from an earlier search applies,
  so this is what a filter costs the first time.

Within a round each query runs every variant back to back, starting from a different one each
query, so machine noise reaches all variants alike; each filtered p50/p95 is printed with its ratio
to the unfiltered p50/p95 of the same round.

Exactness, in both measured rounds: each hit's document is looked up in the manifest and must pass
that query's filter ("violating"); "full pages" counts the searches that returned the 5 hits asked
for (every filter here passes about 100 documents or more, so a full page always exists; the dense
leg answers every query). "docs passing" is counted from the manifest for the first query's filter.

Design notes. ``after`` is a fixed day, not an age such as ``1y``: the dates are fixed, and an age
would select a different share as the calendar moves. The bucket is in the file name so that a glob
and a field select the same documents and can be compared. At 10,000 files the dense leg is exact
(about 14,000 chunk vectors); at 100,000 (about 140,000) it is the approximate index
(``[index].approximate_above``), where a filter passing up to ``search.ann.EXACT_FILTER_MAX`` chunks
is scanned and a wider one oversamples the graph, so the two sizes exercise both filtered paths.

Finally, with the server stopped, ``Store.filtered_rowids`` (the chunks a filter passes: the dense
leg's allowed rows) is timed alone for each repeated filter, as a first call on a store just opened:
the part of a filtered search's cost that grows with the share of documents passing.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK, Collection, load
from kbseek.filters import parse_filters
from kbseek.ingest.parsers import AVAILABLE_PARSERS
from kbseek.store.sqlite.store import SqliteStore
from processes import kbseek_script, run_child
from scale import PER_FOLDER, QUERIES, Server, ms, wait_ready

FILTERED = WORK / "filtered"
LIMIT = 5
FIRST_DAY = date(2023, 1, 1)
DAYS = 1096  # 2023-01-01 … 2025-12-31
RECENT_DAYS = 110  # the last 110 of 1,096 days: about 10 % of the documents
AFTER = (FIRST_DAY + timedelta(days=DAYS - RECENT_DAYS)).isoformat()
BUCKET_IN_NAME = re.compile(r"-b(\d\d)\.md$")

Manifest = dict[str, tuple[int, str]]
"""Root-relative path → (bucket, date as YYYY-MM-DD)."""


def _hash(text: str, salt: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{salt}:{text}".encode(), digest_size=8).digest(), "big")


# -- the tree --------------------------------------------------------------------------------------


def build_tree(collections: list[Collection], files: int) -> tuple[Path, Manifest]:
    """``files`` Markdown files with a date and a bucket each; reused when already built."""
    base = FILTERED / str(files)
    root, marker, manifest_path = base / "kb", base / ".tree-complete", base / "manifest.json"
    if marker.exists():
        stored = json.loads(manifest_path.read_text(encoding="utf-8"))
        return root, {path: (int(b), str(d)) for path, (b, d) in stored.items()}
    shutil.rmtree(base, ignore_errors=True)
    pages = [(c.name, did, title, text) for c in collections for did, (title, text) in c.corpus.items()]
    manifest: Manifest = {}
    written = 0
    copy = 0
    while written < files:
        for name, did, title, text in pages:
            if written == files:
                break
            key = f"copy-{copy:02d}/{name}/{did}"
            bucket = _hash(key, "bucket") % 100
            day = (FIRST_DAY + timedelta(days=_hash(key, "date") % DAYS)).isoformat()
            folder = f"copy-{copy:02d}/{name}/part-{written // PER_FOLDER:04d}"
            (root / folder).mkdir(parents=True, exist_ok=True)
            relative = f"{folder}/{did.replace('/', '_')}-b{bucket:02d}.md"
            page = f"---\ndate: {day}\nbucket: {bucket}\n---\n\n# {title}\n\n{text}\n"
            (root / relative).write_text(page, encoding="utf-8")
            manifest[relative] = (bucket, day)
            written += 1
        copy += 1
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    marker.write_text("", encoding="utf-8")
    return root, manifest


# -- the variants ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way of calling ``search``: its extra arguments for the i-th query, and whether a document
    (bucket, date) passes them."""

    name: str
    arguments: Callable[[int], dict[str, Any]]
    passes: Callable[[int, int, str], bool]


@functools.cache
def _buckets(first: int, n: int) -> list[int]:
    return [(first + k) % 100 for k in range(n)]


def _window(i: int) -> tuple[str, str]:
    """The i-th 110-day window (about 10 % of the documents), 9 days after the one before."""
    start = FIRST_DAY + timedelta(days=9 * i)
    return start.isoformat(), (start + timedelta(days=RECENT_DAYS - 1)).isoformat()


def unfiltered() -> Variant:
    return Variant("unfiltered", lambda i: {}, lambda i, b, d: True)


def repeated() -> list[Variant]:
    """The same filter for every query (an agent narrowing several searches alike)."""
    return [
        unfiltered(),
        Variant("where bucket 1 %", lambda i: {"where": {"bucket": [0]}}, lambda i, b, d: b == 0),
        Variant(
            "where bucket 10 %", lambda i: {"where": {"bucket": _buckets(0, 10)}}, lambda i, b, d: b < 10
        ),
        Variant(
            "where bucket 50 %", lambda i: {"where": {"bucket": _buckets(0, 50)}}, lambda i, b, d: b < 50
        ),
        Variant(f"after {AFTER} ~10 %", lambda i: {"after": AFTER}, lambda i, b, d: d >= AFTER),
        Variant("path_globs *-b0?.md 10 %", lambda i: {"path_globs": ["*-b0?.md"]}, lambda i, b, d: b < 10),
    ]


def fresh() -> list[Variant]:
    """A filter of the same selectivity but different for each query (and from the repeated ones):
    nothing the server may have kept from an earlier search with the same filter applies."""
    return [
        unfiltered(),
        Variant(
            "where bucket 1 %", lambda i: {"where": {"bucket": _buckets(i + 1, 1)}},
            lambda i, b, d: b in _buckets(i + 1, 1),
        ),
        Variant(
            "where bucket 10 %", lambda i: {"where": {"bucket": _buckets(i + 1, 10)}},
            lambda i, b, d: b in _buckets(i + 1, 10),
        ),
        Variant(
            "where bucket 50 %", lambda i: {"where": {"bucket": _buckets(i + 1, 50)}},
            lambda i, b, d: b in _buckets(i + 1, 50),
        ),
        Variant(
            "after…before ~10 %", lambda i: dict(zip(("after", "before"), _window(i), strict=True)),
            lambda i, b, d: _window(i)[0] <= d <= _window(i)[1],
        ),
        Variant(
            "path_globs *-bN?.md 10 %", lambda i: {"path_globs": [f"*-b{(i + 1) % 10}?.md"]},
            lambda i, b, d: b // 10 == (i + 1) % 10,
        ),
    ]  # fmt: skip


@dataclass
class Tally:
    times: list[float] = field(default_factory=list)
    full_pages: int = 0
    hits: int = 0
    violations: int = 0
    unknown_paths: int = 0
    semantic_ok: int = 0
    examples: list[str] = field(default_factory=list)


def check(
    answer: dict[str, Any], passes: Callable[[int, str], bool], manifest: Manifest, tally: Tally
) -> None:
    """Every hit must pass the filter (by the manifest and by the bucket in its file name)."""
    hits = answer["hits"]
    tally.hits += len(hits)
    tally.full_pages += len(hits) == LIMIT
    tally.semantic_ok += answer["legs"]["semantic"] == "ok"
    for hit in hits:
        path = hit["path"]
        entry = manifest.get(path)
        named = BUCKET_IN_NAME.search(path)
        if entry is None or named is None or int(named.group(1)) != entry[0]:
            tally.unknown_paths += 1
            continue
        if not passes(*entry):
            tally.violations += 1
            if len(tally.examples) < 3:
                tally.examples.append(f"{path} (bucket {entry[0]}, {entry[1]})")


def measured_round(
    server: Server, queries: list[str], chosen: list[Variant], manifest: Manifest | None
) -> dict[str, Tally]:
    """Each query with every variant back to back, from a different variant each query; checked
    against ``manifest`` when one is given (the warm-up round is not)."""
    tallies = {v.name: Tally() for v in chosen}
    for i, query in enumerate(queries):
        for k in range(len(chosen)):
            variant = chosen[(i + k) % len(chosen)]
            call = {"query": query, "limit": LIMIT, **variant.arguments(i)}
            started = time.perf_counter()
            answer = server.tool("search", call)
            elapsed = time.perf_counter() - started
            if manifest is None:
                continue
            tally = tallies[variant.name]
            tally.times.append(elapsed)
            check(answer, functools.partial(variant.passes, i), manifest, tally)
    return tallies


# -- the allowed-row query alone -------------------------------------------------------------------


def allowed_rows_times(index: Path, chosen: list[Variant], repeat: int = 5) -> dict[str, tuple[float, int]]:
    """p50 ms of a first ``SqliteStore.filtered_rowids`` per filter (on a store just opened, so
    nothing is kept from an earlier call), and the chunk rows it returns."""
    out: dict[str, tuple[float, int]] = {}
    for variant in chosen:
        arguments = variant.arguments(0)
        if not arguments:
            continue
        filters = parse_filters(known_types=AVAILABLE_PARSERS, **arguments)
        times, rows = [], 0
        for _ in range(repeat + 1):
            store = SqliteStore(index, create=False)
            try:
                store.counts()  # the connection opened and the schema read before the clock starts
                started = time.perf_counter()
                rows = len(store.filtered_rowids(filters) or ())
                times.append(time.perf_counter() - started)
            finally:
                store.close()
        out[variant.name] = (ms(times[1:])[0], rows)
    return out


def chunk_count(index: Path) -> int:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    finally:
        conn.close()


def table(
    title: str,
    chosen: list[Variant],
    tallies: dict[str, Tally],
    manifest: Manifest,
    total_chunks: int,
    allowed: dict[str, tuple[float, int]] | None,
) -> None:
    base50, base95 = ms(tallies["unfiltered"].times)
    print(f"\n{title}\n")
    extra = f" {'allowed rows':>12} | {'rows SQL p50':>12} |" if allowed is not None else ""
    print(
        f"| {'variant':<26} | {'docs passing':>14} | {'p50 ms':>7} | {'p95 ms':>7} | {'p50 ratio':>9} "
        f"| {'p95 ratio':>9} | {'full pages':>10} | {'violating':>9} |{extra}"
    )
    rule = f"|{'-' * 28}|{'-' * 16}|{'-' * 9}|{'-' * 9}|{'-' * 11}|{'-' * 11}|{'-' * 12}|{'-' * 11}|"
    print(rule + (f"{'-' * 14}|{'-' * 14}|" if allowed is not None else ""))
    for variant in chosen:
        tally = tallies[variant.name]
        p50, p95 = ms(tally.times)
        passing = sum(variant.passes(0, b, d) for b, d in manifest.values())  # the first query's filter
        row = (
            f"| {variant.name:<26} | {passing:>7,} {passing / len(manifest):6.1%} | {p50:7.1f} | {p95:7.1f} "
            f"| {p50 / base50:8.2f}× | {p95 / base95:8.2f}× | {tally.full_pages:>6}/{len(tally.times):<3} "
            f"| {tally.violations:>9} |"
        )
        if allowed is not None:
            rows_ms, rows = allowed.get(variant.name, (0.0, total_chunks))
            rows_sql = f"{rows_ms:9.1f} ms" if variant.arguments(0) else f"{'-':>12}"
            row += f" {rows:>12,} | {rows_sql} |"
        print(row)
    for variant in chosen:
        tally = tallies[variant.name]
        notes = []
        if tally.semantic_ok != len(tally.times):
            notes.append(f"dense leg ok in {tally.semantic_ok}/{len(tally.times)} answers")
        if tally.unknown_paths:
            notes.append(f"{tally.unknown_paths} hits on paths the tree does not hold")
        if tally.examples:
            notes.append("violations e.g. " + "; ".join(tally.examples))
        if notes:
            print(f"  {variant.name}: {', '.join(notes)}")
    narrow = tallies["where bucket 1 %"]
    worst = max((ms(tallies[v.name].times)[0] / base50, v.name) for v in chosen if v.arguments(0))
    print(
        f"\n1 % filter: full pages {narrow.full_pages}/{len(narrow.times)}; hits violating the filter: "
        f"{narrow.violations} (of {narrow.hits}). Largest filtered/unfiltered p50: {worst[0]:.2f}× ({worst[1]})",
        flush=True,
    )


# -- one size --------------------------------------------------------------------------------------


def run_size(collections: list[Collection], files: int, args: argparse.Namespace) -> None:
    semantic = not args.lexical_only
    print(
        f"\n## {files:,} files ({'default: hybrid' if semantic else 'lexical only'}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
        flush=True,
    )
    started = time.perf_counter()
    root, manifest = build_tree(collections, files)
    print(f"tree                      {time.perf_counter() - started:8.1f} s   ({len(manifest):,} files)")
    index_dir = root.parent / ("index" if semantic else "index-lexical")
    built = root.parent / f".{index_dir.name}-complete"
    reused = args.keep_index and built.exists()
    if reused:
        print(f"index                     reused from an earlier run ({index_dir})", flush=True)
    else:
        built.unlink(missing_ok=True)
        shutil.rmtree(index_dir, ignore_errors=True)
    common = ["--kb", str(root), "--index-dir", str(index_dir)] + ([] if semantic else ["--lexical-only"])

    if not reused:
        took, rss, out = run_child([kbseek_script(), "index", *common, "--json"])
        summary = json.loads(out)
        print(
            f"index from nothing        {took:8.1f} s   peak RSS {rss:6.0f} MiB   "
            f"({summary['chunks_written']} chunks written, {summary['chunks_embedded']} embedded)",
            flush=True,
        )
        built.write_text("", encoding="utf-8")

    queries = list(load("scifact", "train").queries.values())[:QUERIES]
    same, other = repeated(), fresh()
    server = Server([kbseek_script(), "serve", *common], root.parent / "serve.stderr")
    try:
        started = time.perf_counter()
        status = wait_ready(server, semantic)
        print(
            f"serve ready after         {time.perf_counter() - started:8.1f} s   "
            f"({status['documents']:,} documents, {status['chunks']:,} chunks; {status['freshness']})",
            flush=True,
        )
        rounds: list[dict[str, Tally]] = []
        for label, chosen, checked in (
            ("warm-up round", same, None),
            ("same filter each query", same, manifest),
            ("new filter each query", other, manifest),
        ):
            started = time.perf_counter()
            rounds.append(measured_round(server, queries, chosen, checked))
            print(
                f"{label:<25} {time.perf_counter() - started:8.1f} s   "
                f"({len(queries)} queries × {len(chosen)} variants)",
                flush=True,
            )
        rss_mib = server.rss_mib()
    finally:
        server.close()
    print(f"serve RSS                 {rss_mib:8.0f} MiB")

    index = index_dir / "index.sqlite"
    allowed = allowed_rows_times(index, same)
    total_chunks = chunk_count(index)
    common_title = (
        f"search over MCP, limit {LIMIT}, {len(queries)} queries; ratios to unfiltered in the same round"
    )
    table(
        f"### The same filter for every query ({common_title}). Allowed rows: the chunks the filter "
        "passes; rows SQL: a first filtered_rowids on a store just opened",
        same, rounds[1], manifest, total_chunks, allowed,
    )  # fmt: skip
    table(
        f"### A different filter for each query, of the same selectivity ({common_title})",
        other, rounds[2], manifest, total_chunks, None,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, nargs="+", default=[10_000])
    parser.add_argument("--lexical-only", action="store_true", help="keyword search only (no model)")
    parser.add_argument(
        "--keep-index",
        action="store_true",
        help="reuse the index an earlier run of the same size built (to measure the searches again after a "
        "code change; the server still catches up with the files first)",
    )
    args = parser.parse_args()
    print(f"$ {shlex.join([Path(sys.executable).name, *sys.argv])}", flush=True)
    collections = [load("scifact", "train"), load("jsquad-ir", "valid")]
    for files in args.files:
        run_size(collections, files, args)


if __name__ == "__main__":
    main()
