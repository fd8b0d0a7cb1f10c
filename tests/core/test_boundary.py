"""Paths crossing the boundary: the guard checks the descriptor it reads from (D5), and a path
argument that is not a read goes through the same normalisation (T8).

The swap tests let the path checks pass, then swap the file at the moment it is opened, the window
a check-then-open reader leaves open. Every other refusal has its own test in test_guard.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbseek import Filters
from kbseek.errors import LinkRefused, PathOutsideRoot
from kbseek.ingest.guard import load_document
from kbseek.ingest.parsers import Registry
from tests.conftest import make_core


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Secret\n", encoding="utf-8")
    return root


def swap_on_open(monkeypatch: pytest.MonkeyPatch, target: Path, swap: object) -> None:
    real_open = os.open

    def opening(path: str, flags: int, *args: int, **kwargs: int) -> int:
        if os.fspath(path) == os.fspath(target):
            swap()  # type: ignore[operator]
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)


def swap_for_symlink(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tree / "a.md"

    def to_symlink() -> None:
        target.unlink()
        target.symlink_to(tree.parent / "outside.md")

    swap_on_open(monkeypatch, target, to_symlink)


def test_a_file_swapped_for_a_symlink_after_the_checks_is_refused_as_a_link(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swap_for_symlink(tree, monkeypatch)
    with pytest.raises(LinkRefused, match="became a symlink"):
        load_document(tree, "a.md", Registry(), max_bytes=1_000_000)


def test_a_hard_link_made_after_the_checks_is_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tree / "a.md"
    swap_on_open(monkeypatch, target, lambda: os.link(target, tree.parent / "elsewhere.md"))
    with pytest.raises(LinkRefused, match="2 hard links"):
        load_document(tree, "a.md", Registry(), max_bytes=1_000_000)


def test_a_path_prefix_is_taken_relative_to_the_root_and_may_not_climb_out(kb_root: Path) -> None:
    c = make_core(kb_root)
    try:
        c.index()
        hits = c.search("backups restore", filters=Filters(path_prefix="/runbooks/database/")).hits
        assert hits and {h.path for h in hits} == {"runbooks/database/backup.md"}
        with pytest.raises(PathOutsideRoot, match=r"uses '\.\.'"):
            c.search("backups", filters=Filters(path_prefix="runbooks/../../"))
    finally:
        c.close()
