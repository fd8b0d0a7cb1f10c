"""MCP over stdio where every line gets an answer: a malformed one is answered with a JSON-RPC error.

The SDK's stdio transport drops a line it cannot parse or validate and answers nothing, so a
client that sent it waits forever. Here each line is checked before the SDK sees it, with the
same validator the SDK uses (so whatever passes, the SDK accepts), and a bad one is answered:

- not JSON, not UTF-8, a lone UTF-16 surrogate (``"\\ud800"``), a number too long to convert,
  nesting too deep, or a line over :data:`MAX_LINE_BYTES`: Parse error, ``-32700``;
- JSON that is not one JSON-RPC 2.0 message, a batch array included (MCP 2025-06-18 removed
  batching): Invalid Request, ``-32600``.

Every answer carries the request's ``id`` whenever it can be read, so the client stops waiting
for that id instead of running into its own timeout. The id is read by a small lenient scanner
(:func:`read_id`) that walks the top-level members of the object without parsing their values
(nesting is skipped by counting brackets, never by recursion) and stops at the first thing it
cannot read: so an id is found before invalid UTF-8 later in the line, before nesting too deep
to parse, before a truncation, and in the first :data:`HEAD_BYTES` kept of a line over the cap
(a client writes ``jsonrpc``, ``id`` and ``method`` before ``params``). It is echoed only for a
request (a ``method`` key was read): a malformed response's id is the server's own.

An id that is there but cannot be written back unchanged is *unreadable*, and the answer's id is
``null`` as JSON-RPC 2.0 says, with a message that says so: a string that is not UTF-8 or holds a
lone surrogate, and an integer longer than Python converts (4,300 digits). Such an id comes only
from a hand-made client: the MCP SDK's client numbers its requests 0, 1, 2, … and matches an
answer to a pending request by that integer (a numeric string is matched as the integer it
spells), so an integer id written back as it came is what lets a client match, and echoing a
5,000-digit id as a string would match nothing anyway. An id that is not a string or an integer
(``null``, ``1.5``, ``true``, ``[..]``) is not an id; the answer to it carries ``null`` too.

A blank line is not a message and is skipped. The server keeps serving after each bad line;
stdout carries nothing but protocol (the SDK points the process's own stdout at stderr while
serving, and stdin at the null device).
"""

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import IO, Any, cast

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from kbseek.server.http import BATCH_REFUSED, MAX_BODY_BYTES, NOT_ONE_MESSAGE

log = logging.getLogger(__name__)

MAX_LINE_BYTES = MAX_BODY_BYTES
"""The longest message line read (the same cap as an HTTP body); a longer one is answered with a
parse error and skipped to its end, never held whole in memory."""
_DRAIN_CHUNK = 64 * 1024
HEAD_BYTES = 64 * 1024
"""How much of a line over the cap is kept, to read its id from."""

RequestId = int | str


class LineTooLong(Exception):
    """A line longer than the cap: its bytes were read and dropped up to the next newline, but for
    its first :data:`HEAD_BYTES` (``head``), which usually hold the id."""

    def __init__(self, head: bytes = b"") -> None:
        super().__init__(f"a line over the cap, starting {head[:40]!r}")
        self.head = head


def read_line(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> bytes | None:
    """One line with its newline, ``None`` at end of input; :class:`LineTooLong` past ``limit`` bytes."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    head = line[:HEAD_BYTES]
    while not line.endswith(b"\n"):  # over the cap: skip to the end of the line, a chunk at a time
        line = stream.readline(_DRAIN_CHUNK)
        if not line:
            break
    raise LineTooLong(head)


def check_line(line: bytes) -> SessionMessage | JSONRPCError | None:
    """The message on one line, the error that answers it, or ``None`` for a blank line."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return refusal(PARSE_ERROR, "Parse error: the line is not UTF-8 text", line)
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        problems = exc.errors(include_url=False, include_input=False)
        if any(p["type"] == "json_invalid" for p in problems):
            detail = next(p["msg"] for p in problems if p["type"] == "json_invalid").removeprefix(
                "Invalid JSON: "
            )
            return refusal(PARSE_ERROR, f"Parse error: {detail}", line)
        if line.lstrip().startswith(b"["):
            return _error(INVALID_REQUEST, BATCH_REFUSED, None)
        return refusal(INVALID_REQUEST, NOT_ONE_MESSAGE, line)
    if isinstance(message, JSONRPCNotification) and read_id(line).present:
        # The validator takes {"id": null | true | 1.5 | [..], "method": ...} for a notification, which
        # is never answered, so the client would wait for ever: an id that is there must be usable.
        return _error(INVALID_REQUEST, "Invalid Request: an id must be a string or an integer", None)
    return SessionMessage(message)


def refusal(code: int, message: str, line: bytes) -> JSONRPCError:
    """The error answering ``line`` (whole, or the head of one over the cap): with the request's id
    when it can be read, else ``null`` and, if the id is there but unreadable, a message saying so."""
    found = read_id(line)
    if found.unreadable is not None:
        message = f"{message} (the id is unreadable: {found.unreadable}; this answer's id is null)"
    return _error(code, message, found.answer)


@dataclass
class IdReading:
    """What :func:`read_id` found in a line."""

    present: bool = False
    """An ``"id"`` member was there (whatever its value)."""
    id: RequestId | None = None
    """Its value, when it is a string or an integer that can be written back unchanged."""
    unreadable: str | None = None
    """Why an id that is there cannot be written back, when that is so."""
    method: bool = False
    """A ``"method"`` key was read: the line is a request (or notification), not a response."""

    @property
    def answer(self) -> RequestId | None:
        """The id to answer with: a request's own (a malformed response's id is the server's)."""
        return self.id if self.method else None


_WS = re.compile(rb"[ \t\r\n]+")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_INTEGER = re.compile(rb"-?(?:0|[1-9][0-9]*)")
_SCALAR = re.compile(rb'[^ \t\r\n,:\[\]{}"]+')
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]+|[\]}]+|"', re.DOTALL)
"""In a nested value: a whole string, a run of openings, a run of closings, or a string left open."""


def read_id(data: bytes) -> IdReading:
    """The id of the JSON object ``data`` starts with, read without parsing the rest.

    Walks the top-level members in order, skipping each value (nested ones by counting brackets,
    in linear time whatever the depth), until it has read both the id and a ``"method"`` key, or
    up to the first thing it cannot read: invalid JSON, or the end of ``data`` in the middle of a
    member (a truncated line or the head of one over the cap). An id counts once its value is
    whole, so a number cut short is never read as a smaller one; a ``"method"`` key counts once
    read, its value however long. A client writes the id near the start, so the walk is short.
    """
    found = IdReading()
    pos = _after_ws(data, 0)
    if not data.startswith(b"{", pos):
        return found
    pos += 1
    while True:
        key = _STRING.match(data, _after_ws(data, pos))
        if key is None:
            return found
        pos = _after_ws(data, key.end())
        if not data.startswith(b":", pos):
            return found
        pos = _after_ws(data, pos + 1)
        name = _key_name(key.group())
        found.method |= name == "method"  # the key says request, whatever its value turns out to be
        if name == "id":
            found.present = True
            end = _read_id_value(data, pos, found)
        else:
            end = _skip_value(data, pos)
        if end is None or (found.present and found.method):
            return found
        pos = _after_ws(data, end)
        if not data.startswith(b",", pos):
            return found
        pos += 1


def _after_ws(data: bytes, pos: int) -> int:
    space = _WS.match(data, pos)
    return pos if space is None else space.end()


def _key_name(raw: bytes) -> str | None:
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8", "replace")
    try:
        name = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    return name if isinstance(name, str) else None


def _read_id_value(data: bytes, pos: int, found: IdReading) -> int | None:
    """Read the id's value at ``pos`` into ``found``; where the value ends, ``None`` if it does not."""
    found.id = found.unreadable = None
    if data.startswith(b'"', pos):
        token = _STRING.match(data, pos)
        if token is None:
            return None
        found.id, found.unreadable = _string_id(token.group())
        return token.end()
    number = _INTEGER.match(data, pos)
    if number is None or data[number.end() : number.end() + 1] in b".eE0123456789":
        return _skip_value(data, pos)  # not an integer (or cut short): not an id, or not whole
    digits = number.group().lstrip(b"-")
    try:
        found.id = int(number.group())
    except ValueError:  # longer than int() converts (sys.get_int_max_str_digits)
        limit = sys.get_int_max_str_digits()
        found.unreadable = f"an integer of {len(digits):,} digits, longer than the {limit:,} read"
    return number.end()


def _string_id(token: bytes) -> tuple[str | None, str | None]:
    try:
        value = json.loads(token.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "a string that is not UTF-8 text"
    except ValueError:
        return None, "a string that is not valid JSON"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None, "a string holding a lone UTF-16 surrogate"
    return value, None


def _skip_value(data: bytes, pos: int) -> int | None:
    """Where the JSON value at ``pos`` ends; ``None`` if it is cut off or not JSON."""
    if data.startswith(b'"', pos):
        token = _STRING.match(data, pos)
        return None if token is None else token.end()
    if data.startswith((b"[", b"{"), pos):
        depth = 0
        while (token := _STRUCTURE.search(data, pos)) is not None:
            run = token.group()
            pos = token.end()
            if run[:1] == b'"':
                if len(run) == 1:
                    return None  # a string left open
            elif run[:1] in b"[{":
                depth += len(run)
            elif len(run) >= depth:
                return token.start() + depth
            else:
                depth -= len(run)
        return None
    scalar = _SCALAR.match(data, pos)
    if scalar is None or scalar.end() == len(data):
        return None  # nothing there, or cut off where it might have gone on
    return scalar.end()


def _error(code: int, message: str, rid: RequestId | None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


class CheckedLines:
    """The lines the SDK's stdio transport reads: only valid messages reach it; every other line
    is answered here, on the transport's own write stream, once :meth:`answer_on` has given it."""

    def __init__(self, stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> None:
        self._stream = stream
        self._limit = limit
        self._writer: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        self._writer = write_stream
        self._ready.set()

    def __aiter__(self) -> "CheckedLines":
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anyio.to_thread.run_sync(self._next_line, abandon_on_cancel=True)
            if line is None:
                raise StopAsyncIteration
            if isinstance(line, JSONRPCError):
                await self._answer(line)
                continue
            return line

    def _next_line(self) -> str | JSONRPCError | None:
        """The next valid message line, the error answering the next bad one, or ``None`` at the end
        of input; in a worker thread, so that neither reading nor checking holds up the server."""
        while True:
            try:
                line = read_line(self._stream, self._limit)
            except LineTooLong as too_long:
                return refusal(
                    PARSE_ERROR, f"Parse error: the line is over {self._limit} bytes", too_long.head
                )
            if line is None:
                return None
            checked = check_line(line)
            if checked is None:
                continue
            if isinstance(checked, JSONRPCError):
                return checked
            return line.decode("utf-8")

    async def _answer(self, error: JSONRPCError) -> None:
        log.info("stdio: answered a malformed message with %s (%s)", error.error.code, error.error.message)
        await self._ready.wait()
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._writer.send(SessionMessage(error))


@contextmanager
def _claimed_stdin() -> Iterator[IO[bytes]]:
    """The wire's stdin on a private descriptor, fd 0 pointed at the null device while serving (so
    nothing else in the process, or a child, reads protocol bytes); in place if that cannot be done."""
    try:
        private = os.dup(0)
    except OSError:
        yield sys.stdin.buffer
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(private)
        yield sys.stdin.buffer
        return
    # closefd=False: a worker thread can still be blocked reading it when serving ends
    stream = os.fdopen(private, "rb", buffering=_DRAIN_CHUNK, closefd=False)
    try:
        yield stream
    finally:
        with suppress(OSError):
            os.dup2(private, 0)


@asynccontextmanager
async def checked_stdio(stream: IO[bytes]) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport (its stdout handling unchanged) reading :class:`CheckedLines`."""
    lines = CheckedLines(stream)
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read_stream, write_stream):
        lines.answer_on(write_stream)
        yield read_stream, write_stream


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin ends."""

    async def serve() -> None:
        lowlevel = server._lowlevel_server
        with _claimed_stdin() as stream:
            async with checked_stdio(stream) as (read_stream, write_stream):
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(serve)
