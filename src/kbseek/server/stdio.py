"""MCP over stdio where every line gets an answer: a malformed one is answered with a JSON-RPC error.

The SDK's stdio transport drops a line it cannot parse or validate and answers nothing, so a
client that sent it waits forever. Here each line is checked before the SDK sees it, with the
same validator the SDK uses (so whatever passes, the SDK accepts), and a bad one is answered:

- not JSON, not UTF-8, a lone UTF-16 surrogate (``"\\ud800"``), a number too long to convert,
  nesting too deep, or a line over :data:`MAX_LINE_BYTES`: Parse error, ``-32700``;
- JSON that is not one JSON-RPC 2.0 message, a batch array included (MCP 2025-06-18 removed
  batching): Invalid Request, ``-32600``.

The answer carries the message's ``id`` when one can be read from it (so the client stops
waiting for that id), else ``null`` as JSON-RPC 2.0 says. A blank line is not a message and is
skipped. The server keeps serving after each bad line; stdout carries nothing but protocol (the
SDK points the process's own stdout at stderr while serving, and stdin at the null device).
"""

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
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

RequestId = int | str


class LineTooLong(Exception):
    """A line longer than the cap: its bytes were read and dropped up to the next newline."""


def read_line(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> bytes | None:
    """One line with its newline, ``None`` at end of input; :class:`LineTooLong` past ``limit`` bytes."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    while not line.endswith(b"\n"):  # over the cap: skip to the end of the line, a chunk at a time
        line = stream.readline(_DRAIN_CHUNK)
        if not line:
            break
    raise LineTooLong


def check_line(line: bytes) -> SessionMessage | JSONRPCError | None:
    """The message on one line, the error that answers it, or ``None`` for a blank line."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return _error(PARSE_ERROR, "Parse error: the line is not UTF-8 text", None)
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        problems = exc.errors(include_url=False, include_input=False)
        if any(p["type"] == "json_invalid" for p in problems):
            detail = next(p["msg"] for p in problems if p["type"] == "json_invalid").removeprefix(
                "Invalid JSON: "
            )
            return _error(PARSE_ERROR, f"Parse error: {detail}", _lenient_id(text))
        return _invalid_request(text)
    if isinstance(message, JSONRPCNotification) and _has_id(text):
        # The validator takes {"id": null | true | 1.5 | [..], "method": ...} for a notification, which
        # is never answered, so the client would wait for ever: an id that is there must be usable.
        return _error(INVALID_REQUEST, "Invalid Request: an id must be a string or an integer", None)
    return SessionMessage(message)


def _has_id(text: str) -> bool:
    value = _lenient_parse(text)
    return isinstance(value, dict) and "id" in value


def _invalid_request(text: str) -> JSONRPCError:
    value = _lenient_parse(text)
    if isinstance(value, list):
        return _error(INVALID_REQUEST, BATCH_REFUSED, None)
    return _error(INVALID_REQUEST, NOT_ONE_MESSAGE, _request_id(value))


def _lenient_parse(text: str) -> Any:
    """Python's own parse, for reading an id out of a message the validator refused; ``None`` if
    it cannot (too deep, a number too long for ``int``, not JSON)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _lenient_id(text: str) -> RequestId | None:
    return _request_id(_lenient_parse(text))


def _request_id(value: Any) -> RequestId | None:
    """The id to answer with: a request's own, when it is a usable one. A malformed response's id
    is the server's own request id, not the client's, so it is not echoed."""
    if not isinstance(value, dict) or "method" not in value:
        return None
    rid = value.get("id")
    if isinstance(rid, bool):
        return None
    if isinstance(rid, int):
        return rid
    if isinstance(rid, str):
        try:
            rid.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate cannot be written back out
            return None
        return rid
    return None


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
            try:
                line = await anyio.to_thread.run_sync(
                    read_line, self._stream, self._limit, abandon_on_cancel=True
                )
            except LineTooLong:
                await self._answer(
                    _error(PARSE_ERROR, f"Parse error: the line is over {self._limit} bytes", None)
                )
                continue
            if line is None:
                raise StopAsyncIteration
            checked = check_line(line)
            if checked is None:
                continue
            if isinstance(checked, JSONRPCError):
                await self._answer(checked)
                continue
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
