"""Indexing reads files through the guard's reader (D5, T9): what a read refuses is never indexed.

The scan already skips links and oversize files by ``stat``; these tests also change a file between
the scan and the read, the window only the reader's checks on the open descriptor can close.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbseek.config import Settings
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.indexer import Indexer, IndexReport
from kbseek.ingest.parsers import Registry
from kbseek.store.sqlite.store import SqliteStore

CAP = 4000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "keep.md").write_text("# Keep\n\nAn ordinary note about ginger tea.\n", encoding="utf-8")
    (kb / "target.md").write_text("# Target\n\nA note that is about to change.\n", encoding="utf-8")
    return kb


@pytest.fixture
def indexer(root: Path, tmp_path: Path) -> Iterator[Indexer]:
    settings = Settings(root=root, semantic=False, max_file_bytes=CAP)
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    store = SqliteStore(index_dir / "index.sqlite")
    yield Indexer(
        root, store, Registry(settings.parsers), Exclusion(root, settings.exclude_dirs, index_dir),
        chunking=settings.chunking, max_file_bytes=settings.max_file_bytes,
        embed_batch=settings.embed.batch_size,
    )  # fmt: skip
    store.close()


def indexed(indexer: Indexer) -> set[str]:
    return {d.path for d in indexer.store.documents()}


def reason(report: IndexReport, path: str) -> str:
    reasons = dict(report.skipped)
    assert path in reasons, f"{path} is not listed as skipped: {report.skipped}"
    return reasons[path]


def hard_link(root: Path) -> None:
    os.link(root / "target.md", root / "twin.txt")


def oversize(root: Path) -> None:
    (root / "target.md").write_bytes(b"# Target\n\n" + b"x" * CAP)


def symlink(root: Path) -> None:
    (root / "target.md").unlink()
    (root / "target.md").symlink_to(root / "keep.md")


@pytest.mark.parametrize(
    ("change", "expected"),
    [(hard_link, "hard link"), (oversize, "max_file_bytes")],
    ids=["hard-linked", "over-the-cap"],
)
def test_a_refused_file_is_skipped_with_its_reason(
    indexer: Indexer, root: Path, change: Callable[[Path], None], expected: str
) -> None:
    change(root)
    report = indexer.run()
    assert expected in reason(report, "target.md")
    assert indexed(indexer) == {"keep.md"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [(hard_link, "hard link"), (oversize, "max_file_bytes"), (symlink, "symlink")],
    ids=["hard-linked", "over-the-cap", "symlink"],
)
def test_a_file_changed_between_scan_and_read_is_refused_by_the_reader(
    indexer: Indexer, root: Path, change: Callable[[Path], None], expected: str
) -> None:
    scanned = indexer.quick_scan()
    assert "target.md" in scanned.files
    change(root)
    report = indexer.run(scanned=scanned)
    assert expected in reason(report, "target.md")
    assert "target.md" not in indexed(indexer) and "keep.md" in indexed(indexer)


def test_an_indexed_file_refused_on_a_later_read_leaves_the_index(indexer: Indexer, root: Path) -> None:
    """Stale text must not stay searchable once the file can no longer be read."""
    indexer.run()
    assert indexed(indexer) == {"keep.md", "target.md"}
    (root / "target.md").write_text("# Target\n\nChanged, then hard-linked.\n", encoding="utf-8")
    scanned = indexer.quick_scan()
    hard_link(root)
    report = indexer.run(scanned=scanned)
    assert "hard link" in reason(report, "target.md")
    assert report.deleted == ["target.md"] and indexed(indexer) == {"keep.md"}


def test_a_file_swapped_for_a_symlink_as_it_is_opened_is_skipped_as_a_link(
    indexer: Indexer, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last window: the path checks passed and the swap lands just before ``open``."""
    target = root / "target.md"
    real_open = os.open

    def opening(path: str, flags: int, *args: int) -> int:
        if os.fspath(path) == os.fspath(target) and not target.is_symlink():
            symlink(root)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", opening)
    report = indexer.run()
    assert "became a symlink" in reason(report, "target.md")
    assert indexed(indexer) == {"keep.md"}
