"""The wire's edges: malformed JSON-RPC is always answered, and slow or idle HTTP clients are cut off.

Each server runs in its own process through ``run_stdio`` / ``serve_http``, with the HTTP limits
short enough (about a second) for a test to wait them out.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NOTES, write_notes
from tests.wire.serving import StdioServer, free_port, get, request, stdio_serving, wait_healthy

DRIVER = """
import json, sys
from pathlib import Path

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server

mode, root, options = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
kb = KnowledgeBase(root, semantic=False)
try:
    if mode == "stdio":
        from kbseek.server.stdio import run_stdio

        run_stdio(build_server(kb, background=True))
    else:
        from kbseek.server.connection import serve_http
        from kbseek.server.http import HttpPolicy, build_http_app
        from kbseek.server.web import build_web_app

        kb.start_background()
        policy = HttpPolicy(**options)
        serve_http(build_http_app(build_server(kb), policy, build_web_app(kb)), policy, "127.0.0.1")
finally:
    kb.close()
"""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "edges", "version": "1"}},
}  # fmt: skip

# (name, raw line, expected code, expected id): the lines an adversarial client sent and got no answer to
MALFORMED: list[tuple[str, bytes, int, int | str | None]] = [
    ("not JSON", b"hello", PARSE_ERROR, None),
    (
        "lone surrogate",
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"\\ud800"}}}',
        PARSE_ERROR,
        3,  # the id can still be read, so the client learns which request failed
    ),
    ("lone surrogate id", b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}', PARSE_ERROR, None),
    ("5,000-digit integer", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', PARSE_ERROR, None),
    ("100k-deep nesting", b"[" * 100_000 + b"]" * 100_000, PARSE_ERROR, None),
    ("deep nesting in params", b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}", PARSE_ERROR, 4),
    ("batch array", b'[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]', INVALID_REQUEST, None),
    ("empty batch", b"[]", INVALID_REQUEST, None),
    ("not UTF-8", b'{"jsonrpc":"2.0","id":6,"method":"\xff"}', PARSE_ERROR, 6),  # the id is read before the bad byte
    ("method not a string", b'{"jsonrpc":"2.0","id":"seven","method":7}', INVALID_REQUEST, "seven"),
    ("wrong jsonrpc version", b'{"jsonrpc":"1.0","id":8,"method":"ping"}', INVALID_REQUEST, 8),
    ("a bare number", b"42", INVALID_REQUEST, None),
    ("over the line cap", b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"' + b"x" * (1024 * 1024) + b'"}}', PARSE_ERROR, 9),
]  # fmt: skip


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("edges") / "kb"
    root.mkdir()
    write_notes(root, NOTES)
    return root


def _driver(mode: str, root: Path, **options: Any) -> list[str]:
    return [sys.executable, "-c", DRIVER, mode, str(root), json.dumps(options)]


# --- stdio -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdio(notes: Path) -> Iterator[StdioServer]:
    with stdio_serving(_driver("stdio", notes), "edges") as server:
        yield server


@pytest.mark.parametrize(("line", "code", "rid"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_a_malformed_stdio_line_is_answered_and_the_server_serves_on(
    stdio: StdioServer, line: bytes, code: int, rid: int | str | None
) -> None:
    stdio.send(line)
    answer = stdio.answer()
    assert answer["id"] == rid and "result" not in answer
    assert answer["error"]["code"] == code and answer["error"]["message"]
    stdio.send(b'{"jsonrpc":"2.0","id":"after","method":"tools/list"}')
    after = stdio.answer()
    assert after["id"] == "after" and {t["name"] for t in after["result"]["tools"]} >= {"search", "fetch"}


def test_a_batch_is_refused_by_name_and_a_blank_line_is_not_a_message(stdio: StdioServer) -> None:
    stdio.send(b'[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]')
    assert "batch" in stdio.answer()["error"]["message"]
    stdio.send(b"   ")
    stdio.send(b'{"jsonrpc":"2.0","id":"next","method":"ping"}')
    assert stdio.answer() == {"jsonrpc": "2.0", "id": "next", "result": {}}


# --- HTTP --------------------------------------------------------------------------------------

LIMITS = {"header_timeout_s": 1.0, "body_timeout_s": 1.0, "keep_alive_s": 1, "max_connections": 8}
SLACK_S = 3.0


@pytest.fixture(scope="module")
def http(notes: Path) -> Iterator[tuple[int, int]]:
    """(port, server pid) of a server with one-second limits and room for eight connections."""
    port = free_port()
    with subprocess.Popen(
        _driver("http", notes, port=port, **LIMITS), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        try:
            wait_healthy(port, proc)
            yield port, proc.pid
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@contextmanager
def _connection(port: int) -> Iterator[socket.socket]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        yield sock


def _until_closed(sock: socket.socket, within: float) -> tuple[bytes, float]:
    """Everything the server writes until it closes the connection, and how long that took."""
    start = time.monotonic()
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open over {within} s") from None
    except ConnectionResetError:
        pass
    return received, time.monotonic() - start


def test_half_headers_are_cut_off_with_408_within_the_header_timeout(http: tuple[int, int]) -> None:
    port, _ = http
    with ExitStack() as stack:
        socks = [stack.enter_context(_connection(port)) for _ in range(4)]
        for sock in socks:
            sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: appl".encode())
        for sock in socks:
            received, _ = _until_closed(sock, LIMITS["header_timeout_s"] + SLACK_S)
            assert received.startswith(b"HTTP/1.1 408 ")


def test_a_header_sent_a_byte_at_a_time_does_not_keep_the_connection(http: tuple[int, int]) -> None:
    port, _ = http
    line = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: ".encode()
    with _connection(port) as sock:
        sock.sendall(line)
        start = time.monotonic()
        closed = False
        while time.monotonic() - start < LIMITS["header_timeout_s"] + SLACK_S:
            try:
                sock.sendall(b"a")
            except OSError:
                closed = True
                break
            sock.settimeout(0.2)
            try:
                if sock.recv(65536) == b"":
                    closed = True
                    break
            except TimeoutError:
                pass
            except ConnectionResetError:
                closed = True
                break
        assert closed, "a trickled header kept the connection past the header timeout"


def test_a_connection_that_sends_nothing_is_closed_silently(http: tuple[int, int]) -> None:
    port, _ = http
    with _connection(port) as sock:
        received, _ = _until_closed(sock, LIMITS["header_timeout_s"] + SLACK_S)
    assert received == b""


def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive(http: tuple[int, int]) -> None:
    port, _ = http
    with _connection(port) as sock:
        sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        _, waited = _until_closed(sock, LIMITS["keep_alive_s"] + SLACK_S)
    assert waited >= LIMITS["keep_alive_s"] * 0.5


def test_a_body_that_stops_short_is_cut_off_within_the_body_timeout(http: tuple[int, int]) -> None:
    port, _ = http
    with _connection(port) as sock:
        sock.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            'Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"jsonrpc"'.encode()
        )
        _until_closed(sock, LIMITS["body_timeout_s"] + SLACK_S)


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_connections_past_the_cap_are_refused_and_descriptors_stay_bounded(http: tuple[int, int]) -> None:
    port, pid = http
    time.sleep(LIMITS["header_timeout_s"] + 0.5)  # connections left by earlier tests have timed out
    before = _open_fds(pid)
    cap = int(LIMITS["max_connections"])
    with ExitStack() as stack:
        socks = [stack.enter_context(_connection(port)) for _ in range(cap + 40)]
        time.sleep(0.5)
        assert _open_fds(pid) <= before + cap + 2
        refused = 0
        for sock in socks[cap:]:
            received, _ = _until_closed(sock, SLACK_S)
            refused += received.startswith(b"HTTP/1.1 503 ") and b"retry-after: " in received
        assert refused >= 30  # a reset may eat the answer of the odd one; never a held connection
        for sock in socks[:cap]:  # the ones let in are closed at the header timeout
            _until_closed(sock, LIMITS["header_timeout_s"] + SLACK_S)
    time.sleep(0.3)
    assert _open_fds(pid) <= before + 2
    assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200


# (name, body, expected code): POST bodies that must be answered 400 with a JSON-RPC error
BAD_BODIES: list[tuple[str, bytes, int]] = [
    ("not JSON", b"hello", PARSE_ERROR),
    ("empty", b" ", PARSE_ERROR),
    ("lone surrogate", b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"q":"\\ud800"}}', PARSE_ERROR),
    ("5,000-digit integer", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', PARSE_ERROR),
    ("100k-deep nesting", b"[" * 100_000 + b"]" * 100_000, PARSE_ERROR),
    ("batch array", b'[{"jsonrpc":"2.0","id":5,"method":"ping"}]', INVALID_REQUEST),
    ("method not a string", b'{"jsonrpc":"2.0","id":7,"method":7}', INVALID_REQUEST),
    ("not UTF-8", b'{"jsonrpc":"2.0","id":6,"method":"\xff"}', PARSE_ERROR),
]


@pytest.mark.parametrize(("body", "code"), [b[1:] for b in BAD_BODIES], ids=[b[0] for b in BAD_BODIES])
def test_a_malformed_post_body_is_answered_with_a_json_rpc_error(
    http: tuple[int, int], body: bytes, code: int
) -> None:
    port, _ = http
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    status, _, answer = request(url, headers, body)
    assert status == 400
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None and answer["error"]["code"] == code
    assert "Validation error" not in answer["error"]["message"]
    if body.startswith(b"[{"):
        assert "batch" in answer["error"]["message"]
    status, _, _ = request(url, headers, json.dumps(INITIALIZE).encode())
    assert status == 200  # and the server serves on
