"""The record of reads: its writer (rotation, a full queue), its settings, and what a line says
(docs/decisions/0055)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbseek.audit_spec import AuditSpec
from kbseek.config import build_settings
from kbseek.errors import ConfigError
from kbseek.server.audit import default_path, open_recorder
from kbseek.server.audit.record import Recorder
from kbseek.server.audit.writer import AuditWriter, log_files, read_records
from kbseek.server.auth.identity import KbAccessToken

ALICE = KbAccessToken(
    token="secret-token-value", client_id="claude", scopes=["kb:read"], subject="alice", method="jwt"
)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rotation_keeps_the_configured_number_of_files(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    writer = AuditWriter(path, max_bytes=1024, files=3, queue_size=10_000)
    for n in range(200):
        assert writer.put({"n": n, "pad": "x" * 80})
    writer.close()
    assert [p.name for p in log_files(path)] == ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]
    assert all(p.stat().st_size <= 1024 for p in log_files(path))
    kept = [r["n"] for r in read_records(path)]
    assert kept == list(range(200 - len(kept), 200))  # the newest, in order, none twice


def test_a_full_queue_drops_and_counts_without_blocking(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.jsonl"
    writer = AuditWriter(path, max_bytes=10_000, files=2, queue_size=2, start=False)  # nobody writes yet
    accepted = [writer.put({"n": n}) for n in range(5)]  # would hang here if put waited for room
    assert accepted == [True, True, False, False, False] and writer.dropped == 3
    assert "3 record(s) dropped" not in caplog.text and "1 record(s) dropped so far" in caplog.text
    writer.start()
    writer.close()
    assert lines(path)[:2] == [{"n": 0}, {"n": 1}]
    assert lines(path)[2]["event"] == "dropped" and lines(path)[2]["count"] == 3  # the gap is in the record
    assert "3 record(s) were dropped" in caplog.text


def test_a_line_names_the_caller_and_paths_never_the_token_or_the_query(tmp_path: Path) -> None:
    writer = AuditWriter(tmp_path / "a.jsonl", max_bytes=10_000, files=2, queue_size=10)
    recorder = Recorder(writer, queries=False, collection="notes", several=False)
    hits = {"hits": [{"path": "a.md", "snippet": "the text"}, {"path": "b.md"}, {"path": "a.md"}]}
    recorder.answered(ALICE, "search", hits, outcome="ok", asked={"query": "payroll"})
    recorder.answered(ALICE, "get_document", {"path": "a.md", "text": "body"}, outcome="ok")
    writer.close()
    search, document = lines(tmp_path / "a.jsonl")
    assert {k: v for k, v in search.items() if k != "time"} == {
        "subject": "alice", "client": "claude", "credential": None, "method": "jwt", "tool": "search",
        "collection": "notes", "paths": ["a.md", "b.md"], "outcome": "ok",
    }  # fmt: skip
    assert document["paths"] == ["a.md"]
    raw = (tmp_path / "a.jsonl").read_text(encoding="utf-8")
    assert "secret-token-value" not in raw and "payroll" not in raw and "body" not in raw


def test_a_search_over_several_collections_labels_each_path(tmp_path: Path) -> None:
    writer = AuditWriter(tmp_path / "a.jsonl", max_bytes=10_000, files=2, queue_size=10)
    recorder = Recorder(writer, queries=True, collection="docs", several=True)
    hits = {"hits": [{"path": "a.md", "kb": "docs"}, {"path": "a.md", "kb": "hr"}]}
    recorder.answered(ALICE, "search", hits, outcome="ok", asked={"query": "leave"})
    writer.close()
    (line,) = lines(tmp_path / "a.jsonl")
    assert line["collection"] == ["docs", "hr"] and line["paths"] == ["docs:a.md", "hr:a.md"]
    assert line["query"] == "leave"


def test_audit_settings_are_checked_when_read(tmp_path: Path) -> None:
    settings = build_settings(
        root=tmp_path, file_values={"audit": {"queries": True, "max_bytes": 2048, "files": 3}}
    )
    assert settings.audit == AuditSpec(queries=True, max_bytes=2048, files=3)
    for bad in ({"path": "relative/audit.jsonl"}, {"files": 0}, {"max_bytes": 10}, {"queue": 0}):
        with pytest.raises(ConfigError, match=r"\[audit\]"):
            build_settings(root=tmp_path, file_values={"audit": bad})


def test_only_a_signed_in_server_records_and_by_default_in_the_state_dir(tmp_path: Path) -> None:
    assert open_recorder(AuditSpec(), signed_in=False, path=str(tmp_path / "x"), collection="n") is None
    assert open_recorder(AuditSpec(enabled=False), signed_in=True, path=None, collection="n") is None
    recorder = open_recorder(AuditSpec(), signed_in=True, path=None, collection="notes")
    assert recorder is not None
    recorder.writer.close()
    assert recorder.writer.path == default_path("notes")
    assert default_path("notes").is_relative_to(tmp_path / "state")  # XDG_STATE_HOME, set by conftest


def test_a_read_without_a_collection_is_recorded_in_the_callers_default(tmp_path: Path) -> None:
    """A caller whose groups leave out the server's default collection reads the first of its own
    (``Library.only``); its record says so, not the default it could not read."""
    writer = AuditWriter(tmp_path / "a.jsonl", max_bytes=10_000, files=2, queue_size=10)
    recorder = Recorder(writer, queries=False, collection="hr", several=True)
    support = ALICE.model_copy(update={"collections": ("runbooks", "wiki")})
    recorder.answered(support, "get_document", {"path": "a.md", "text": "body"}, outcome="ok")
    recorder.answered(ALICE, "get_document", {"path": "a.md", "text": "body"}, outcome="ok")
    writer.close()
    assert [line["collection"] for line in lines(tmp_path / "a.jsonl")] == ["runbooks", "hr"]
