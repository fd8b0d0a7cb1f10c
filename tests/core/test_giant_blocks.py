"""A giant table becomes chunks no longer than ``max_chars``, and its cells stay findable.

A 3.8 MB Markdown table (60 columns, 7,300 rows) used to be one chunk of millions of characters:
indexing it took hundreds of megabytes and every search of the knowledge base that touched it took
seconds. Now it is split by rows, and the pieces that do not begin with the header row carry it in
their heading path, as context that is indexed with the rows.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from markdown_it import MarkdownIt

from kbseek.ingest.chunker import ChunkOptions, table_context
from kbseek.ingest.parsers.markdown import MarkdownParser
from tests.conftest import make_core

COLUMNS, ROWS = 60, 7_300
NEEDLE_ROW, NEEDLE_COLUMN = 6_123, 42


def cell(row: int, column: int) -> str:
    """A word found in exactly one cell: ``x``, the row in three base-36 digits, the column in two."""
    return "x" + _base36(row, 3) + _base36(column, 2)


def _base36(n: int, width: int) -> str:
    digits = ""
    for _ in range(width):
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
    return digits


def giant_table(columns: int = COLUMNS, rows: int = ROWS) -> tuple[str, str]:
    """The table's Markdown (about 3.9 MB at the default size) and its header row."""
    header = "| " + " | ".join(f"field{c}" for c in range(columns)) + " |"
    lines = [header, "|" + "---|" * columns]
    lines.extend("| " + " | ".join(cell(r, c) for c in range(columns)) + " |" for r in range(rows))
    return "\n".join(lines) + "\n", header


def test_a_giant_table_is_indexed_in_chunks_within_the_cap_and_its_cells_are_found(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    table, header = giant_table()
    source = "# Inventory export\n\n## Items\n\n" + table
    assert len(source.encode()) > 3_500_000
    (root / "inventory.md").write_text(source, encoding="utf-8")
    options = ChunkOptions()
    context = table_context(header, options.max_chars // 2)
    c = make_core(root, chunking=options)
    try:
        report = c.index()
        assert not report.skipped and report.chunks_written > 0
        with sqlite3.connect(c.store.path) as conn:
            rows = conn.execute(
                "SELECT start, end, heading_path, text FROM chunks ORDER BY ordinal"
            ).fetchall()
        assert len(rows) > ROWS // 3
        position = 0
        for start, end, heading_path, text in rows:
            path = json.loads(heading_path)
            assert text == source[start:end] and start >= position
            position = start
            assert len(text) <= options.max_chars
            if path[-1] == context:  # a piece of rows: its span plus the header it carries fit the cap
                assert path == ["Inventory export", "Items", context]
                assert len(text) + len(context) <= options.max_chars
                # whole rows (the first piece may begin at the delimiter row, as overlap)
                assert text.startswith(("| x", "|---")) and text.endswith("|")
            else:
                assert header in text  # the first piece, which holds the header row itself
        assert rows[-1][1] == len(source.rstrip())  # the last row is indexed too

        needle = cell(NEEDLE_ROW, NEEDLE_COLUMN)
        hits = c.search(needle, limit=3).hits
        assert hits and needle in c.fetch([hits[0].chunk_id], context=0).passages[0].text
        assert hits[0].heading_path == ["Inventory export", "Items", context]
    finally:
        c.close()


TABLES = [
    "| a | b |\n|---|---|\n| 1 | 2 |\n\nafter",
    "| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |\nplain line ends nothing\n# heading ends it",
    "a | b\n--- | ---\n1 | 2\n> quote ends it",
    "| a \\| b | c |\n|---|---|\n| \\| | x |\n    | indented code ends it |",
    "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n- next item",
    "> | a |\n> |---|\n> | 1 |\n> | 2 |\n\n| not | a table |",
    "| a |\n|---|\n|\n||\n| |",
]


def test_the_parser_finds_tables_where_markdown_it_does_without_making_a_token_per_cell() -> None:
    full = MarkdownIt("commonmark").enable("table")
    parser = MarkdownParser()
    for source in TABLES:
        expected = [(t.type, t.map, t.level) for t in full.parse(source) if t.type == "table_open"]
        found = [(t.type, t.map, t.level) for t in parser._md.parse(source) if t.type == "table_open"]
        assert found == expected, source
    table, _ = giant_table(columns=60, rows=500)
    assert len(parser._md.parse(table)) == 2  # table_open and table_close, not 90,000 cell tokens
