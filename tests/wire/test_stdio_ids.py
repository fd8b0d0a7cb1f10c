"""The installed ``kbseek serve`` answers a refused stdio line with the request's id whenever it can be read.

An answer with ``id: null`` to a request whose id was readable leaves the client waiting for that
id until its own timeout (60 s in the MCP SDK). Each line here is one the server once answered
with ``null``: the id is written first, as clients write it, and something after it makes the
line unreadable as a whole. After each the same process serves the next request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kbseek.server.stdio import HEAD_BYTES, MAX_LINE_BYTES
from tests.conftest import NOTES, installed_script, write_notes
from tests.wire.serving import StdioServer, stdio_serving

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _call(rid: int | str, arguments: bytes) -> bytes:
    """A search call with ``arguments`` written as given, its id before everything else but the version."""
    head = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call"})[:-1].encode()
    return head + b',"params":{"name":"search","arguments":' + arguments + b"}}"


DEEP = 100_000
OVER_THE_CAP = _call(7, b'{"query":"' + b"x" * (MAX_LINE_BYTES + 10) + b'"}')
DEEP_WHERE = _call(8, b'{"query":"rollback","where":' + b'{"and":[' * DEEP + b"]}" * DEEP + b"}")
NOT_UTF8 = _call("nine", b'{"query":"caf\xe9 \xff\xfe"}')
AFTER_THE_METHOD = (
    b'{"jsonrpc":"2.0","method":"ping","id":12,"params":{"a":' + b"[" * DEEP + b"]" * DEEP + b"}}"
)
BIG_ID = b"9" * 5000

# (name, line, id the answer must carry, code): refused lines whose id can be read
READABLE: list[tuple[str, bytes, int | str, int]] = [
    ("a line over the cap, the id first", OVER_THE_CAP, 7, PARSE_ERROR),
    (f"a where nested {DEEP:,} deep", DEEP_WHERE, 8, PARSE_ERROR),
    ("invalid UTF-8 after the id", NOT_UTF8, "nine", PARSE_ERROR),
    ("a line cut off after the id", _call(10, b'{"query":"rollb'), 10, PARSE_ERROR),
    ("a list nested 100,000 deep in params", _call(11, b"[" * DEEP + b"]" * DEEP), 11, PARSE_ERROR),
    ("a deep where and a wrong version", DEEP_WHERE.replace(b'"2.0"', b'"1.0"', 1), 8, PARSE_ERROR),
    ("an id after the method", AFTER_THE_METHOD, 12, PARSE_ERROR),
    ("a wrong version only", b'{"jsonrpc":"1.0","id":13,"method":"ping"}', 13, INVALID_REQUEST),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    root = tmp_path_factory.mktemp("ids") / "kb"
    root.mkdir()
    write_notes(root, NOTES)
    command = [installed_script(), "serve", "--kb", str(root), "--lexical-only", "--no-watch"]
    with stdio_serving(command, "ids") as server:
        yield server


@pytest.mark.parametrize(("line", "rid", "code"), [r[1:] for r in READABLE], ids=[r[0] for r in READABLE])
def test_a_refused_line_is_answered_with_its_id_and_the_server_serves_on(
    server: StdioServer, line: bytes, rid: int | str, code: int
) -> None:
    server.send(line)
    answer = server.answer()
    assert answer["id"] == rid and "result" not in answer
    assert answer["error"]["code"] == code and answer["error"]["message"]
    server.serves_on()


def test_the_head_kept_of_a_line_over_the_cap_is_bounded_and_an_id_past_it_is_not_guessed(
    server: StdioServer,
) -> None:
    # the id comes after more padding than the head keeps: nothing readable, so null, and no id invented
    late = b'{"jsonrpc":"2.0","pad":"' + b"x" * HEAD_BYTES + b'","id":14,"method":"ping","params":{"q":"'
    server.send(late + b"y" * MAX_LINE_BYTES + b'"}}')
    answer = server.answer()
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR
    assert str(MAX_LINE_BYTES) in answer["error"]["message"]
    server.serves_on()


# (name, line): an id that is there but cannot be written back unchanged
UNREADABLE: list[tuple[str, bytes]] = [
    ("a 5,000-digit integer", b'{"jsonrpc":"2.0","id":' + BIG_ID + b',"method":"ping"}'),
    ("a lone surrogate", b'{"jsonrpc":"2.0","id":"\\udc00","method":"ping"}'),
    ("a string that is not UTF-8", b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}'),
    (
        "a 5,000-digit integer over the cap",
        b'{"jsonrpc":"2.0","id":'
        + BIG_ID
        + b',"method":"ping","params":{"q":"'
        + b"x" * MAX_LINE_BYTES
        + b'"}}',
    ),
]


@pytest.mark.parametrize("line", [u[1] for u in UNREADABLE], ids=[u[0] for u in UNREADABLE])
def test_an_unreadable_id_is_answered_null_with_a_message_saying_so(server: StdioServer, line: bytes) -> None:
    server.send(line)
    answer = server.answer()
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR
    assert "the id is unreadable" in answer["error"]["message"]
    server.serves_on()


def test_an_integer_id_near_the_conversion_limit_comes_back_whole(server: StdioServer) -> None:
    rid = int("9" * 4000)
    server.send(b'{"jsonrpc":"2.0","id":' + str(rid).encode() + b',"method":"ping","params":{"q":"\xff"}}')
    answer = server.answer()
    assert answer["id"] == rid and answer["error"]["code"] == PARSE_ERROR
    server.serves_on()


def test_a_malformed_response_is_not_answered_with_its_id(server: StdioServer) -> None:
    # a response's id is one the server chose: echoing it would answer the server's own request
    server.send(b'{"jsonrpc":"2.0","id":15,"result":{"a":' + b"[" * DEEP + b"]" * DEEP + b"}}")
    answer = server.answer()
    assert answer["id"] is None and answer["error"]["code"] == PARSE_ERROR
    server.serves_on()
