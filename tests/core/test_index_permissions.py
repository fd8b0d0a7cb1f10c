"""The index is private: its folder ``0700``, every file kbseek writes in it ``0600``, whatever the umask.

The index holds the text of every note, so a copy readable by others (``--index-dir``, the cache
fallback of a read-only knowledge base) would disclose a note its owner had closed to them. The rule
(``kbseek.facade.paths``): folders kbseek creates for the index are ``0700``; the database, its ``-wal`` and
``-shm``, the writer lock, the ``.gitignore`` and the approximate vector index's files are ``0600``;
an index made wider before is tightened when kbseek opens it to write (if the user owns it), and
``kbseek doctor`` warns about whatever is still open, with the ``chmod`` to run. Windows has no such
modes, so these tests run on POSIX systems only.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.cli.doctor.sqlite_index import check_permissions
from kbseek.config import Settings
from kbseek.facade.paths import prepare_index_dir, tighten_index_dir, wider_than_private
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX file modes; Windows has ACLs instead")

INDEX_FILES = {"index.sqlite", "writer.lock", ".gitignore"}
"""What every index folder holds after a pass, with the store closed (SQLite removes -wal and -shm)."""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes(folder: Path) -> dict[str, int]:
    """Every entry of ``folder`` by name with its permission bits."""
    return {p.name: mode(p) for p in folder.iterdir()}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def assert_private(folder: Path, *, expected: set[str]) -> None:
    found = modes(folder)
    assert expected <= set(found), f"missing from {folder}: {expected - set(found)}"
    assert mode(folder) == 0o700, f"{folder} is {mode(folder):o}"
    wider = {name: f"{m:o}" for name, m in found.items() if m != 0o600}
    assert not wider, f"files in {folder} that are not 0600: {wider}"


@pytest.fixture(params=[0o022, 0o000], ids=["umask-022", "umask-000"])
def open_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """A umask that would leave new files readable by others (``0o000``: even writable)."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def semantic_kb(root: Path, index_dir: Path | None = None) -> KnowledgeBase:
    """A knowledge base with the fake model and an approximate vector index from the first vector on."""
    settings = Settings(root=root, index_dir=index_dir, approximate_above=0, freshness_interval_s=0.0)
    return KnowledgeBase(settings=settings, embedder=FakeEmbedder())


def test_kbseek_index_makes_a_private_index_in_the_knowledge_base(
    kb_root: Path, tmp_path: Path, open_umask: int, fake_model: list[FakeEmbedder]
) -> None:
    cfg = tmp_path / "kbseek.toml"
    cfg.write_text(f'kb = "{kb_root}"\n[index]\napproximate_above = 0\n', encoding="utf-8")
    result = invoke("index", "--config", str(cfg), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"]
    index_dir = kb_root / ".kbseek"
    assert_private(index_dir, expected=INDEX_FILES | {"vectors.json"})
    assert any(name.endswith(".usearch") for name in modes(index_dir))  # the approximate graph, 0600 too


def test_an_index_dir_elsewhere_is_private_with_its_wal_shm_and_vector_files(
    kb_root: Path, tmp_path: Path, open_umask: int
) -> None:
    index_dir = tmp_path / "elsewhere" / "deeper" / "index"
    kb = semantic_kb(kb_root, index_dir=index_dir)
    try:
        kb.index()
        assert kb.search("rollback load balancer").hits
        # While the store is open, SQLite's own files are there, created with the database file's mode.
        assert_private(index_dir, expected=INDEX_FILES | {"index.sqlite-wal", "index.sqlite-shm"})
    finally:
        kb.close()
    assert_private(index_dir, expected=INDEX_FILES | {"vectors.json"})
    # Every folder kbseek made on the way is private too.
    assert mode(tmp_path / "elsewhere") == mode(tmp_path / "elsewhere" / "deeper") == 0o700


def test_the_cache_fallback_of_a_read_only_knowledge_base_is_private(
    kb_root: Path, tmp_path: Path, open_umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() == 0:  # root can write anywhere: make the root look read-only to kbseek instead
        real_access = os.access

        def access(path: object, how: int, **kwargs: object) -> bool:
            if how == os.W_OK and Path(str(path)).resolve() == kb_root.resolve():
                return False
            return real_access(path, how, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "access", access)
    else:
        kb_root.chmod(0o555)
    try:
        kb = semantic_kb(kb_root)
        try:
            kb.index()
            index_dir = kb.index_dir
            assert index_dir.is_relative_to(tmp_path / "cache")
            assert_private(index_dir, expected=INDEX_FILES | {"index.sqlite-wal", "index.sqlite-shm"})
        finally:
            kb.close()
    finally:
        kb_root.chmod(0o755)
    assert_private(index_dir, expected=INDEX_FILES | {"vectors.json"})
    assert mode(tmp_path / "cache") == mode(tmp_path / "cache" / "kbseek") == 0o700  # made by kbseek
    assert not (kb_root / ".kbseek").exists()


def make_wide(index_dir: Path) -> None:
    """An index as an older kbseek (or a umask of 022) left it: folder 0755, files 0644."""
    index_dir.chmod(0o755)
    for path in index_dir.iterdir():
        path.chmod(0o644)


def test_doctor_warns_about_a_wide_index_with_the_chmod_and_kbseek_index_tightens_it(
    kb_root: Path, tmp_path: Path
) -> None:
    index_dir = tmp_path / "other"
    options = ["--kb", str(kb_root), "--index-dir", str(index_dir), "--lexical-only"]
    assert invoke("index", *options).exit_code == 0
    make_wide(index_dir)
    (index_dir / "my-own-notes.txt").write_text("not kbseek's\n", encoding="utf-8")
    (index_dir / "my-own-notes.txt").chmod(0o644)
    before = modes(index_dir)

    result = invoke("doctor", *options, "--json")
    assert result.exit_code == 0, result.output  # a warning, not a failure
    check = next(c for c in json.loads(result.stdout) if c["name"] == "permissions")
    assert check["status"] == "warn"
    assert str(index_dir) in check["detail"] and "the folder 755" in check["detail"]
    assert "index.sqlite 644" in check["detail"] and "my-own-notes" not in check["detail"]
    assert f"chmod 700 {index_dir}" in check["fix"]
    assert f"chmod 600 {index_dir / '.gitignore'} {index_dir / 'index.sqlite'}" in check["fix"]
    assert "kbseek index" in check["fix"]  # the other way out: kbseek tightens an index the user owns
    assert modes(index_dir) == before  # doctor only looks

    result = invoke("index", *options, "-v")
    assert result.exit_code == 0, result.output
    after = modes(index_dir)
    assert mode(index_dir) == 0o700
    assert {name: m for name, m in after.items() if name != "my-own-notes.txt"} == {
        name: 0o600 for name in after if name != "my-own-notes.txt"
    }
    assert after["my-own-notes.txt"] == 0o644  # not kbseek's file: left as the user made it
    logged = next(line for line in result.stderr.splitlines() if "private to its owner" in line)
    assert logged.startswith("kbseek: INFO") and str(index_dir) in logged  # said at info level (-v)
    assert "the folder 755 -> 700" in logged and "index.sqlite 644 -> 600" in logged

    result = invoke("doctor", *options, "--json")
    check = next(c for c in json.loads(result.stdout) if c["name"] == "permissions")
    assert check["status"] == "ok" and check["fix"] == ""


def test_a_read_only_open_leaves_a_wide_index_as_it_is(kb_root: Path) -> None:
    """``kbseek status`` and ``get`` change nothing in the index folder, its modes included."""
    assert invoke("index", "--kb", str(kb_root), "--lexical-only").exit_code == 0
    index_dir = kb_root / ".kbseek"
    make_wide(index_dir)
    before = modes(index_dir)
    assert invoke("status", "--kb", str(kb_root), "--lexical-only").exit_code == 0
    assert modes(index_dir) == before and mode(index_dir) == 0o755


def test_doctor_before_the_first_index_is_ok_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "not yet"
    found = check_permissions(missing, "kbseek index --kb KB")
    assert found.status == "ok" and "no index yet" in found.detail
    assert not missing.exists()


def test_files_of_another_user_are_reported_not_changed(kb_root: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    index_dir = tmp_path / "index"
    prepare_index_dir(index_dir)
    foreign = index_dir / "index.sqlite"
    foreign.write_bytes(b"")
    foreign.chmod(0o644)
    os.chown(foreign, 65534, 65534)
    assert tighten_index_dir(index_dir) == []
    assert mode(foreign) == 0o644
    assert wider_than_private(index_dir) == [(foreign, 0o644, False)]
    found = check_permissions(index_dir, "kbseek index --kb KB")
    assert found.status == "warn" and f"chmod 600 {foreign}" in found.fix and "another user" in found.fix
    assert "chmod 700" not in found.fix  # the folder itself is private


@pytest.mark.skipif(os.name == "nt", reason="no POSIX modes on Windows")
def test_the_eval_record_beside_the_index_is_private(tmp_path: Path) -> None:
    from kbseek.cli.eval import LAST_RUN_FILENAME, compare_with_last

    folder = tmp_path / "idx"
    prepare_index_dir(folder)
    old = os.umask(0o022)
    try:
        compare_with_last({"overall": {"recall@1": 0.5}}, folder, tmp_path / "golden.yml")
    finally:
        os.umask(old)
    assert stat.S_IMODE((folder / LAST_RUN_FILENAME).stat().st_mode) == 0o600
