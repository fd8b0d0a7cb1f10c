"""``kbseek audit``: a document's readers and a subject's reads, from the record and its rotated files."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kbseek.cli import cli


def write(path: Path, *records: dict[str, object]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def read(
    time: str, tool: str, paths: list[str], *, subject: str | None = None, credential: str | None = None
) -> dict[str, object]:
    return {
        "time": time, "subject": subject, "client": credential or "claude", "credential": credential,
        "method": "static" if credential else "jwt", "tool": tool, "collection": "notes", "paths": paths,
        "outcome": "ok",
    }  # fmt: skip


def test_document_readers_and_subject_reads_come_from_every_rotated_file(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    write(
        log.with_name("audit.jsonl.2"),
        read("2026-12-01T09:00:00.000Z", "search", ["runbooks/deploy.md"], subject="alice"),
    )
    write(
        log.with_name("audit.jsonl.1"), {"time": "2026-12-01T10:00:00.000Z", "event": "dropped", "count": 2}
    )
    (log.with_name("audit.jsonl.1")).write_text(
        log.with_name("audit.jsonl.1").read_text() + "half a li", encoding="utf-8"
    )
    write(
        log,
        read("2026-12-02T09:00:00.000Z", "get_document", ["hr/pay.md"], subject="bob"),
        read("2026-12-03T09:00:00.000Z", "fetch", ["runbooks/deploy.md"], credential="ci"),
    )
    runner = CliRunner()
    readers = runner.invoke(cli, ["audit", "--log", str(log), "--document", "runbooks/deploy.md"])
    assert readers.exit_code == 0, readers.output
    assert readers.output.splitlines() == [
        "2026-12-01T09:00:00.000Z  alice  search  ok",
        "2026-12-03T09:00:00.000Z  token:ci  fetch  ok",
    ]
    reads = runner.invoke(cli, ["audit", "--log", str(log), "--subject", "bob"])
    assert reads.output.splitlines() == ["2026-12-02T09:00:00.000Z  get_document  ok  hr/pay.md"]
    by_token = runner.invoke(cli, ["audit", "--log", str(log), "--subject", "ci", "--json"])
    assert [json.loads(line)["tool"] for line in by_token.output.splitlines()] == ["fetch"]


def test_a_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["audit", "--log", str(tmp_path / "none.jsonl"), "--subject", "alice"])
    assert result.exit_code != 0 and "no audit record at" in result.output


def test_a_question_is_needed(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    write(log, read("2026-12-01T09:00:00.000Z", "search", ["a.md"], subject="alice"))
    result = CliRunner().invoke(cli, ["audit", "--log", str(log)])
    assert result.exit_code == 2 and "--document" in result.output
