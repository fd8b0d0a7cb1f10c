"""Liveness and readiness are two probes: ``/healthz`` while the process answers, ``/readyz`` while
what it serves can be served.

A team's load balancer probed ``/healthz``, which answered 200 while PostgreSQL was down and for a
reader started on a knowledge-base name that did not exist (it served an empty index, silently).
"""

from __future__ import annotations

import subprocess
import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests import postgres_server
from tests.wire.serving import get, read_only_server, request
from tests.wire.test_team import index

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from tests.postgres_server import StoppableServer

WITHIN = 5.0


def reader(url: str, name: str) -> AbstractContextManager[tuple[int, subprocess.Popen[str]]]:
    return read_only_server(["--store", url, "--kb-name", name])


def _ready(port: int) -> tuple[int, dict[str, str], dict]:
    return request(f"http://127.0.0.1:{port}/readyz")


def _until(port: int, status: int, within: float = 15.0) -> dict:
    deadline = time.monotonic() + within
    while True:
        code, _, body = _ready(port)
        if code == status:
            return body
        assert time.monotonic() < deadline, f"/readyz still answers {code}: {body}"
        time.sleep(0.2)


def test_a_reader_on_a_name_nobody_indexed_is_live_but_not_ready_until_a_writer_builds_it(
    kb_root: Path,
) -> None:
    name = postgres_server.kb_name("ready")
    with reader(postgres_server.url(), name) as (port, _):
        assert get(f"http://127.0.0.1:{port}/healthz") == (200, {"status": "ok"})
        code, headers, body = _ready(port)
        assert code == 503 and body["ready"] is False and headers.get("retry-after") == "5"
        assert "no knowledge base" in body["reason"] and name in body["reason"]
        index(kb_root, ["--store", postgres_server.url(), "--kb-name", name])
        assert _until(port, 200) == {"ready": True}  # no restart: the reader found it


def test_a_reader_whose_database_stops_answering_is_not_ready_within_5_s_then_ready_again(
    kb_root: Path,
) -> None:
    postgres_server.url()
    server = StoppableServer()
    try:
        name = postgres_server.kb_name("ready")
        index(kb_root, ["--store", server.url, "--kb-name", name])
        with reader(server.url, name) as (port, _):
            assert _ready(port)[0] == 200
            server.freeze()
            try:
                started = time.monotonic()
                code, _, body = _ready(port)
                took = time.monotonic() - started
            finally:
                server.thaw()
            assert code == 503 and "try again shortly" in body["reason"], body
            assert took < WITHIN, f"/readyz on a frozen database took {took:.1f} s"
            assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200  # alive all along
            _until(port, 200)
    finally:
        server.close()


def test_a_reader_started_on_a_name_nobody_indexed_says_so_at_start() -> None:
    name = postgres_server.kb_name("ready")
    with reader(postgres_server.url(), name) as (_, proc):
        time.sleep(0.5)
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    assert "warning: not ready to serve" in stderr and name in stderr


def test_a_readers_status_says_it_follows_the_writer(kb_root: Path) -> None:
    """It said ``watcher: off`` and ``freshness: none: this command only reads the index`` while it
    followed the writer's passes within a second."""
    name = postgres_server.kb_name("ready")
    index(kb_root, ["--store", postgres_server.url(), "--kb-name", name])
    with reader(postgres_server.url(), name) as (port, _):
        code, status = get(f"http://127.0.0.1:{port}/api/status")
    assert code == 200, status
    assert status["watcher"] == "none here: the writer watches the files"
    assert status["freshness"].startswith("follows the writer's passes (notified by the database")
    assert "its last pass: " in status["freshness"] and "s ago" in status["freshness"]
