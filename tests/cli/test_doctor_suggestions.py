"""What ``kbseek doctor`` tells a person to do with an index in PostgreSQL: pgvector's version judged
as the store judges it, and commands that run as printed (or, without a folder, say where to run
them and what to fill in), against the real server the tests start."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from tests import postgres_server
from tests.fakes import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")

from kbseek.cli.doctor.postgres_store import FOLDER  # noqa: E402
from kbseek.store.postgres import schema as postgres_schema  # noqa: E402
from kbseek.store.postgres.schema import PgvectorVersion  # noqa: E402

SECRET = "s3cret-pw-41q"
COMMAND = re.compile(r"`(kbseek [^`]+)`")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def doctor(*args: str) -> dict[str, dict[str, str]]:
    result = invoke("doctor", *args, "--json")
    return {c["name"]: c for c in json.loads(result.stdout)}


def with_password(url: str) -> str:
    """The URL with a password, which the server (trusting local connections) ignores."""
    assert url.startswith("postgresql://postgres:@")
    return url.replace("postgresql://postgres:@", f"postgresql://postgres:{SECRET}@", 1)


def installed(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """Make the one query that reads pgvector's version answer ``version``."""
    real = postgres_schema.pgvector_version

    def stand_in(conn: Any) -> PgvectorVersion | None:
        return None if real(conn) is None else PgvectorVersion.parse(version)

    monkeypatch.setattr(postgres_schema, "pgvector_version", stand_in)


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """A database of its own: no pgvector extension, no knowledge base but those a test puts there."""
    name = postgres_server.kb_name("sugg")
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = postgres_server.url()
        assert "@/postgres?" in url  # postgresql://postgres:@/postgres?host=<socket dir>
        yield url.replace("@/postgres?", f"@/{name}?", 1)  # a URL, as --store takes
    finally:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


# -- pgvector's version ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "status", "said"),
    [
        ("0.4.4", "fail", "kbseek needs pgvector 0.5.0 or newer"),
        ("0.5.1", "warn", "no iterative index scans"),
        ("0.7.4", "warn", "no iterative index scans"),
        ("0.8.0", "ok", "extension vector 0.8.0 installed"),
    ],
)
def test_doctor_judges_the_pgvector_version_as_the_store_does(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, version: str, status: str, said: str
) -> None:
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # as the first kbseek index would
    installed(monkeypatch, version)
    name = postgres_server.kb_name("pgv")
    found = doctor(
        "--kb", str(kb_root), "--store", postgres_server.url(), "--kb-name", name, "--lexical-only"
    )
    pgvector = found["pgvector"]
    assert pgvector["status"] == status and said in pgvector["detail"], pgvector
    assert f"vector {version} installed" in pgvector["detail"]
    if status != "ok":  # the server offers a newer pgvector than the one standing in: update to it
        assert "ALTER EXTENSION vector UPDATE" in pgvector["fix"], pgvector
    if status == "warn":
        assert "filtered by path or tag" in pgvector["detail"] and "slower path" in pgvector["detail"]


# -- commands that run as printed ------------------------------------------------------------------


def test_with_a_folder_every_command_doctor_suggests_runs_as_printed(
    kb_root: Path, fresh_database: str, fake_model: list[FakeEmbedder]
) -> None:
    name = postgres_server.kb_name("asprinted")
    flags = ["--kb", str(kb_root), "--store", with_password(fresh_database), "--kb-name", name]
    before = doctor(*flags)
    assert before["pgvector"]["status"] == "warn" and before["index"]["status"] == "warn", before
    suggested = {c: COMMAND.findall(before[c]["fix"]) for c in ("pgvector", "index")}
    assert all(suggested.values()), suggested  # each names its command, not just "run kbseek index"
    lines = {line for found in suggested.values() for line in found}
    assert SECRET not in json.dumps(before) and not any(FOLDER in line for line in lines)

    indexes = sorted(line for line in lines if line.startswith("kbseek index "))
    serves = sorted(line for line in lines if line.startswith("kbseek serve "))
    assert indexes and serves and len(indexes) + len(serves) == len(lines), lines
    for line in serves:  # a server runs until stopped: that its options parse is what can be checked
        parsed = invoke(*shlex.split(line)[1:], "--help")
        assert parsed.exit_code == 0, (line, parsed.output)
    for line in indexes:
        ran = invoke(*shlex.split(line)[1:])
        assert ran.exit_code == 0, (line, ran.output)

    after = doctor(*flags)
    assert after["pgvector"]["status"] == "ok" and after["index"]["status"] == "ok", after


def test_without_a_folder_doctor_says_where_to_index_with_a_placeholder_and_lists_the_kbs_held(
    kb_root: Path, fresh_database: str, fake_model: list[FakeEmbedder]
) -> None:
    for name in ("team_notes", "handbook"):
        made = invoke("index", "--kb", str(kb_root), "--store", fresh_database, "--kb-name", name)
        assert made.exit_code == 0, made.output

    index = doctor("--store", fresh_database, "--kb-name", "team_note")["index"]  # a reader, and a typo
    assert index["status"] == "warn" and "never indexed" in index["detail"]
    assert "the database holds 2 knowledge bases: handbook, team_notes" in index["detail"]
    assert "machine that has the notes' folder" in index["fix"] and "--kb-name" in index["fix"]
    lines = COMMAND.findall(index["fix"])
    assert lines and all(line.split()[:4] == ["kbseek", line.split()[1], "--kb", FOLDER] for line in lines)
    assert f"with {FOLDER} replaced by that folder" in index["fix"]

    # Filled in on the machine that has the notes, the command runs.
    (line,) = (line for line in lines if line.startswith("kbseek index "))
    ran = invoke(*shlex.split(line.replace(FOLDER, shlex.quote(str(kb_root))))[1:])
    assert ran.exit_code == 0, (line, ran.output)
    assert doctor("--store", fresh_database, "--kb-name", "team_note")["index"]["status"] == "ok"
