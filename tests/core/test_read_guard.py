"""What the scan checked is checked again when the file is read (D5, T9): changes made during a pass.

Each test lets the scan see an ordinary file, then changes the tree before the read, through a hook
on the scan or on the reader's own calls (never a sleep race): a folder swapped for a symlink to a
folder outside the root, a file replaced by a hard link to a file outside, a file grown past
``max_file_bytes``. The read must refuse each, the pass must list it as skipped with the reason,
an indexed copy must leave the index, and nothing from outside the root may be indexed or served.
The same checks are run once more through the path-resolving fallback used where the OS cannot
open relative to a folder without following links (Windows).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kbseek.ingest.guard
import kbseek.ingest.indexer
from kbseek.config import Settings
from kbseek.errors import DocumentRefused, DocumentTooLarge, LinkRefused, PathOutsideRoot
from kbseek.ingest.exclusion import Exclusion
from kbseek.ingest.guard import load_document, read_regular_file
from kbseek.ingest.indexer import Indexer
from kbseek.ingest.parsers import Registry
from kbseek.ingest.scan import ScanResult
from kbseek.store.sqlite.store import SqliteStore
from tests.conftest import make_core
from tests.core.test_indexer_reads import indexed, reason

CAP = 4000
SECRET = "zanzibarsecret"
TARGET = "sub/target.md"


@pytest.fixture(params=["descriptor walk", "path fallback"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the dir_fd walk (POSIX) and with the fallback that resolves the path."""
    if request.param == "descriptor walk":
        if not kbseek.ingest.guard._WALK:
            pytest.skip("this OS cannot open a folder relative to its parent without following links")
    else:
        monkeypatch.setattr(kbseek.ingest.guard, "_WALK", False)
    return str(request.param)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the root holding what must never be served: the same layout as the root."""
    out = tmp_path / "outside"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "target.md").write_text(f"# Outside\n\nThe {SECRET} lives here.\n", encoding="utf-8")
    (out / "secret.md").write_text(f"# Secret\n\nAnother {SECRET}.\n", encoding="utf-8")
    return out


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    kb = tmp_path / "kb"
    (kb / "sub").mkdir(parents=True)
    (kb / "keep.md").write_text("# Keep\n\nAn ordinary note about ginger tea.\n", encoding="utf-8")
    (kb / TARGET).write_text("# Target\n\nA note about chamomile.\n", encoding="utf-8")
    return kb


@pytest.fixture
def indexer(root: Path, tmp_path: Path, walk: str) -> Iterator[Indexer]:
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


def after_the_scan(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> list[ScanResult]:
    """Run ``change`` right after the pass's scan returns, once; the scans seen are listed."""
    real_scan = kbseek.ingest.indexer.scan
    seen: list[ScanResult] = []

    def scanning(*args: Any, **kwargs: Any) -> ScanResult:
        result = real_scan(*args, **kwargs)
        if not seen:
            change()
        seen.append(result)
        return result

    monkeypatch.setattr(kbseek.ingest.indexer, "scan", scanning)
    return seen


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ``os.read`` the reader makes, by the number of bytes it returned."""
    real_read = os.read
    sizes: list[int] = []

    def reading(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(os, "read", reading)
    return sizes


def swap_folder(root: Path, outside: Path) -> None:
    """``sub`` becomes a symlink to the outside folder of the same shape."""
    (root / "sub").rename(root.parent / "sub-moved-away")
    (root / "sub").symlink_to(outside / "sub", target_is_directory=True)


def hard_link_outside(root: Path, outside: Path) -> None:
    """``sub/target.md`` is replaced by a hard link to a file outside the root."""
    (root / TARGET).unlink()
    os.link(outside / "secret.md", root / TARGET)


def assert_nothing_outside(indexer: Indexer) -> None:
    assert indexed(indexer) == {"keep.md"}
    assert not any(SECRET in text for _, _, text in indexer.store.chunks_without_vectors())


# -- a folder swapped for a symlink --------------------------------------------------------------


def test_a_folder_swapped_for_a_symlink_after_the_scan_is_skipped_and_nothing_outside_is_indexed(
    indexer: Indexer, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = after_the_scan(monkeypatch, lambda: swap_folder(root, outside))
    report = indexer.run()
    assert TARGET in seen[0].files  # the scan saw a real folder holding an ordinary file
    assert "outside the knowledge-base root" in reason(report, TARGET)
    assert_nothing_outside(indexer)


def test_an_indexed_file_whose_folder_is_swapped_for_a_symlink_leaves_the_index(
    indexer: Indexer, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexer.run()
    assert indexed(indexer) == {"keep.md", TARGET}
    (root / TARGET).write_text("# Target\n\nEdited, so the next pass reads it again.\n", encoding="utf-8")
    after_the_scan(monkeypatch, lambda: swap_folder(root, outside))
    report = indexer.run()
    assert "outside the knowledge-base root" in reason(report, TARGET)
    assert report.deleted == [TARGET]
    assert_nothing_outside(indexer)


def test_a_folder_swapped_as_the_reader_starts_walking_is_refused(
    indexer: Indexer, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap lands inside the read itself, after any check a resolve-then-open reader would make."""
    real_open = os.open
    swapped: list[bool] = []

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        name = os.fspath(path)
        # the walk opening the folder, or a resolve-then-open reader opening the file by its path
        if not swapped and (
            (name == "sub" and "dir_fd" in kwargs) or name.endswith(os.path.join("sub", "target.md"))
        ):
            swapped.append(True)
            swap_folder(root, outside)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    report = indexer.run()
    assert swapped
    assert "outside the knowledge-base root" in reason(report, TARGET)
    assert_nothing_outside(indexer)


def test_a_folder_swapped_after_the_walk_and_before_the_file_opens_is_refused(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file opened through the swapped folder is not the one in the folder walked: walk again."""
    if not kbseek.ingest.guard._WALK:
        pytest.skip("this OS cannot open a folder relative to its parent without following links")
    real_open = os.open
    full = os.path.join(os.path.realpath(root), "sub", "target.md")
    swapped: list[bool] = []

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not swapped and os.fspath(path) == full:
            swapped.append(True)
            swap_folder(root, outside)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    reads = count_reads(monkeypatch)
    with pytest.raises(PathOutsideRoot, match="outside the knowledge-base root"):
        read_regular_file(root, TARGET, max_bytes=CAP)
    assert swapped and reads == []  # refused before a byte was read from the file outside


def test_served_documents_never_come_from_a_swapped_folder(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, walk: str
) -> None:
    """End to end: the pass skips it, search finds nothing from outside, get_document refuses it."""
    c = make_core(root)
    try:
        after_the_scan(monkeypatch, lambda: swap_folder(root, outside))
        c.index()
        assert not c.search(SECRET).hits
        with pytest.raises(PathOutsideRoot, match="outside the knowledge-base root"):
            c.read_document(TARGET)
        skipped = {s.path: s.reason for s in c.status().skipped}
        assert "outside the knowledge-base root" in skipped[TARGET]
    finally:
        c.close()


# -- a hard link ---------------------------------------------------------------------------------


def test_a_file_replaced_by_a_hard_link_to_an_outside_file_after_the_scan_is_skipped(
    indexer: Indexer, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    after_the_scan(monkeypatch, lambda: hard_link_outside(root, outside))
    report = indexer.run()
    assert "2 hard links" in reason(report, TARGET)
    assert_nothing_outside(indexer)


def test_an_indexed_file_replaced_by_a_hard_link_leaves_the_index(
    indexer: Indexer, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexer.run()
    os.utime(root / TARGET, ns=(1, 1))  # the scan sees a change, so the pass reads it again
    after_the_scan(monkeypatch, lambda: hard_link_outside(root, outside))
    report = indexer.run()
    assert "hard links" in reason(report, TARGET) and report.deleted == [TARGET]
    assert_nothing_outside(indexer)


# -- growth past max_file_bytes ------------------------------------------------------------------


def test_a_file_grown_past_the_cap_after_the_scan_is_skipped_without_reading_it(
    indexer: Indexer, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def grow() -> None:
        with (root / TARGET).open("ab") as f:
            f.write(b"x" * (100 * CAP))

    after_the_scan(monkeypatch, grow)
    reads = count_reads(monkeypatch)
    report = indexer.run()
    assert "over the read cap" in reason(report, TARGET) and "max_file_bytes" in reason(report, TARGET)
    assert indexed(indexer) == {"keep.md"}
    assert max(reads, default=0) <= CAP + 1  # keep.md was read; the grown file was refused by its size alone


def test_a_file_growing_while_it_is_read_is_read_only_to_the_cap(
    indexer: Indexer, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fstat said small; the file grows before the bytes are read: one byte past the cap, then refused."""
    real_fstat = os.fstat
    target = root / TARGET
    target_ino = target.stat().st_ino

    def fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        if st.st_ino == target_ino and st.st_size < CAP:
            with target.open("ab") as f:
                f.write(b"y" * (100 * CAP))
        return st

    monkeypatch.setattr(os, "fstat", fstat)
    reads = count_reads(monkeypatch)
    report = indexer.run()
    assert "grew over the read cap" in reason(report, TARGET)
    assert indexed(indexer) == {"keep.md"}
    assert sum(reads) <= (CAP + 1) + len((root / "keep.md").read_bytes())


def test_get_document_reads_a_grown_file_only_to_the_cap(
    root: Path, monkeypatch: pytest.MonkeyPatch, walk: str
) -> None:
    (root / "big.md").write_bytes(b"# Big\n\n" + b"z" * (100 * CAP))
    reads = count_reads(monkeypatch)
    with pytest.raises(DocumentTooLarge, match="over the read cap"):
        load_document(root, "big.md", Registry(), max_bytes=CAP)
    assert sum(reads) == 0


# -- the reader on its own -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (lambda root, outside: swap_folder(root, outside), PathOutsideRoot),
        (lambda root, outside: hard_link_outside(root, outside), LinkRefused),
        (lambda root, outside: None, None),
    ],
    ids=["swapped-folder", "hard-link", "unchanged"],
)
def test_the_reader_refuses_what_the_scan_would_have_refused(
    root: Path,
    outside: Path,
    walk: str,
    change: Callable[[Path, Path], None],
    refusal: type[DocumentRefused] | None,
) -> None:
    change(root, outside)
    if refusal is None:
        assert read_regular_file(root, TARGET, max_bytes=CAP).data.startswith(b"# Target")
        return
    with pytest.raises(refusal):
        read_regular_file(root, TARGET, max_bytes=CAP)


def test_a_file_replaced_by_an_editor_save_as_it_is_opened_is_read_anew_not_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch, walk: str
) -> None:
    """An atomic save (a new file renamed over the old) after the checks and before the open: the
    file opened is not the one checked, so the reader looks again and reads the new text."""
    real_open = os.open
    full = os.path.join(os.path.realpath(root), "sub", "target.md")
    saved: list[bool] = []

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not saved and os.fspath(path) == full:
            saved.append(True)
            (root / "sub" / "new.tmp").write_text("# Target\n\nSaved again.\n", encoding="utf-8")
            os.replace(root / "sub" / "new.tmp", root / TARGET)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    assert read_regular_file(root, TARGET, max_bytes=CAP).data == b"# Target\n\nSaved again.\n"
    assert saved


def test_a_missing_root_is_a_refusal(tmp_path: Path, walk: str) -> None:
    with pytest.raises(DocumentRefused, match="no file at"):
        read_regular_file(tmp_path / "no-such-root", "a.md", max_bytes=CAP)
