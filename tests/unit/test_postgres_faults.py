"""PostgreSQL going away under a store: its connections cut, as a restart or a network drop cuts them.

Each test cuts every connection the store holds (``pg_terminate_backend`` on the backends that carry
its ``application_name``), which is what a client sees when the server restarts.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kbseek.store.base import Counts
from tests import postgres_server
from tests.unit.test_store_contract import document, write

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from kbseek.store.postgres import PostgresStore  # noqa: E402


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    s = PostgresStore(postgres_server.url(), postgres_server.kb_name("fault"))
    yield s
    s.close()


def _cut_connections(store: PostgresStore) -> int:
    """Terminate every backend of this store's pool (never this helper's own); how many went."""
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND application_name = %s",
            (store._application,),
        ).fetchall()
    return len(rows)


def test_reads_carry_on_after_the_servers_connections_were_cut(store: PostgresStore) -> None:
    write(store, document("a.md", "alpha bravo"))
    assert store.counts() == Counts(1, 1)
    assert _cut_connections(store) >= 1
    # The pool checks a connection before lending it, so the dead ones are replaced, not handed out.
    assert store.counts() == Counts(1, 1)
    assert store.lexical_candidates(["alpha"], limit=5)


def test_a_pass_cut_off_mid_transaction_leaves_nothing_half_written(store: PostgresStore) -> None:
    write(store, document("kept.md", "kept text"))
    with pytest.raises(psycopg.OperationalError), store.transaction() as tx:
        tx.write_document(document("first.md", "first text"), replaces=None)
        _cut_connections(store)
        tx.write_document(document("second.md", "second text"), replaces=None)
    assert store.counts() == Counts(1, 1)  # neither document of the cut transaction is there
    assert store.document("first.md") is None and store.document("kept.md") is not None
    write(store, document("after.md", "after text"))  # and the next pass writes as usual
    assert store.counts() == Counts(2, 2)
