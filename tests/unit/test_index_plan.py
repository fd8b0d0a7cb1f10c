"""The plan of a pass (T10) can be looked at on its own, and looking at it writes nothing.

The folder is indexed once, then changed in every way a pass has to tell apart: a file added, one
edited, one renamed, one deleted, one left alone. The plan sorts them by ``stat`` and the store's
records; applying it turns them into the report's lists.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek.config import Settings
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.indexer import Indexer
from kbseek.ingest.parsers import Registry
from kbseek.store.sqlite.store import SqliteStore

RENAMED = "# Renamed\n\nA note that moves to another name.\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "keep.md").write_text("# Keep\n\nAn ordinary note about ginger tea.\n", encoding="utf-8")
    (kb / "edit.md").write_text("# Edit\n\nA note about to be edited.\n", encoding="utf-8")
    (kb / "old-name.md").write_text(RENAMED, encoding="utf-8")
    (kb / "gone.md").write_text("# Gone\n\nA note about to be deleted.\n", encoding="utf-8")
    return kb


@pytest.fixture
def database(tmp_path: Path) -> Path:
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    return index_dir / "index.sqlite"


@pytest.fixture
def indexer(root: Path, database: Path) -> Iterator[Indexer]:
    """An indexer over ``root`` whose first pass has run, with the folder then changed."""
    settings = Settings(root=root, semantic=False)
    store = SqliteStore(database)
    indexer = Indexer(
        root, store, Registry(settings.parsers), Exclusion(root, settings.exclude_dirs, database.parent),
        chunking=settings.chunking, max_file_bytes=settings.max_file_bytes,
        embed_batch=settings.embed.batch_size,
    )  # fmt: skip
    indexer.run()
    (root / "new.md").write_text("# New\n\nA note written after the first pass.\n", encoding="utf-8")
    edited = root / "edit.md"
    edited.write_text("# Edit\n\nA note that was edited, and is longer now.\n", encoding="utf-8")
    st = edited.stat()
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    (root / "old-name.md").rename(root / "new-name.md")
    (root / "gone.md").unlink()
    yield indexer
    store.close()


def dump(database: Path) -> list[str]:
    """Every row of the index, through a connection of its own."""
    conn = sqlite3.connect(database)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_the_plan_sorts_the_folder_against_the_index(indexer: Indexer) -> None:
    plan = indexer.plan(indexer.quick_scan())
    assert plan.unchanged == ("keep.md",)
    assert sorted(plan.new) == ["new-name.md", "new.md"]
    assert plan.changed == ("edit.md",)
    assert sorted(plan.removed) == ["gone.md", "old-name.md"]
    assert not plan.reparse and plan.scope is None and plan.skipped == ()


def test_a_rename_is_planned_as_a_removed_document_a_new_file_can_match_by_hash(indexer: Indexer) -> None:
    plan = indexer.plan(indexer.quick_scan())
    digest = hashlib.sha256(RENAMED.encode("utf-8")).hexdigest()
    assert plan.rename_sources[digest].path == "old-name.md"
    assert "new-name.md" in plan.new


def test_applying_the_plan_gives_the_report_a_pass_would(indexer: Indexer) -> None:
    report = indexer.apply(indexer.plan(indexer.quick_scan()))
    assert report.added == ["new.md"]
    assert report.updated == ["edit.md"]
    assert report.renamed == [("old-name.md", "new-name.md")]
    assert report.deleted == ["gone.md"]
    assert report.unchanged == 1
    assert {d.path for d in indexer.store.documents()} == {"keep.md", "edit.md", "new-name.md", "new.md"}
    assert indexer.plan(indexer.quick_scan()).to_read == ()


def test_planning_writes_nothing(indexer: Indexer, database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = dump(database)

    def no_transaction() -> None:
        raise AssertionError("planning opened a store transaction")

    monkeypatch.setattr(indexer.store, "transaction", no_transaction)
    plan = indexer.plan(indexer.quick_scan())
    assert plan.to_read
    assert dump(database) == before


def test_the_tally_of_a_pass_is_copied_into_its_report_field_for_field() -> None:
    """``_Tally.frozen`` copies every count by name: a count added to the tally and not to the
    report would fail here, not silently vanish from ``index --json``."""
    from dataclasses import fields

    from kbseek.ingest.indexer import IndexReport, _Tally

    tally = _Tally(added=["a.md"], unchanged=3, chunks_written=2, chunks_embedded=1, switched=True)
    assert {f.name for f in fields(_Tally)} <= set(IndexReport.model_fields)
    report = tally.frozen(seconds=1.5)
    assert report.added == ["a.md"] and report.unchanged == 3 and report.chunks_embedded == 1
    assert report.switched and report.seconds == 1.5
