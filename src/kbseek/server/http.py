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
"""

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI reads this module's defaults without loading the SDK
    from mcp.server.mcpserver import MCPServer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MAX_BODY_BYTES = 1024 * 1024
MAX_SESSIONS = 64
RETRY_AFTER_S = 5
SESSION_IDLE_S = 600.0
"""A session untouched this long is closed: many clients drop their connection without ending the
session, and without this the session cap would fill up and lock every new host out."""


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

    def hosts(self) -> set[str]:
        return set(self.allowed_hosts) or {f"{n}:{self.port}" for n in LOOPBACK_NAMES}

    def origins(self) -> set[str]:
        return set(self.allowed_origins) or {f"http://{n}:{self.port}" for n in LOOPBACK_NAMES}


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

    def __init__(self, app: ASGIApp, policy: HttpPolicy, web: ASGIApp | None = None) -> None:
        self.app = app
        self.web = web
        self.policy = policy
        self._hosts = policy.hosts()
        self._origins = policy.origins()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host", "") not in self._hosts:
            await _respond(
                send, 403, "request refused: the Host header is not allowed (DNS-rebinding protection)"
            )
            return
        origin = headers.get("origin")
        if origin is not None and origin not in self._origins:
            await _respond(
                send, 403, "request refused: the Origin header is not allowed (DNS-rebinding protection)"
            )
            return
        path = scope.get("path", "")
        if path == "/healthz":
            await _ok(send)
            return
        page = path == "/" and scope.get("method") in ("GET", "HEAD")  # a browser opened the bare address
        if self.web is not None and (page or path == "/ui" or path.startswith(("/ui/", "/api/"))):
            if not self.policy.ui_remote and not _from_loopback(scope):
                await _respond(
                    send, 403, "the web page is offered to this machine only; "
                    "start the server with --ui-allow-remote to offer it to others",
                )  # fmt: skip
                return
            if page:
                await _redirect(send, "/ui")
                return
            if path.startswith("/api/") and not self._authorized(headers):
                await _unauthorized(send)
                return
            await self.web(scope, receive, send)
            return
        if not self._authorized(headers):
            await _unauthorized(send)
            return
        await self.app(scope, receive, _sessions_as_429(send))

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.policy.token is None:
            return True
        expected = f"Bearer {self.policy.token}"
        return hmac.compare_digest(headers.get("authorization", "").encode(), expected.encode())


def _from_loopback(scope: Scope) -> bool:
    client = scope.get("client")
    host = client[0] if client else ""
    return host == "::1" or host.startswith("127.") or host == "localhost"


async def _unauthorized(send: Send) -> None:
    await _respond(
        send, 401, "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
        [(b"www-authenticate", b"Bearer")],
    )  # fmt: skip


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


def build_http_app(server: "MCPServer[Any]", policy: HttpPolicy, web: ASGIApp | None = None) -> ASGIApp:
    """The SDK's Streamable HTTP app at ``/mcp`` (and the web page, if given) behind our guard.

    The guard does the Host/Origin checks, so the SDK's own copy of them is off.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        max_request_body_size=policy.max_body_bytes,
        max_sessions=policy.max_sessions,
        session_idle_timeout=policy.session_idle_s,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Guard(app, policy, web)
