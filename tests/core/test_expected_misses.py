"""Expected misses are answers: an empty result explains itself (T4), a stale id says so (T5).

The finished cases ("no chunk matched" with counts, "the index is empty") and the stale id of an
edited document are pinned over the wire in test_tools.py. Here: a search made while a pass runs
(from inside the pass's own progress callback, so nothing is timed), and the id of a document
that is gone.
"""

from __future__ import annotations

from pathlib import Path

from kbseek.responses import SearchResponse
from tests.conftest import make_core


def test_a_search_during_the_first_pass_says_nothing_is_indexed_yet(kb_root: Path) -> None:
    c = make_core(kb_root)
    seen: list[SearchResponse] = []
    try:
        c.index(progress=lambda _snap: seen.append(c.search("xylophone")) if not seen else None)
        during = seen[0]
        assert during.hits == [] and during.index.indexing and during.index.documents == 0
        assert during.note_codes[-1] == "empty"
        assert "nothing is indexed yet" in during.notes[-1] and "still running" in during.notes[-1]
        after = c.search("xylophone")
        assert not after.index.indexing and "no chunk matched" in after.notes[-1]
    finally:
        c.close()


def test_a_miss_during_a_later_pass_says_results_may_be_incomplete(kb_root: Path) -> None:
    c = make_core(kb_root)
    seen: list[SearchResponse] = []
    try:
        c.index()
        (kb_root / "notes" / "new.md").write_text("# New\n\nfresh words\n", encoding="utf-8")
        c.index(progress=lambda _snap: seen.append(c.search("xylophone")) if not seen else None)
        note = seen[0].notes[-1]
        assert "no chunk matched" in note and "4 documents" in note
        assert "indexing is still running, results may be incomplete" in note
    finally:
        c.close()


def test_the_ids_of_a_removed_document_are_stale_and_name_it(kb_root: Path) -> None:
    c = make_core(kb_root)
    try:
        c.index()
        old = c.search("nightly snapshots").hits[0].chunk_id
        (kb_root / "runbooks" / "database" / "backup.md").unlink()
        fetched = c.fetch([old])
        assert fetched.passages == []
        (missing,) = fetched.missing
        assert (missing.status, missing.path) == ("stale", "runbooks/database/backup.md")
        assert "was removed or renamed" in missing.message and "search again" in missing.message
        assert any("search again" in n for n in fetched.notes)
    finally:
        c.close()
