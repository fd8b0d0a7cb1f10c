"""The first commands a newcomer runs, and what tripped one: each answer says what state things are
in and what to do next, and looking at a knowledge base leaves nothing behind in it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kbseek.cli import cli
from tests.fakes import FakeEmbedder


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_status_of_a_never_indexed_kb_says_what_to_run_and_creates_no_index_folder(kb_root: Path) -> None:
    code, out, _ = run("status", "--kb", str(kb_root))
    assert code == 0
    assert f"not indexed yet: run `kbseek index --kb {kb_root}`" in out
    assert "last indexed:   never" in out
    assert not (kb_root / ".kbseek").exists()
    code, out, _ = run("status", "--kb", str(kb_root), "--json")
    assert code == 0 and json.loads(out)["documents"] == 0
    code, out, _ = run("get", "--kb", str(kb_root), "runbooks/deploy.md")
    assert code == 0 and "Deploy runbook" in out
    assert not (kb_root / ".kbseek").exists(), "reading a document must not create the index either"


def test_index_of_an_empty_folder_says_which_files_count_and_what_to_check(tmp_path: Path) -> None:
    empty = tmp_path / "notes"
    empty.mkdir()
    code, out, _ = run("index", "--kb", str(empty), "--lexical-only")
    assert code == 0 and "indexed 0 documents, 0 chunks" in out
    assert f"no Markdown or other indexable files were found under {empty}" in out
    assert ".md" in out and "exclude_dirs" in out and ".kbseekignore" in out
    code, out, _ = run("status", "--kb", str(empty), "--lexical-only")
    assert "no Markdown or other indexable files were found" in out


def test_index_counts_read_in_the_right_number(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "one.md").write_text("# One\n\nA single short note.\n", encoding="utf-8")
    code, out, _ = run("index", "--kb", str(root), "--lexical-only")
    assert code == 0 and "indexed 1 document, 1 chunk in" in out


def test_status_after_a_lexical_index_counts_what_is_not_embedded_yet(kb_root: Path) -> None:
    run("index", "--kb", str(kb_root), "--lexical-only")
    code, out, _ = run("status", "--kb", str(kb_root), "--json")  # semantic search is on by default
    data = json.loads(out)
    assert code == 0 and data["semantic"] == "partial" and data["embedded"] == 0
    assert any("have no vector yet" in n and "kbseek index" in n for n in data["notes"])


def test_status_after_index_reports_the_real_semantic_state_not_loading(
    kb_root: Path, fake_model: list[FakeEmbedder]
) -> None:
    code, _, _ = run("index", "--kb", str(kb_root))
    assert code == 0
    code, out, _ = run("status", "--kb", str(kb_root), "--json")
    data = json.loads(out)
    assert data["semantic"] == "ok" and data["embedded"] == data["chunks"] > 0
    code, out, _ = run("status", "--kb", str(kb_root))
    assert (
        f"semantic:       ok ({data['model']}), {data['chunks']} of {data['chunks']} chunks embedded" in out
    )


def test_search_explain_shows_each_legs_rank_and_score_in_the_text_output(kb_root: Path) -> None:
    run("index", "--kb", str(kb_root), "--lexical-only")
    code, out, _ = run("search", "--kb", str(kb_root), "--lexical-only", "--explain", "load balancer")
    assert code == 0
    first = out.splitlines()[3]
    assert first.startswith("   explain: lexical #1 (bm25 ") and "semantic -" in first and "fused " in first
    code, out, _ = run("search", "--kb", str(kb_root), "--lexical-only", "load balancer")
    assert "explain:" not in out
