"""Giant blocks: a multi-megabyte table, code block and single line, next to ordinary notes of the same size.

    python benchmarks/giant_blocks.py                 # 60 x 7,300 table, 1.5 MB code block, 2 MB line
    python benchmarks/giant_blocks.py --rows 3000     # a smaller table
    python benchmarks/giant_blocks.py --searches 50   # searches timed per query

Two knowledge bases are written under ``benchmarks/.work/giant-blocks`` (git-ignored):

- ``giant``: one file per adversarial block, each under the default ``max_file_bytes`` (4 MiB):
  a Markdown table of 60 columns and 7,300 rows (about 3.9 MB), a fenced code block of short
  lines, and a paragraph that is a single line of 2 MB with no line break;
- ``notes``: the baseline, ordinary notes (headings, prose, a small table and a short code block
  each, about 3 KB apiece) until it holds the same number of bytes.

Both are indexed from nothing by the installed ``kbseek index --lexical-only --json``, in a child
process whose peak RSS is read with ``os.wait4``; then a child process opens each knowledge base
(lexical only) and times searches for words that occur once (a table cell, a code identifier, a
word of the long line), printing p50/p95 and that child's peak RSS. Every figure for ``giant`` is
printed next to the same figure for ``notes``, measured in the same run, with their ratio: peak
memory should follow the largest file, not the size of its blocks, and a search should cost about
the same on both.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from processes import kbseek_script, run_child

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "giant-blocks"
WORDS = tuple(
    " ".join(
        [
            "cache deploy rollback latency replica schema migration venue ticket queue worker retry timeout",
            "budget shard index vector token session cookie header request response pool thread lock lease",
            "backup restore failover alert metric dashboard runbook incident review release branch feature",
        ]
    ).split()
)


# -- knowledge bases -----------------------------------------------------------------------------


def cell(row: int, column: int) -> str:
    """A word found in exactly one cell: ``t``, the row in three base-36 digits, the column in two."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    return (
        "t"
        + "".join(digits[row // 36**k % 36] for k in (2, 1, 0))
        + digits[column // 36]
        + digits[column % 36]
    )


def table_note(columns: int, rows: int) -> str:
    header = "| " + " | ".join(f"field{c}" for c in range(columns)) + " |"
    lines = ["# Inventory export", "", header, "|" + "---|" * columns]
    lines.extend("| " + " | ".join(cell(r, c) for c in range(columns)) + " |" for r in range(rows))
    return "\n".join(lines) + "\n"


def code_note(target_bytes: int) -> str:
    lines = ["# Generated client", "", "```python"]
    size, i = 0, 0
    while size < target_bytes:
        line = f"    result_{i:06d} = call_endpoint(session, 'ident{i:06d}', retries={i % 7})"
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join([*lines, "```"]) + "\n"


def line_note(target_bytes: int, rng: random.Random) -> str:
    words: list[str] = []
    size, i = 0, 0
    while size < target_bytes:
        word = f"w{i:06d}" if i % 50 == 0 else rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
        i += 1
    return "# One long line\n\n" + " ".join(words) + "\n"


def ordinary_note(n: int, rng: random.Random) -> str:
    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."

    parts = [f"# Note {n}", ""]
    for s in range(3):
        parts += [f"## Section {s}", "", " ".join(sentence() for _ in range(5)) + f" marker{n:06d}x{s}", ""]
    parts += ["| key | value |", "|---|---|", *(f"| {rng.choice(WORDS)} | {i} |" for i in range(6)), ""]
    parts += ["```sh", f"kbseek search note-{n}", "```", ""]
    return "\n".join(parts)


def write_kbs(columns: int, rows: int, code_bytes: int, line_bytes: int) -> tuple[Path, Path, int]:
    """(giant KB, notes KB, bytes in each)."""
    rng = random.Random(7)
    giant, notes = WORK / "giant", WORK / "notes"
    shutil.rmtree(WORK, ignore_errors=True)
    giant.mkdir(parents=True)
    notes.mkdir(parents=True)
    (giant / "table.md").write_text(table_note(columns, rows), encoding="utf-8")
    (giant / "code.md").write_text(code_note(code_bytes), encoding="utf-8")
    (giant / "line.md").write_text(line_note(line_bytes, rng), encoding="utf-8")
    total = sum(p.stat().st_size for p in giant.iterdir())
    written, n = 0, 0
    while written < total:
        folder = notes / f"f{n // 500:03d}"
        folder.mkdir(exist_ok=True)
        text = ordinary_note(n, rng)
        (folder / f"note-{n:05d}.md").write_text(text, encoding="utf-8")
        written += len(text.encode())
        n += 1
    return giant, notes, total


# -- measuring -----------------------------------------------------------------------------------


def search_child(kb: Path, queries: list[str], searches: int) -> None:
    """In a child process: open the KB lexical-only, time ``searches`` rounds of ``queries``."""
    from kbseek import KnowledgeBase
    from kbseek.config import Settings

    # No stat scan of the tree before each call: the timings are of the search alone.
    c = KnowledgeBase(settings=Settings(root=kb, semantic=False, freshness_interval_s=3600.0))
    try:
        found = {q: bool(c.search(q, limit=5).hits) for q in queries}  # warm, and check they are found
        times: list[float] = []
        for _ in range(searches):
            for q in queries:
                started = time.perf_counter()
                c.search(q, limit=8)
                times.append(time.perf_counter() - started)
    finally:
        c.close()
    cuts = statistics.quantiles(times, n=20)
    print(json.dumps({"p50": statistics.median(times), "p95": cuts[18], "found": found}))


def chunk_sizes(kb: Path) -> tuple[int, int]:
    import sqlite3

    with sqlite3.connect(kb / ".kbseek" / "index.sqlite") as conn:
        count, longest = conn.execute("SELECT count(*), max(length(text)) FROM chunks").fetchone()
    return int(count), int(longest)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=60)
    parser.add_argument("--rows", type=int, default=7_300)
    parser.add_argument("--code-bytes", type=int, default=1_500_000)
    parser.add_argument("--line-bytes", type=int, default=2_000_000)
    parser.add_argument("--searches", type=int, default=20, help="rounds of the queries, timed")
    parser.add_argument("--search-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--queries", nargs="*", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search_child:
        search_child(args.search_child, args.queries, args.searches)
        return

    giant, notes, total = write_kbs(args.columns, args.rows, args.code_bytes, args.line_bytes)
    sizes = {p.name: p.stat().st_size for p in giant.iterdir()}
    print(f"giant: {', '.join(f'{n} {s / 1e6:.2f} MB' for n, s in sorted(sizes.items()))}")
    print(f"notes: {sum(1 for _ in notes.rglob('*.md'))} ordinary notes, {total / 1e6:.2f} MB in all\n")

    row = args.rows * 2 // 3
    queries = {
        giant: [cell(row, 17), "ident012345", "w001000"],
        notes: ["marker000123x1", "marker000777x2", "marker001000x0"],
    }
    results: dict[Path, dict[str, float]] = {}
    for kb in (notes, giant):
        took, rss, out = run_child([kbseek_script(), "index", "--kb", str(kb), "--lexical-only", "--json"])
        summary = json.loads(out)
        count, longest = chunk_sizes(kb)
        _, search_rss, out = run_child(
            [sys.executable, __file__, "--search-child", str(kb), "--searches", str(args.searches),
             "--queries", *queries[kb]]
        )  # fmt: skip
        searched = json.loads(out)
        if not all(searched["found"].values()):
            raise SystemExit(f"a query found nothing in {kb.name}: {searched['found']}")
        results[kb] = {
            "index_s": took, "index_rss": rss, "chunks": count, "longest": longest,
            "p50_ms": searched["p50"] * 1000, "p95_ms": searched["p95"] * 1000, "search_rss": search_rss,
        }  # fmt: skip
        if summary.get("skipped"):
            raise SystemExit(f"{kb.name}: files were skipped: {summary['skipped']}")

    base, big = results[notes], results[giant]
    print(f"{'':28}{'giant blocks':>14}{'ordinary notes':>16}{'ratio':>8}")
    for key, label, unit in [
        ("index_rss", "index: peak RSS", "MiB"),
        ("index_s", "index: wall time", "s"),
        ("chunks", "chunks", ""),
        ("longest", "longest chunk (chars)", ""),
        ("p50_ms", "search p50", "ms"),
        ("p95_ms", "search p95", "ms"),
        ("search_rss", "search process peak RSS", "MiB"),
    ]:
        ratio = big[key] / base[key] if base[key] else float("nan")
        name = f"{label} ({unit})" if unit else label
        print(f"{name:28}{big[key]:>14.1f}{base[key]:>16.1f}{ratio:>7.2f}x")


if __name__ == "__main__":
    main()
