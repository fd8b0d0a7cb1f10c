"""``[index].date_fields`` decides each document's date, and a change to it re-dates every document.

The fields are read when a file is parsed, and an unchanged file is not parsed again; so the list the
documents were dated with is recorded with the pass, and another list has every file read once more
(its vectors kept: the text did not change).
"""

from __future__ import annotations

from pathlib import Path

from kbseek import KnowledgeBase, Settings
from tests.fakes import FakeEmbedder

NOTE = "---\ndate: 2020-01-01\nupdated: 2026-06-30\n---\n# Note\n\nbody text\n"


def open_kb(root: Path, fields: tuple[str, ...] | None = None) -> KnowledgeBase:
    settings = Settings(root=root, **({"date_fields": fields} if fields else {}))
    return KnowledgeBase(settings=settings, embedder=FakeEmbedder())


def test_the_configured_fields_date_documents_and_a_change_re_dates_them(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text(NOTE, encoding="utf-8")
    with open_kb(tmp_path) as kb:
        kb.index()
        assert kb.read_document("note.md").date == "2020-01-01"
        assert kb.read_document("note.md").date_source == "frontmatter:date"
    with open_kb(tmp_path, ("updated", "date")) as kb:
        report = kb.index()
        assert report.updated == ["note.md"] and report.chunks_embedded == 0  # read again, vectors kept
        document = kb.read_document("note.md")
        assert (document.date, document.date_source) == ("2026-06-30", "frontmatter:updated")
    with open_kb(tmp_path, ("updated", "date")) as kb:
        assert kb.index().updated == []  # the same list: nothing to read again
