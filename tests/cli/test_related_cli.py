"""``kbseek related PATH``: the related tool's answer on the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kbseek.cli import cli
from tests.conftest import write_notes
from tests.fakes import FakeEmbedder

NOTES = {
    "home.md": "# Home\n\nSee the [deploy runbook](ops/deploy.md) and [[Rollback]].\n",
    "ops/deploy.md": "# Deploy runbook\n\nbuild the container image and push it to the registry\n",
    "ops/rollback.md": "# Rollback\n\nswitch the load balancer back\n",
    "ops/images.md": "# Images\n\nthe registry keeps every container image we push\n",
}


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_related_lists_links_and_backlinks_saying_why(tmp_path: Path) -> None:
    write_notes(tmp_path, NOTES)
    kb = ["--kb", str(tmp_path), "--lexical-only"]
    assert _run("index", *kb)[0] == 0
    code, out = _run("related", *kb, "home.md")
    assert code == 0 and out.splitlines()[0] == "2 related documents for home.md"
    assert "ops/deploy.md — Deploy runbook [links to; score 0.50]" in out
    assert "ops/rollback.md — Rollback [links to; score 0.50]" in out
    assert "note: semantic search is off: related by links only" in out
    code, out = _run("related", *kb, "--json", "ops/deploy.md")
    assert code == 0 and json.loads(out)["backlinks"] == ["home.md"]


def test_related_by_similarity_alone_and_by_chunk(tmp_path: Path, fake_model: list[FakeEmbedder]) -> None:
    write_notes(tmp_path, NOTES)
    kb = ["--kb", str(tmp_path)]
    assert _run("index", *kb)[0] == 0
    code, out = _run("related", *kb, "--no-links", "--limit", "1", "ops/deploy.md")
    assert code == 0 and out.startswith("1 related document for ops/deploy.md\n1. ")
    assert "[similar: " in out and "backlinks" not in out and "more related documents: raise limit" in out
    _, out = _run("search", *kb, "--json", "registry")
    chunk_id = next(h["chunk_id"] for h in json.loads(out)["hits"] if h["path"] == "ops/deploy.md")
    code, out = _run("related", *kb, "--chunk", chunk_id, "--json")
    assert code == 0 and json.loads(out)["backlinks"] == ["home.md"]


def test_a_path_that_is_not_indexed_is_refused_saying_what_to_pass(tmp_path: Path) -> None:
    write_notes(tmp_path, NOTES)
    code, out = _run("related", "--kb", str(tmp_path), "--lexical-only", "nowhere.md")
    assert code != 0 and "not an indexed document" in out
