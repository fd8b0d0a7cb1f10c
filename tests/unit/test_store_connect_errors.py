"""A refused password names where kbseek takes it from, as ``doctor`` does.

libpq's own words ("password authentication failed for user", "fe_sendauth: no password
supplied") said only "check the URL and that the server is running" after them.
"""

from __future__ import annotations

import psycopg
import pytest

from kbseek.errors import ConfigError
from kbseek.store.postgres import pool as postgres_pool
from kbseek.store.postgres.pool import connect_hint, setup_connection

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")


@pytest.mark.parametrize(
    "said",
    [
        'connection failed: FATAL:  password authentication failed for user "kb"',
        "connection failed: fe_sendauth: no password supplied",
    ],
)
def test_a_refused_password_names_the_url_pgpassword_and_pgpass(said: str) -> None:
    hint = connect_hint(psycopg.OperationalError(said))
    assert "PGPASSWORD" in hint and "~/.pgpass" in hint and "URL" in hint


def test_a_server_that_is_not_there_is_told_apart() -> None:
    hint = connect_hint(psycopg.OperationalError("connection refused"))
    assert "PGPASSWORD" not in hint and "server is running" in hint


def test_the_setup_connection_carries_the_hint_and_never_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*_: object, **__: object) -> None:
        raise psycopg.OperationalError('FATAL:  password authentication failed for user "kb"')

    monkeypatch.setattr(postgres_pool.BoundedConnection, "connect", refused)
    with (
        pytest.raises(ConfigError) as raised,
        setup_connection(
            "postgresql://kb:s3cret@db.example/kbseek",
            application="test",
            location="postgresql://kb@db.example/kbseek",
        ),
    ):
        pass
    assert "PGPASSWORD" in str(raised.value) and "s3cret" not in str(raised.value)
