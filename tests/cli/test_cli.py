"""The command line, through click's runner: a thin skin over the KnowledgeBase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbseek.cli import cli
from tests.fakes import FakeEmbedder


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_index_prints_a_summary_with_counts(runner: CliRunner, kb_root: Path) -> None:
    code, out, _ = run(runner, "index", "--kb", str(kb_root), "--lexical-only")
    assert code == 0
    assert "indexed 4 documents" in out and "added 4" in out
    assert "skipped drafts/: .kbseekignore" in out
    code, out, _ = run(runner, "index", "--kb", str(kb_root), "--lexical-only")
    assert "unchanged 4" in out and "added 0" in out


def test_search_prints_hits_and_json(runner: CliRunner, kb_root: Path) -> None:
    run(runner, "index", "--kb", str(kb_root), "--lexical-only")
    code, out, _ = run(runner, "search", "--kb", str(kb_root), "--lexical-only", "load balancer")
    assert code == 0 and "runbooks/deploy.md" in out
    code, out, _ = run(runner, "search", "--kb", str(kb_root), "--lexical-only", "--json", "障害")
    data = json.loads(out)
    assert data["hits"][0]["path"] == "notes/障害対応.md"


def test_search_takes_alternative_phrasings_with_also(runner: CliRunner, kb_root: Path) -> None:
    run(runner, "index", "--kb", str(kb_root), "--lexical-only")
    args = ["search", "--kb", str(kb_root), "--lexical-only", "--json", "kitten pictures"]
    code, out, _ = run(runner, *args, "--also", "猫の写真", "--also", "coffee machine")
    data = json.loads(out)
    assert code == 0 and data["also"] == ["猫の写真", "coffee machine"]
    assert {"notes/障害対応.md", "notes/plain.txt"} <= {h["path"] for h in data["hits"]}
    code, out, _ = run(runner, "search", "--kb", str(kb_root), "--lexical-only", "kitten", "--also", "猫")
    assert code == 0 and "notes/障害対応.md" in out and "'猫'" in out


def test_status_and_get_work_from_the_cli(runner: CliRunner, kb_root: Path) -> None:
    run(runner, "index", "--kb", str(kb_root), "--lexical-only")
    code, out, _ = run(runner, "status", "--kb", str(kb_root), "--lexical-only", "--json")
    assert code == 0 and json.loads(out)["documents"] == 4
    code, out, _ = run(runner, "get", "--kb", str(kb_root), "--lexical-only", "drafts/secret-plan.md")
    assert code == 0 and "bluebird" in out


def test_fetch_and_topics_mirror_the_tools(runner: CliRunner, kb_root: Path) -> None:
    kb = ["--kb", str(kb_root), "--lexical-only"]
    run(runner, "index", *kb)
    _, out, _ = run(runner, "search", *kb, "--json", "rollback load balancer")
    chunk_id = json.loads(out)["hits"][0]["chunk_id"]
    code, out, _ = run(runner, "fetch", *kb, chunk_id, "--context", "0")
    assert code == 0 and out.startswith("── runbooks/deploy.md") and "load balancer" in out
    code, out, _ = run(runner, "fetch", *kb, "--json", chunk_id, "c_0000000000000000")
    data = json.loads(out)
    assert code == 0 and data["passages"][0]["requested"] == [chunk_id]
    assert data["missing"][0]["status"] == "unknown"  # an expected miss is data, not an error
    code, out, _ = run(runner, "topics", *kb)
    assert code == 0 and out.splitlines()[0] == "3 topics (4 documents)" and "- runbooks/:" in out
    code, out, _ = run(runner, "topics", *kb, "--json")
    assert {t["prefix"] for t in json.loads(out)["topics"]} == {"notes/", "runbooks/", "runbooks/database/"}


def test_a_refused_read_is_an_error_message_and_exit_1(runner: CliRunner, kb_root: Path) -> None:
    code, _, err = run(runner, "get", "--kb", str(kb_root), "--lexical-only", "../etc/passwd.md")
    assert code == 1 and "uses '..'" in err


def test_a_config_file_names_the_knowledge_base(runner: CliRunner, kb_root: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "kbseek.toml"
    cfg.write_text(f'kb = "{kb_root}"\nsemantic = false\n[limits]\ndefault_limit = 2\n', encoding="utf-8")
    code, out, _ = run(runner, "index", "--config", str(cfg))
    assert code == 0 and "indexed 4 documents" in out


def test_an_unknown_config_key_is_an_error_naming_the_key(
    runner: CliRunner, kb_root: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "kbseek.toml"
    cfg.write_text(f'kb = "{kb_root}"\n[search]\nfusoin = "rrf"\n', encoding="utf-8")
    code, _, err = run(runner, "status", "--config", str(cfg))
    assert code == 1 and "unknown key 'fusoin' in [search]" in err
    cfg.write_text(f'kb = "{kb_root}"\nroot = "x"\n', encoding="utf-8")
    code, _, err = run(runner, "status", "--config", str(cfg))
    assert code == 1 and "unknown key 'root'" in err


def test_a_missing_knowledge_base_says_how_to_name_one(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(runner, "status")
    assert code == 1 and "--kb PATH" in err


@pytest.mark.parametrize("command", ["index", "serve", "search", "fetch", "topics", "status", "get"])
def test_every_command_has_useful_help(runner: CliRunner, command: str) -> None:
    code, out, _ = run(runner, command, "--help")
    assert code == 0 and "--kb" in out and len(out) > 300


def test_an_index_from_another_model_switches_on_the_next_pass_and_reembed_still_works(
    runner: CliRunner, kb_root: Path, fake_model: list[FakeEmbedder]
) -> None:
    import sqlite3

    code, out, _ = run(runner, "index", "--kb", str(kb_root))
    assert code == 0 and "embedded" in out
    db = kb_root / ".kbseek" / "index.sqlite"
    with sqlite3.connect(db) as conn:  # as if an earlier run had used another embedding model
        conn.execute("UPDATE meta SET value = 'another-model:1' WHERE key = 'embed_model'")
    code, out, err = run(runner, "index", "--kb", str(kb_root))
    assert code == 0 and "embedded 4 chunks" in out and "switching" in err  # decision 0040
    with sqlite3.connect(db) as conn:
        model = conn.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()[0]
    assert model == fake_model[-1].model_id
    code, out, _ = run(runner, "index", "--kb", str(kb_root), "--reembed")
    assert code == 0 and "embedded" in out
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()[0]
            == fake_model[-1].model_id
        )
