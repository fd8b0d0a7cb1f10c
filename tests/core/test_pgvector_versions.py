"""pgvector's version: below the minimum every way into a PostgreSQL index refuses, saying which
versions and how to upgrade; before 0.8.0 a filtered graph search runs without iterative scans.

The server is the real one the tests start (pgvector 0.8.6); only the version that
``postgres_schema.pgvector_version`` reads from ``pg_extension`` is stood in, so everything else (the
extension, the HNSW index, the versions the server offers) is what a real server answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.config import Settings
from kbseek.errors import ConfigError
from kbseek.filters import SearchFilters
from tests import postgres_server
from tests.fakes import FakeEmbedder

if TYPE_CHECKING:
    from psycopg import Connection

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from pgvector.psycopg import register_vector  # noqa: E402

from kbseek.store.postgres import schema as postgres_schema  # noqa: E402
from kbseek.store.postgres import vectors as postgres_vectors  # noqa: E402
from kbseek.store.postgres.schema import PgvectorVersion, pgvector_upgrade  # noqa: E402
from kbseek.store.postgres.store import PostgresStore  # noqa: E402
from tests.unit.test_postgres_vectors import DIM, _exact, _fill, _queries  # noqa: E402


def installed(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """Make the one query that reads pgvector's version answer ``version`` (the extension itself,
    and whether it is installed at all, stay the server's)."""
    real = postgres_schema.pgvector_version

    def stand_in(conn: Any) -> PgvectorVersion | None:
        return None if real(conn) is None else PgvectorVersion.parse(version)

    monkeypatch.setattr(postgres_schema, "pgvector_version", stand_in)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def schema_exists(schema: str) -> bool:
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is not None


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement any cursor of this process sends, the store's pool's included, with its
    parameters: what a search set is seen, and the statements still go to the server as they were."""
    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def noting(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        statements.append(f"{query} {params}")
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", noting)
    return statements


def offered() -> str:
    """The pgvector the server itself offers (its default version): what ``ALTER EXTENSION`` updates to."""
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    assert row is not None
    return str(row[0])


def connection(store: PostgresStore) -> Connection[Any]:
    """A connection set up as the store's pool sets its own."""
    conn: Connection[Any] = psycopg.connect(postgres_server.url(), autocommit=True)
    conn.execute(f"SET search_path TO {store.schema}, public")
    register_vector(conn)
    return conn


# -- refused below the minimum ---------------------------------------------------------------------


def test_index_with_a_pgvector_below_the_minimum_is_refused_naming_both_versions_and_the_update(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed(monkeypatch, "0.4.4")
    name = postgres_server.kb_name("old")
    result = invoke("index", "--kb", str(kb_root), "--store", postgres_server.url(), "--kb-name", name,
                    "--lexical-only")  # fmt: skip
    assert result.exit_code == 1, result.output  # a refusal, not exit 70
    assert "bug in kbseek" not in result.output
    assert "pgvector 0.4.4" in result.output and "needs 0.5.0 or newer" in result.output
    # The server has a newer one to update to: the fix is the update, not a new installation.
    assert f"the server has pgvector {offered()}" in result.output
    assert "ALTER EXTENSION vector UPDATE" in result.output
    assert not schema_exists(f"kbseek_{name}")  # refused before anything was written


def test_a_reader_and_a_serving_writer_refuse_a_pgvector_below_the_minimum_when_they_open(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = postgres_server.kb_name("oldopen")
    url = postgres_server.url()
    indexed = invoke("index", "--kb", str(kb_root), "--store", url, "--kb-name", name, "--lexical-only")
    assert indexed.exit_code == 0, indexed.output

    installed(monkeypatch, "0.4.4")
    with pytest.raises(
        ConfigError, match=r"pgvector 0\.4\.4.*0\.5\.0 or newer.*ALTER EXTENSION vector UPDATE"
    ):
        KnowledgeBase(store=url, kb_name=name, read_only=True)
    # What `kbseek serve --kb …` opens: refused at start, not a thread's exception and keyword search.
    with pytest.raises(ConfigError, match=r"pgvector 0\.4\.4"):
        KnowledgeBase(settings=Settings(root=kb_root, store_url=url, kb_name=name), embedder=FakeEmbedder())
    searched = invoke("search", "rollback", "--store", url, "--kb-name", name, "--lexical-only")
    assert searched.exit_code == 1 and "pgvector 0.4.4" in searched.output
    assert "bug in kbseek" not in searched.output


def test_without_a_new_enough_pgvector_on_the_server_the_advice_is_to_install_one() -> None:
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        update = pgvector_upgrade(conn, PgvectorVersion(0, 8, 0))
        install = pgvector_upgrade(conn, PgvectorVersion(99, 0, 0))  # newer than the server's
        major = conn.info.server_version // 10_000
    assert update.startswith(f"the server has pgvector {offered()}: run ALTER EXTENSION vector UPDATE;")
    assert install.startswith("install pgvector 99.0.0 or newer on the database server")
    assert f"the newest it has is {offered()}" in install
    for source in (
        "apt.postgresql.org",
        f"postgresql-{major}-pgvector",
        "source build",
        "platform's own package",
    ):
        assert source in install, install
    assert "ALTER EXTENSION vector UPDATE" in install


def test_versions_compare_by_their_numbers_and_print_as_the_server_wrote_them() -> None:
    assert PgvectorVersion.parse("0.10.0") > PgvectorVersion.parse("0.8.6") > PgvectorVersion.parse("0.8")
    assert PgvectorVersion.parse("0.4.4") < postgres_schema.PGVECTOR_MINIMUM <= PgvectorVersion.parse("0.5.0")
    assert str(PgvectorVersion.parse("0.8.1")) == "0.8.1" and str(PgvectorVersion(0, 5)) == "0.5.0"
    assert PgvectorVersion.parse("custom") < postgres_schema.PGVECTOR_MINIMUM  # refused, named as written
    assert str(PgvectorVersion.parse("custom")) == "custom"


# -- features only where the installed version has them ------------------------------------------------


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    s = PostgresStore(postgres_server.url(), postgres_server.kb_name("vers"))
    yield s
    s.close()


def test_before_0_8_a_filtered_graph_search_sets_no_iterative_scan_and_finds_what_exact_search_finds(
    store: PostgresStore, sent: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(store, 2_000)
    assert store.build_vector_index(DIM) is True
    monkeypatch.setattr(postgres_vectors, "EXACT_FILTER_MAX", 10)  # filters go to the graph
    exact = _exact(store)
    allowed = store.filtered_rowids(SearchFilters(tags=("odd",)))
    assert allowed is not None and 10 < len(allowed) < 2_000
    queries = _queries(10)
    # 20 allowed chunks far from the query: one graph search of 1,000 rows cannot reach them.
    far = {r for r, _ in exact.search(-queries[0], 20)}

    with connection(store) as conn:  # pgvector 0.8.6 as it is: the iterative scan
        postgres_vectors.nearest(conn, queries[0], 10, allowed=allowed)
    assert any("iterative_scan" in s for s in sent)

    installed(monkeypatch, "0.7.4")
    sent.clear()
    recalls = []
    with connection(store) as conn:
        for q in queries:
            got = postgres_vectors.nearest(conn, q, 10, allowed=allowed)
            want = [r for r, _ in exact.search(q, 10, allowed)]
            assert {r for r, _ in got} <= allowed and len(got) == 10
            recalls.append(len(set(want) & {r for r, _ in got}) / 10)
        got = postgres_vectors.nearest(conn, queries[0], 10, allowed=far)
        assert [r for r, _ in got] == [r for r, _ in exact.search(queries[0], 10, far)]
        unfiltered = postgres_vectors.nearest(conn, queries[0], 10)
    assert np.mean(recalls) >= 0.9
    assert [r for r, _ in unfiltered] == [r for r, _ in exact.search(queries[0], 10)]
    assert not any("iterative_scan" in s or "max_scan_tuples" in s for s in sent), sent
    settings = [s for s in sent if "hnsw.ef_search" in s]
    assert len(settings) == len(queries) + 2  # every search above went to the graph
    wide = f"'{postgres_vectors.EF_SEARCH_MAX}'"
    assert all(wide in s for s in settings[:-1])  # filtered: the widest single search
    assert f"'{postgres_vectors.EF_SEARCH}'" in settings[-1]  # unfiltered: as ever
    # The version was read once for the connection, not once per search.
    assert sum("extversion" in s for s in sent) == 1


def test_a_knowledge_base_on_pgvector_0_6_builds_its_graph_and_answers_filtered_searches(
    kb_root: Path,
    tmp_path: Path,
    fake_model: list[FakeEmbedder],
    sent: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed(monkeypatch, "0.6.0")
    monkeypatch.setattr(postgres_vectors, "EXACT_FILTER_MAX", 0)  # every filter goes to the graph
    config = tmp_path / "kbseek.toml"
    config.write_text("[index]\napproximate_above = 0\n", encoding="utf-8")
    name = postgres_server.kb_name("v06")
    url = postgres_server.url()
    flags = ["--config", str(config), "--store", url, "--kb-name", name]
    indexed = invoke("index", "--kb", str(kb_root), *flags)
    assert indexed.exit_code == 0, indexed.output
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path TO kbseek_{name}")
        assert postgres_vectors.vector_indexes(conn) == {FakeEmbedder().dim: True}

    for where in (["--kb", str(kb_root)], []):  # the writer, and a reader without the files
        plain = invoke("search", "rollback load balancer", *where, *flags, "--json")
        assert plain.exit_code == 0, plain.output
        filtered = invoke("search", "rollback load balancer", *where, *flags, "--path-prefix", "runbooks/",
                          "--json")  # fmt: skip
        assert filtered.exit_code == 0, filtered.output
        paths = [hit["path"] for hit in json.loads(filtered.stdout)["hits"]]
        assert paths and all(p.startswith("runbooks/") for p in paths), paths
    # Searched in the graph, without the settings pgvector 0.6 rejects ("invalid configuration parameter").
    assert any("hnsw.ef_search" in s for s in sent)
    assert not any("iterative_scan" in s or "max_scan_tuples" in s for s in sent)
