"""A watcher batch is indexed by a pass over its paths alone, and ends where a full pass would.

The watcher names the paths that changed; scanning only those keeps a save's cost independent of the
size of the tree (issue: edit → searchable within a second at 100,000 files). The risk is a scoped
pass that forgets something a full scan would see, so the central test here applies random edits,
renames, deletions, folder moves, hidings and links, runs the same entry point the watcher calls
with exactly the paths it would report, and compares the index with a fresh full build each round.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.ingest.scan import Scope
from kbseek.store.sqlite.store import SqliteStore
from tests.conftest import make_core

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "deploy",
    "rollback",
    "cache",
    "index",
    "設計",
    "障害",
    "手順",
    "検索",
]


def snapshot(kb: KnowledgeBase) -> tuple[dict[str, str], list[tuple[str, str]], list[str]]:
    """What the index holds: each path's content hash, the skipped list, and every chunk's text."""
    store = kb.store
    assert isinstance(store, SqliteStore)
    docs = {p: s.content_hash for p, s in store.document_states().items()}
    skipped = [(s.path, s.reason) for s in store.skipped()]
    texts = sorted(r[0] for r in store.conn.execute("SELECT text FROM chunks"))
    return docs, skipped, texts


def fresh(root: Path, tmp: Path) -> KnowledgeBase:
    kb = make_core(root, index_dir=tmp)
    kb.index()
    return kb


class Tree:
    """A knowledge base on disk that records the paths each operation touches, as a watcher would."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.touched: set[Path] = set()

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.md") if p.is_file() and not p.is_symlink())

    def folders(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_dir() and not p.is_symlink())

    def text(self) -> str:
        return f"# {self.rng.choice(WORDS)}\n\n" + " ".join(self.rng.choices(WORDS, k=12)) + "\n"

    def step(self) -> None:
        rng, files, folders = self.rng, self.files(), self.folders()
        op = rng.choice(
            ["create", "create", "edit", "delete", "rename", "move_folder", "hide", "link", "mkdir"]
        )
        if op == "create" or not files:
            where = rng.choice([self.root, *folders])
            path = where / f"n{rng.randrange(10_000)}.md"
            path.write_text(self.text(), encoding="utf-8")
            self.touched.add(path)
        elif op == "edit":
            path = rng.choice(files)
            path.write_text(self.text(), encoding="utf-8")
            self.touched.add(path)
        elif op == "delete":
            path = rng.choice(files)
            path.unlink()
            self.touched.add(path)
        elif op == "rename":
            path = rng.choice(files)
            target = rng.choice([self.root, *folders]) / f"r{rng.randrange(10_000)}.md"
            path.rename(target)
            self.touched |= {path, target}
        elif op == "move_folder" and folders:
            folder = rng.choice(folders)
            target = self.root / f"moved{rng.randrange(10_000)}"
            folder.rename(target)
            self.touched |= {folder, target}  # a watcher reports the folder, not each file in it
        elif op == "hide" and folders:
            folder = rng.choice(folders)
            target = folder.parent / f".hidden{rng.randrange(10_000)}"
            folder.rename(target)
            self.touched |= {folder, target}
        elif op == "link" and files:
            link = rng.choice([self.root, *folders]) / f"l{rng.randrange(10_000)}.md"
            link.symlink_to(rng.choice(files))
            self.touched.add(link)
        else:
            folder = rng.choice([self.root, *folders]) / f"f{rng.randrange(10_000)}"
            folder.mkdir(exist_ok=True)
            (folder / "inside.md").write_text(self.text(), encoding="utf-8")
            self.touched.add(folder)


@pytest.mark.parametrize("seed", range(6))
def test_scoped_passes_end_where_a_full_pass_would(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "kb"
    (root / "a" / "b").mkdir(parents=True)
    rng = random.Random(seed)
    tree = Tree(root, rng)
    for _ in range(8):
        tree.step()
    kb = make_core(root, index_dir=tmp_path / "idx")
    kb.index()
    try:
        for round_ in range(12):
            tree.touched.clear()
            for _ in range(rng.randint(1, 4)):
                tree.step()
            kb._runner._on_files_changed(set(tree.touched))
            assert kb._runner.last_error is None
            other = fresh(root, tmp_path / f"fresh{round_}")
            try:
                assert snapshot(kb) == snapshot(other), f"round {round_}: {sorted(tree.touched)}"
            finally:
                other.close()
                shutil.rmtree(tmp_path / f"fresh{round_}")
    finally:
        kb.close()


def test_a_batch_scans_only_its_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kb"
    for i in range(30):
        (root / f"d{i}").mkdir(parents=True)
        (root / f"d{i}" / "note.md").write_text(f"# Note {i}\n\nbody {i}\n", encoding="utf-8")
    kb = make_core(root)
    kb.index()
    listed: list[str] = []
    real = os.scandir

    def counting(path: str | os.PathLike[str]) -> object:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr("kbseek.ingest.scan.os.scandir", counting)
    try:
        edited = root / "d3" / "note.md"
        edited.write_text("# Note 3\n\nquasar\n", encoding="utf-8")
        kb._runner._on_files_changed({edited})
        assert listed == []  # a file's batch lists no folder at all
        assert [h.path for h in kb.search("quasar").hits] == ["d3/note.md"]
        assert kb.store.counts()[0] == 30  # nothing outside the batch was taken for deleted
    finally:
        kb.close()


def test_the_ignore_file_and_the_watches_ready_batch_scan_the_whole_tree(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "drafts").mkdir(parents=True)
    (root / "drafts" / "wip.md").write_text("# WIP\n\nnebula\n", encoding="utf-8")
    kb = make_core(root)
    kb.index()
    try:
        ignore = root / ".kbseekignore"
        ignore.write_text("drafts/\n", encoding="utf-8")
        kb._runner._on_files_changed({ignore})  # only the ignore file is in the batch
        assert kb.search("nebula").hits == []
        ignore.unlink()
        kb._runner._on_files_changed(set())  # the batch that says the watches are in place
        assert [h.path for h in kb.search("nebula").hits] == ["drafts/wip.md"]
    finally:
        kb.close()


def test_scope_covers_its_paths_and_everything_under_its_folders() -> None:
    scope = Scope(frozenset({"a/x.md", "b"}), frozenset({"a/x.md", "b"}))
    assert scope.covers("a/x.md") and scope.covers("b/c/d.md") and scope.covers("b")
    assert not scope.covers("a/y.md") and not scope.covers("bb/c.md") and not scope.covers("a")


def test_a_batch_does_not_wait_for_the_last_pass_dense_catch_up(kb_root: Path) -> None:
    import threading

    from tests.fakes import FakeEmbedder

    kb = KnowledgeBase(settings=Settings(root=kb_root, freshness_interval_s=0.0), embedder=FakeEmbedder())
    kb.index()
    entered, release = threading.Event(), threading.Event()
    real = kb._semantic.vectors_changed

    def slow_catch_up(*, rebuilt: bool) -> None:
        entered.set()
        release.wait(30)
        real(rebuilt=rebuilt)

    kb._semantic.vectors_changed = slow_catch_up  # type: ignore[method-assign]
    first = kb_root / "first.md"
    first.write_text("# First\n\nquokka\n", encoding="utf-8")
    worker = threading.Thread(target=kb._runner._on_files_changed, args=({first},))
    worker.start()
    try:
        assert entered.wait(30)  # the first pass is written and catching up its vectors
        kb._semantic.vectors_changed = real  # type: ignore[method-assign]
        second = kb_root / "second.md"
        second.write_text("# Second\n\nwombat\n", encoding="utf-8")
        batch = threading.Thread(target=kb._runner._on_files_changed, args=({second},))
        batch.start()
        batch.join(20)
        assert not batch.is_alive()  # it used to wait on the pass lock until the catch-up ended
        assert [h.path for h in kb.search("wombat").hits][:1] == ["second.md"]
    finally:
        release.set()
        worker.join(30)
        kb.close()
