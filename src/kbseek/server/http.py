"""Streamable HTTP: one warm server for several MCP hosts, behind a small ASGI guard.

The guard answers ``/healthz`` and refuses, before the SDK sees the request:
a ``Host`` or ``Origin`` not on the allow-lists (DNS-rebinding protection,
``403`` naming the header without echoing it), and a missing bearer token when
one is configured (``401``). Body size (``413``) and the number of open
sessions are capped by the SDK; its "too many sessions" answer is given as
``429`` with ``Retry-After`` so clients back off instead of treating it as a
server fault.

``/ui`` and ``/api/*`` (the web page, ``server/web.py``) go to their own app,
offered to loopback clients only unless the policy says otherwise; the token,
when set, guards ``/api`` as it guards ``/mcp``. A browser opening the bare
address (``GET /``) is sent to ``/ui`` under that same policy, rather than
answered with a 404 that looks like a broken server.

Sign-in (named static tokens, OAuth: ``server/auth/``) is one
:class:`~kbseek.server.auth.gate.Gate` wrapped around ``/mcp`` and ``/api/*``, outside everything
else this module does to those routes' answers; it also answers the RFC 9728 metadata's paths. When
the page signs people in, its ``/auth/*`` routes are the gate's too, offered under the page's
policy, and ``/api/*`` (never ``/mcp``) also takes the page's session cookie.

A POST to ``/mcp`` that is JSON but not one JSON-RPC message (a batch array among them: MCP
2025-06-18 removed batching) is answered ``400`` with Invalid Request (``-32600``), not the SDK's
Invalid params with a validator dump; what is not JSON the SDK answers with Parse error
(``-32700``) itself.

The connection's own edges (deadlines, the connection cap, the size of a request's head) are
``server/connection.py``'s, which serves this app (:func:`~kbseek.server.connection.serve_http`).

Host names are case-insensitive (RFC 9110, RFC 3986): ``Host`` and ``Origin`` are compared with the
allow-lists with ASCII letters folded to lower case, so ``LOCALHOST:8000`` is ``localhost:8000``;
the port, and everything else, must match exactly.
"""

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbseek.errors import ConfigError
from kbseek.folding import ascii_lower

if TYPE_CHECKING:  # the CLI reads this module's defaults without loading the SDK
    from mcp.server.mcpserver import MCPServer

    from kbseek.server.auth.gate import Gate

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The addresses ``serve --http`` binds without ``--allow-remote``."""
MAX_BODY_BYTES = 1024 * 1024
MAX_SESSIONS = 64
RETRY_AFTER_S = 5
WITHHELD = "not ready; the server's log says why"
"""``/readyz``'s reason where collections are shown by group: the probe is anonymous, and a reason
such as ``hr: the index is not built`` would name a collection to anyone."""

Readiness = Callable[[], "str | None"]
"""Whether the server can serve now: ``None``, or why not (``KnowledgeBase.readiness``)."""
SESSION_IDLE_S = 600.0
"""A session untouched this long is closed: many clients drop their connection without ending the
session, and without this the session cap would fill up and lock every new host out."""
HEADER_TIMEOUT_S = 10.0
"""Time for a request line and headers to arrive, from the connection opening or the last answer."""
BODY_TIMEOUT_S = 30.0
"""Time for a request body to arrive once its headers have (a body is at most ``MAX_BODY_BYTES``)."""
KEEP_ALIVE_S = 5
"""An idle kept-alive connection is closed after this many seconds."""
MAX_CONNECTIONS = 128
"""Open connections at once: two per session at the session cap (a POST and the GET stream)."""


@dataclass(frozen=True)
class HttpPolicy:
    port: int
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    token: str | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    max_sessions: int = MAX_SESSIONS
    session_idle_s: float = SESSION_IDLE_S
    ui_remote: bool = False
    """Offer the web page to clients other than this machine."""
    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    keep_alive_s: int = KEEP_ALIVE_S
    max_connections: int = MAX_CONNECTIONS

    @classmethod
    def from_flags(
        cls, *, host: str, port: int, allow_remote: bool = False, allow_hosts: tuple[str, ...] = (),
        allow_origins: tuple[str, ...] = (), token_env: str | None = None, max_sessions: int = MAX_SESSIONS,
        max_body_bytes: int = MAX_BODY_BYTES, ui_allow_remote: bool = False,
        environ: Mapping[str, str] = os.environ,
    ) -> "HttpPolicy":  # fmt: skip
        """The policy ``serve --http`` runs under, from its flags.

        Loopback names at ``port`` are always allowed as Host and Origin, besides ``allow_hosts``
        and ``allow_origins``; the token is read from the variable ``token_env`` names. Raises
        :class:`~kbseek.errors.ConfigError` for a non-loopback ``host`` without ``allow_remote``,
        and for a ``token_env`` that is empty or unset.
        """
        if not is_loopback(host) and not allow_remote:
            raise ConfigError(f"--host {host} is not a loopback address; pass --allow-remote to bind it")
        token = None
        if token_env:
            token = environ.get(token_env)
            if not token:
                raise ConfigError(f"--token-env {token_env}: that environment variable is empty or unset")
        return cls(
            port=port,
            allowed_hosts=(*(f"{n}:{port}" for n in LOOPBACK_NAMES), *allow_hosts),
            allowed_origins=(*(f"http://{n}:{port}" for n in LOOPBACK_NAMES), *allow_origins),
            token=token, max_body_bytes=max_body_bytes, max_sessions=max_sessions, ui_remote=ui_allow_remote,
        )  # fmt: skip

    def hosts(self) -> set[str]:
        return set(self.allowed_hosts) or {f"{n}:{self.port}" for n in LOOPBACK_NAMES}

    def origins(self) -> set[str]:
        return set(self.allowed_origins) or {f"http://{n}:{self.port}" for n in LOOPBACK_NAMES}


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine."""
    return host in LOOPBACK_HOSTS


def mcp_url(host: str, port: int) -> str:
    """Where hosts reach the MCP endpoint when the server binds ``host:port`` (IPv6 in brackets)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"


async def _respond(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The ASGI layer in front of the SDK's app."""

    def __init__(
        self, app: ASGIApp, policy: HttpPolicy, web: ASGIApp | None = None, ready: Readiness | None = None,
        gate: "Gate | None" = None,
    ) -> None:  # fmt: skip
        self.gate = gate if gate is not None else _token_gate(policy.token)
        self.app = app
        self.mcp = self._mcp if self.gate is None else self.gate.guard(self._mcp)
        self.web = web
        self.api = web if web is None or self.gate is None else self.gate.guard(web, page=True)
        self.signin = self.gate.browser if self.gate is not None else None
        """The page's sign-in routes (``/auth/*``), when the page signs in (docs/decisions/0056)."""
        self.ready = ready
        self.policy = policy
        self._hosts = {ascii_lower(h) for h in policy.hosts()}
        self._origins = {ascii_lower(o) for o in policy.origins()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if ascii_lower(headers.get("host", "")) not in self._hosts:
            await _respond(
                send, 403, "request refused: the Host header is not allowed (DNS-rebinding protection)"
            )
            return
        origin = headers.get("origin")
        if origin is not None and ascii_lower(origin) not in self._origins:
            await _respond(
                send, 403, "request refused: the Origin header is not allowed (DNS-rebinding protection)"
            )
            return
        path = scope.get("path", "")
        if path == "/healthz":  # liveness: the process answers (a supervisor restarts it if not)
            await _ok(send)
            return
        if path == "/readyz":  # readiness: what it serves can be served now (a load balancer's probe)
            why = await asyncio.to_thread(self.ready) if self.ready is not None else None
            if why is not None and self.gate is not None and self.gate.rules.enabled:
                log.warning("not ready: %s", why)  # the reason may name a collection; the probe is anonymous
                why = WITHHELD
            await _readiness(send, why)
            return
        if self.gate is not None and (metadata := self.gate.metadata(path)) is not None:
            await _serve_metadata(send, metadata)  # RFC 9728: how to sign in, asked before signing in
            return
        page = path == "/" and scope.get("method") in ("GET", "HEAD")  # a browser opened the bare address
        signin = self.signin is not None and path.startswith("/auth/")
        if self.web is not None and (page or signin or path == "/ui" or path.startswith(("/ui/", "/api/"))):
            if not self.policy.ui_remote and not _from_loopback(scope):
                await _respond(
                    send, 403, "the web page is offered to this machine only; "
                    "start the server with --ui-allow-remote to offer it to others",
                )  # fmt: skip
                return
            if page:
                await _redirect(send, "/ui")
                return
            if signin and self.signin is not None:
                await self.signin(scope, receive, send)
                return
            await (self.api if path.startswith("/api/") and self.api else self.web)(scope, receive, send)
            return
        await self.mcp(scope, receive, send)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "POST":
            body = _FirstByte(receive)
            await self.app(scope, body, _sessions_as_429(_envelope_as_invalid_request(send, body)))
            return
        await self.app(scope, receive, _sessions_as_429(send))


def _token_gate(token: str | None) -> "Gate | None":
    """The gate of a policy's one static token (``HttpPolicy.token``), for callers that pass no gate."""
    if token is None:
        return None
    from kbseek.server.auth.gate import Gate
    from kbseek.server.auth.settings import AuthConfig, StaticCredential

    return Gate(AuthConfig(static=(StaticCredential("token", token, (AuthConfig.read_scope,)),)))


async def _serve_metadata(send: Send, body: bytes) -> None:
    from kbseek.server.auth.gate import serve_metadata

    await serve_metadata(send, body)


def _from_loopback(scope: Scope) -> bool:
    client = scope.get("client")
    host = client[0] if client else ""
    return host == "::1" or host.startswith("127.") or host == "localhost"


async def _redirect(send: Send, location: str) -> None:
    """307 to the page: the same method, and a person who typed the bare address lands somewhere."""
    body = f'{{"location": "{location}"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 307,
            "headers": [(b"location", location.encode()), (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode())],
        }
    )  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _readiness(send: Send, why: str | None) -> None:
    """200 ``{"ready": true}``, or 503 ``{"ready": false, "reason": …}`` with Retry-After."""
    body = json.dumps({"ready": why is None, **({"reason": why} if why is not None else {})}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if why is not None:
        headers.append((b"retry-after", str(RETRY_AFTER_S).encode()))
    await send({"type": "http.response.start", "status": 200 if why is None else 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _ok(send: Send) -> None:
    body = b'{"status": "ok"}'
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})


def _sessions_as_429(send: Send) -> Send:
    """Turn the SDK's 503 at the session limit into 429 with Retry-After."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 503:
            message = dict(message)
            message["status"] = 429
            message["headers"] = [*message.get("headers", []), (b"retry-after", str(RETRY_AFTER_S).encode())]
        await send(message)

    return wrapped


INVALID_REQUEST = -32600
NOT_ONE_MESSAGE = (
    "Invalid Request: not a JSON-RPC 2.0 request, notification or response object "
    '(a request needs "jsonrpc": "2.0", an "id" that is a string or an integer, '
    'a string "method" and, if present, object "params")'
)
BATCH_REFUSED = (
    "Invalid Request: batches are not supported (MCP removed JSON-RPC batching in 2025-06-18); "
    "send one message at a time"
)


class _FirstByte:
    """The app's ``receive``, noting the first non-blank byte of the request body (``[`` is a batch)."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.first = b""

    async def __call__(self) -> Message:
        message = await self._receive()
        if not self.first and message["type"] == "http.request":
            self.first = bytes(message.get("body", b"")).lstrip()[:1]
        return message


def _envelope_as_invalid_request(send: Send, body: _FirstByte) -> Send:
    """Give the SDK's ``400`` for a JSON body that is not one JSON-RPC message as Invalid Request,
    and its parse error for a lone surrogate in words (:func:`_as_invalid_request`).

    The SDK answers it with Invalid params (``-32602``) and the validator's dump; JSON-RPC 2.0 says
    Invalid Request (``-32600``), and a client is better served by a sentence naming what is wrong.
    Only ``400`` JSON answers are held back to be read; every other answer passes straight on.
    """
    held: list[Message] = []

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 400 and _is_json(message):
            held.append(message)
            return
        if not held or message["type"] != "http.response.body":
            await send(message)
            return
        held.append(message)
        if message.get("more_body"):
            return
        start, *chunks = held
        held.clear()
        raw = b"".join(bytes(chunk.get("body", b"")) for chunk in chunks)
        better = _as_invalid_request(raw, batch=body.first == b"[")
        if better is not None:
            raw = better
            start = dict(start)
            start["headers"] = [
                (k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"
            ] + [(b"content-length", str(len(raw)).encode())]
        await send(start)
        await send({"type": "http.response.body", "body": raw})

    return wrapped


def _is_json(start: Message) -> bool:
    return any(
        k.lower() == b"content-type" and v.split(b";")[0].strip() == b"application/json"
        for k, v in start.get("headers", [])
    )


LONE_SURROGATE = (
    "Parse error: the body holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff without its pair), "
    "which is not text; send the character itself, or both halves of its surrogate pair"
)
_SURROGATE_WORDS = ("surrogate", "end of hex escape")
"""How the SDK's JSON parser words a lone surrogate: ``lone leading surrogate in hex escape``, or
``unexpected end of hex escape`` for a high one at the end of a string (a short ``\\u12`` is
``invalid escape``, which stays as the parser wrote it)."""


def _as_invalid_request(raw: bytes, *, batch: bool) -> bytes | None:
    """The SDK's ``400`` answer reworded, or ``None`` to pass it on as it is: a body that is JSON
    but not one JSON-RPC message is Invalid Request; a lone surrogate's parse error says what it is."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return None
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return None
    text = str(error.get("message", ""))
    if error.get("code") == -32700 and any(w in text for w in _SURROGATE_WORDS):
        code, message = -32700, LONE_SURROGATE
    elif error.get("code") == -32602 and text.startswith("Validation error"):
        code, message = INVALID_REQUEST, BATCH_REFUSED if batch else NOT_ONE_MESSAGE
    else:
        return None
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


def build_http_app(
    server: "MCPServer[Any]", policy: HttpPolicy, web: ASGIApp | None = None, ready: Readiness | None = None,
    gate: "Gate | None" = None,
) -> ASGIApp:  # fmt: skip
    """The SDK's Streamable HTTP app at ``/mcp`` (and the web page, if given) behind our guard.

    The guard does the Host/Origin checks, so the SDK's own copy of them is off. ``ready`` answers
    ``/readyz`` (``KnowledgeBase.readiness``); ``/healthz`` answers whenever the process does.
    ``gate`` checks bearer tokens on ``/mcp`` and ``/api/*`` (``server/auth/``); without one, the
    policy's static token does, if it has one.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        max_request_body_size=policy.max_body_bytes,
        max_sessions=policy.max_sessions,
        session_idle_timeout=policy.session_idle_s,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Guard(app, policy, web, ready, gate)
