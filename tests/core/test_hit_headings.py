"""A hit names the heading of the section its snippet shows, also when small sections share a chunk.

Small sections are merged into one chunk (``ingest.chunker``), whose heading path is the first
section's. An agent cites the heading a hit gives, so a match in a later section must name that one.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.documents import SectionStart
from kbseek.search.pipeline import heading_at
from kbseek.store.sqlite.schema import SCHEMA_VERSION
from kbseek.text.snippets import Snippet

API_PAGE = """\
# useWidget

Intro: useWidget lets a component subscribe to a widget.

## Parameters

The widget identifier, a string.

## Returns

A snapshot of the widget's current state.

## Caveats

Calling it during rendering of a server component throws a zanzibar error.
"""


def _kb(tmp_path: Path) -> KnowledgeBase:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "api.md").write_text(API_PAGE, encoding="utf-8")
    kb = KnowledgeBase(settings=Settings(root=root, semantic=False, freshness_interval_s=0.0))
    kb.index()
    return kb


def test_a_match_in_a_merged_section_names_that_sections_heading(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    try:
        (hit,) = kb.search("zanzibar error").hits
        assert hit.heading_path == ["useWidget", "Caveats"]
        (first,) = kb.search("subscribe").hits
        assert first.heading_path == ["useWidget"]
        assert first.chunk_id == hit.chunk_id  # one chunk: the sections are small
        passage = kb.fetch([hit.chunk_id]).passages[0]
        assert passage.heading_path == ["useWidget"]  # a passage starts where its chunk starts
    finally:
        kb.close()


def test_an_index_made_before_sections_were_recorded_gains_them_on_the_next_pass(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    kb.close()
    db = tmp_path / "kb" / ".kbseek" / "index.sqlite"
    with closing(sqlite3.connect(db)) as conn, conn:
        # as schema 1 left it: no table for the sections, an older parse (and a row a rebuild would drop)
        conn.execute("DROP TABLE chunk_sections")
        conn.execute("DROP TABLE document_texts")
        conn.execute("DROP TABLE links")
        conn.execute("DROP TABLE document_names")
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
        conn.execute("UPDATE meta SET value='3' WHERE key='parse_version'")
        conn.execute("INSERT INTO meta(key, value) VALUES ('marker', 'kept')")
    kb = KnowledgeBase(settings=Settings(root=tmp_path / "kb", semantic=False, freshness_interval_s=0.0))
    try:
        kb.index()
        (hit,) = kb.search("zanzibar error").hits
        assert hit.heading_path == ["useWidget", "Caveats"]
    finally:
        kb.close()
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        assert conn.execute("SELECT value FROM meta WHERE key='marker'").fetchone() == ("kept",)  # no rebuild


def test_without_a_match_the_snippets_first_character_decides() -> None:
    sections = (SectionStart(40, ("T", "B")), SectionStart(90, ("T", "C")))
    assert heading_at(("T", "A"), sections, Snippet("x", 0, 30, (), 0)) == ("T", "A")
    assert heading_at(("T", "A"), sections, Snippet("x", 45, 80, (), 0)) == ("T", "B")
    assert heading_at(("T", "A"), sections, Snippet("x", 0, 120, (), 1, focus=95)) == ("T", "C")
    assert heading_at(("T", "A"), (), Snippet("x", 45, 80, (), 1, focus=60)) == ("T", "A")
