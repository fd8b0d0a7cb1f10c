"""The HTTP connection's edges, below the app: how long a client may take, how many may be
connected, how long a request's head may be; and :func:`serve_http`, which runs the app with them.

:func:`serve_http` runs the app (``server/http.py``) on uvicorn with the connection edges closed
(all in :class:`~kbseek.server.http.HttpPolicy`): the request line and headers must arrive within
``header_timeout_s`` of the connection opening or of the previous answer, else the connection
is closed (with ``408`` if part of a request came); a body must arrive within ``body_timeout_s``
of its headers; an idle kept-alive connection is closed after ``keep_alive_s``; and past
``max_connections`` open connections a new one is answered ``503`` with ``Retry-After`` and
closed at once, so slow or stalled clients cannot hold an unbounded number of descriptors. A
request line and headers must fit in :data:`MAX_HEAD_BYTES` (64 KiB): a longer request line is
answered ``414 URI Too Long``, longer headers ``431 Request Header Fields
Too Large``, and the connection is then closed gracefully, the rest of what the client is
sending read and dropped first (up to ``LINGER_BYTES``, within ``header_timeout_s``), so that the
close does not reset the connection and lose the answer.
"""

import asyncio
import json
import logging
import re
from typing import Any

from kbseek.server.http import MAX_BODY_BYTES, RETRY_AFTER_S, ASGIApp, HttpPolicy

log = logging.getLogger(__name__)


def _raw_answer(status: str, text: str, *headers: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, written before any request is read."""
    body = json.dumps({"error": text}).encode()
    head = [f"HTTP/1.1 {status}", "content-type: application/json", "connection: close", *headers]
    return ("\r\n".join([*head, f"content-length: {len(body)}", "", ""])).encode() + body


REFUSAL_LOG_EVERY_S = 60.0
LINGER_BYTES = 2 * MAX_BODY_BYTES
"""After answering a request refused before it was read whole (``414``, ``431``), how much more of
what the client sends is read and dropped before the connection is closed anyway."""
_REQUEST_TIMEOUT = _raw_answer("408 Request Timeout", "the request did not arrive in time; send it again")
_TOO_MANY_CONNECTIONS = _raw_answer(
    "503 Service Unavailable",
    "too many open connections; retry after a wait",
    f"retry-after: {RETRY_AFTER_S}",
)


_HEAD_END = re.compile(rb"\n\r?\n")
"""The blank line that ends a request line and headers (h11 takes a bare ``\\n`` too)."""


def head_too_large(received: bytes, limit: int) -> bytes | None:
    """The answer refusing a request whose line and headers, begun in ``received``, do not end
    within ``limit`` bytes: ``414`` if the request line does not, else ``431``; ``None`` if they
    do end within it, or might still (``received`` is no longer than ``limit``)."""
    if len(received) <= limit or _HEAD_END.search(received, 0, limit) is not None:
        return None
    if b"\n" not in received[:limit].lstrip(b"\r\n"):
        return _raw_answer(
            "414 URI Too Long",
            f"the URL is too long: the request line and headers must fit in {limit:,} bytes",
        )
    return _raw_answer(
        "431 Request Header Fields Too Large",
        f"the request headers are too large: the request line and headers must fit in {limit:,} bytes",
    )


def edge_protocol(policy: HttpPolicy) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11) with the connection edges of ``policy`` closed.

    uvicorn times out only a kept-alive connection that has gone quiet after an answer: a
    connection that opens and sends nothing, or half a request line and headers, or a body a
    byte at a time, it keeps for ever. Here each connection has one deadline at a time: for
    its headers from when it opens or has been answered, for its body from when the headers are
    in, none while the app works or streams. And one connection past the cap is refused at once.

    A request line and headers must end within h11's buffer size (``h11_max_incomplete_event_size``),
    however the bytes arrive: h11 refuses them only when they are still unfinished past it after
    a read (so a long head read at once passed), and uvicorn then answers ``400`` and closes with
    the rest of the request unread, which resets the connection and usually loses the answer.
    Here they are measured as they come, answered ``414`` or ``431``, and the connection closed
    only once the client has sent the rest (see :data:`LINGER_BYTES`).
    """
    import h11
    from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
    from uvicorn.protocols.http.h11_impl import H11Protocol

    refusals_logged = [-REFUSAL_LOG_EVERY_S]

    class HintedConnection(h11.Connection):
        """h11's connection, noting when a protocol error came while a request line and headers
        were awaited, and the status it hinted at (``431``: they outgrew the buffer)."""

        head_refused_with: int | None = None

        def next_event(self) -> Any:
            awaiting_head = self.their_state is h11.IDLE
            try:
                return super().next_event()
            except h11.RemoteProtocolError as exc:
                self.head_refused_with = exc.error_status_hint if awaiting_head else None
                raise

    class EdgeProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _phase: str | None = None
        _lingering: int | None = None
        """Bytes still to drop after an early answer, once one was given."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            configured = self.config.h11_max_incomplete_event_size
            self._head_limit = DEFAULT_MAX_INCOMPLETE_EVENT_SIZE if configured is None else configured
            self._hinted = HintedConnection(h11.SERVER, self._head_limit)
            self.conn = self._hinted

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > policy.max_connections:
                now = self.loop.time()
                if now - refusals_logged[0] > REFUSAL_LOG_EVERY_S:  # a flood logs a line, not a flood
                    refusals_logged[0] = now
                    log.warning("refusing connections: %d are open (the cap)", policy.max_connections)
                transport.write(_TOO_MANY_CONNECTIONS)
                transport.close()
                return
            self._watch()

        def data_received(self, data: bytes) -> None:
            if self._lingering is not None:  # answered already: drop the rest of the request
                self._lingering -= len(data)
                if self._lingering < 0:
                    self.transport.close()
                return
            super().data_received(data)
            self._watch()

        def handle_events(self) -> None:
            """Measure a request line and headers before h11 reads them, whether they came in one
            read or many, or were already waiting behind a pipelined request."""
            if self._hinted.their_state is h11.IDLE and self._hinted.our_state is h11.IDLE:
                refusal = head_too_large(self._hinted.trailing_data[0], self._head_limit)
                if refusal is not None:
                    self._answer_early(refusal)
                    return
            super().handle_events()

        def send_400_response(self, msg: str) -> None:
            """h11 found a request line and headers too long where :meth:`handle_events` did not
            look (a pipelined request uvicorn reads on in the same pass): the same answer; any
            other broken request keeps uvicorn's ``400``."""
            if self._hinted.head_refused_with == 431 and self._hinted.our_state is h11.IDLE:
                refusal = head_too_large(self._hinted.trailing_data[0], self._head_limit)
                if refusal is not None:
                    self._answer_early(refusal)
                    return
            super().send_400_response(msg)

        def _answer_early(self, answer: bytes) -> None:
            """Answer before the request was read whole, and close without a reset: closing with
            the rest of the request unread would reset the connection and could lose the answer.
            The write side is shut at once (the client reads the answer and then the end); the
            connection is closed when the client has closed its side, past :data:`LINGER_BYTES`
            more, or after the header timeout, whichever comes first."""
            log.info("refused a request: %s", answer.split(b"\r\n", 1)[0].decode())
            self.transport.write(answer)
            self._unset_keepalive_if_required()
            self._disarm()
            self._lingering = LINGER_BYTES
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._deadline = self.loop.call_later(policy.header_timeout_s, self.transport.close)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _watch(self) -> None:
            """Arm the deadline of the phase the client is in: sending headers, a body, or neither."""
            if self._lingering is not None:
                return
            if self.transport.is_closing():
                self._disarm()
                return
            state = self.conn.their_state
            phase = "headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
            if phase == self._phase:
                return
            self._disarm()
            self._phase = phase
            if phase is not None:
                timeout = policy.header_timeout_s if phase == "headers" else policy.body_timeout_s
                self._deadline = self.loop.call_later(timeout, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = None
            self._phase = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            partial = bool(self.conn.trailing_data[0])
            if self._phase == "headers" and partial and self.conn.our_state is h11.IDLE:
                self.transport.write(_REQUEST_TIMEOUT)
            self._phase = None
            self.transport.close()

    return EdgeProtocol


MAX_HEAD_BYTES = 64 * 1024
"""The longest request line and headers together. h11's own default (16 KiB) is shorter than a
search at its query cap: 2,000 Japanese characters are 18,000 bytes percent-encoded in a URL, and
the filters come beside them. A longer head is ``414`` (its request line) or ``431`` (headers)."""


def serve_http(app: ASGIApp, policy: HttpPolicy, host: str) -> None:
    """Serve ``app`` (from :func:`build_http_app`) at ``host:policy.port`` until interrupted."""
    import uvicorn

    uvicorn.run(
        app, host=host, port=policy.port, log_level="warning", http=edge_protocol(policy),
        timeout_keep_alive=policy.keep_alive_s, h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )  # fmt: skip
