"""Scanning and incremental indexing (T9, T10) against a real KB on disk."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.errors import IndexIncompatible
from tests.conftest import make_core


def bump(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_a_first_pass_adds_every_indexable_file(core: KnowledgeBase) -> None:
    report = core.last_report
    assert report is not None
    assert sorted(report.added) == ["notes/plain.txt", "notes/障害対応.md", "runbooks/database/backup.md",
                                    "runbooks/deploy.md"]  # fmt: skip


def test_a_second_pass_over_unchanged_files_reads_nothing(core: KnowledgeBase) -> None:
    report = core.index()
    assert report.unchanged == 4 and not report.changed


def test_a_touched_but_identical_file_is_not_reparsed(core: KnowledgeBase) -> None:
    bump(core.root / "runbooks/deploy.md")
    report = core.index()
    assert report.updated == [] and report.unchanged == 4


def test_an_edited_file_is_the_only_one_updated(core: KnowledgeBase) -> None:
    path = core.root / "runbooks/deploy.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nA new paragraph.\n", encoding="utf-8")
    bump(path)
    report = core.index()
    assert report.updated == ["runbooks/deploy.md"] and report.unchanged == 3


def test_a_deleted_file_leaves_the_index(core: KnowledgeBase) -> None:
    (core.root / "notes/plain.txt").unlink()
    report = core.index()
    assert report.deleted == ["notes/plain.txt"]
    assert core.search("descaling").hits == []


def test_a_renamed_file_is_recognised_by_its_hash(core: KnowledgeBase) -> None:
    (core.root / "runbooks/deploy.md").rename(core.root / "runbooks/release.md")
    report = core.index()
    assert report.renamed == [("runbooks/deploy.md", "runbooks/release.md")]
    assert report.added == [] and report.deleted == []
    assert core.search("load balancer").hits[0].path == "runbooks/release.md"


@pytest.mark.parametrize(
    ("rel", "content", "reason"),
    [
        ("latin1.md", "été".encode("latin-1"), "not valid UTF-8 text"),  # a word too short to tell by
        (
            "huge.md",
            b"x" * 5000,
            "too large: it is 5000 bytes, over the read cap of 4000 bytes (max_file_bytes)",
        ),
    ],
)
def test_noise_is_skipped_with_a_reason(kb_root: Path, rel: str, content: bytes, reason: str) -> None:
    (kb_root / rel).write_bytes(content)
    c = make_core(kb_root, max_file_bytes=4000)
    report = c.index()
    assert any(p == rel and reason in r for p, r in report.skipped)
    assert rel not in {d.path for d in c.store.documents()}


def test_links_and_tool_folders_are_never_indexed(kb_root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("# Outside\n\nsecret words\n", encoding="utf-8")
    (kb_root / "link.md").symlink_to(tmp_path / "outside.md")
    os.link(kb_root / "notes/plain.txt", kb_root / "hard.txt")
    for vendor in ("node_modules", ".git", ".venv", "__pycache__"):
        (kb_root / vendor).mkdir()
        (kb_root / vendor / "readme.md").write_text("# Vendor\n", encoding="utf-8")
    c = make_core(kb_root)
    report = c.index()
    reasons = dict(report.skipped)
    assert "symlink" in reasons["link.md"]
    assert "hard link" in reasons["hard.txt"] and "hard link" in reasons["notes/plain.txt"]
    assert not any("node_modules" in d.path or ".git" in d.path for d in c.store.documents())


def test_exclude_dirs_keeps_a_folder_out_of_the_index_only(kb_root: Path) -> None:
    c = make_core(kb_root, exclude_dirs=("database",))
    c.index()
    assert "runbooks/database/backup.md" not in {d.path for d in c.store.documents()}
    assert "Nightly snapshots" in c.read_document("runbooks/database/backup.md").text


def test_the_index_folder_is_created_with_a_gitignore(core: KnowledgeBase) -> None:
    assert core.index_dir == core.root / ".kbseek"
    assert (core.index_dir / ".gitignore").read_text(encoding="utf-8") == "*\n"


def test_a_read_only_knowledge_base_falls_back_to_the_user_cache_dir(kb_root: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere, so a read-only folder cannot be simulated")
    kb_root.chmod(0o555)
    try:
        c = make_core(kb_root)
        assert str(c.index_dir).startswith(str(tmp_path / "cache"))
    finally:
        kb_root.chmod(0o755)


def test_an_index_from_a_newer_schema_is_refused(kb_root: Path) -> None:
    c = make_core(kb_root)
    c.index()
    c.close()
    conn = sqlite3.connect(c.store.path)
    conn.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexIncompatible, match="newer kbseek"):
        make_core(kb_root)


def test_an_index_from_an_older_schema_is_rebuilt(kb_root: Path) -> None:
    c = make_core(kb_root)
    c.index()
    c.close()
    conn = sqlite3.connect(c.store.path)
    conn.execute("UPDATE meta SET value='0' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    c2 = make_core(kb_root)
    assert c2.store.counts() == (0, 0)
    c2.index()
    assert c2.store.counts()[0] == 4


def test_a_crash_mid_pass_keeps_finished_documents_and_no_half_written_one(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbseek.store.records import ChunkInput
    from kbseek.store.sqlite.writer import SqliteWriter

    c = make_core(kb_root)
    original = SqliteWriter._insert_chunks
    calls = {"n": 0}

    def failing(self: SqliteWriter, doc_id: int, chunks: tuple[ChunkInput, ...]) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            original(self, doc_id, chunks[:1])
            raise RuntimeError("simulated crash")
        original(self, doc_id, chunks)

    monkeypatch.setattr(SqliteWriter, "_insert_chunks", failing)
    with pytest.raises(RuntimeError):
        c.index()
    docs = c.store.documents()
    assert len(docs) == 2
    for d in docs:  # every stored document has all of its chunks
        chunks = c.store.conn.execute("SELECT count(*) FROM chunks WHERE document_id=?", (d.id,)).fetchone()[
            0
        ]
        assert chunks >= 1
    orphans = c.store.conn.execute(
        "SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)"
    ).fetchone()[0]
    assert orphans == 0
    monkeypatch.setattr(SqliteWriter, "_insert_chunks", original)
    assert len(c.index().added) == 2


def test_malformed_frontmatter_is_a_warning_not_a_crash(kb_root: Path) -> None:
    (kb_root / "bad.md").write_text("---\ntitle: [unclosed\n---\n# Bad\n\nbody text here\n", encoding="utf-8")
    c = make_core(kb_root)
    report = c.index()
    assert any(p == "bad.md" for p, _ in report.warnings)
    assert "bad.md" in {d.path for d in c.store.documents()}
    assert any(w.path == "bad.md" for w in c.status().warnings)
