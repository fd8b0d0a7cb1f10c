"""The step in front of ``/mcp`` and ``/api/*``: a token checked, the caller attached, or a refusal.

Every request to a guarded route passes here before anything else runs, so a call without a valid
token costs no store query and no knowledge-base slot. The order:

1. no ``Authorization: Bearer`` header: on ``/api/*`` of a server whose page signs in (``browser``),
   the page's session cookie, if it names a live session, stands for the access token that session
   holds, which is checked from step 3 on as a header's would be; otherwise ``401`` with the
   challenge (no error code, as RFC 6750 asks), and on ``/api/*`` where to sign in. ``/mcp`` takes
   no cookie: hosts send bearer tokens;
2. a static token, compared with every named one (``static``);
3. a JWT, checked against the issuer's keys (``jwt_verifier``); a token that is not one, asked of
   the issuer's introspection endpoint when that is configured (``introspection``);
4. a refused token: ``401 invalid_token``, its reason logged; the issuer unreachable: ``503`` with
   ``Retry-After``, since signing in again would not help;
5. a token without the read scope: ``403 insufficient_scope``;
6. the collections the caller may read (``collections``); none at all: ``403``, naming none.

The caller of an admitted request is kept as ``identity`` describes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbseek.server.auth.browser import LOGIN_PATH, BrowserSignIn
from kbseek.server.auth.collections import CollectionRules
from kbseek.server.auth.identity import KbAccessToken, attach, bound
from kbseek.server.auth.introspection import IntrospectionVerifier
from kbseek.server.auth.jwks import KeySet
from kbseek.server.auth.jwt_verifier import JwtVerifier, looks_like_jwt
from kbseek.server.auth.metadata import challenge, document, metadata_paths
from kbseek.server.auth.reasons import Reason, Rejected
from kbseek.server.auth.sessions import SESSION_COOKIE, SessionStore
from kbseek.server.auth.settings import AuthConfig
from kbseek.server.auth.static import StaticTokens

if TYPE_CHECKING:
    from kbseek.server.audit.record import Recorder

log = logging.getLogger("kbseek.auth")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RETRY_AFTER_S = 5
NO_TOKEN = "missing or wrong bearer token: send 'Authorization: Bearer <token>'"
NO_COLLECTION = "the token grants no collection on this server: ask its operator for access"
NOT_SIGNED_IN = f"not signed in: sign in at {LOGIN_PATH}, or send 'Authorization: Bearer <token>'"


@dataclass(frozen=True)
class Refusal:
    """An answer instead of the route: its status, challenge and sentence."""

    status: int
    challenge: str | None
    message: str
    reason: Reason | None = None
    identity: KbAccessToken | None = None
    """The caller, when the token was good but lacked the scope."""
    sign_in: str | None = None
    """Where a person signs in, told to the page's script (the page signs in, and this is ``/api``)."""


@dataclass(frozen=True)
class Held:
    """A live page session a request's cookie named: the ids it came with, and the token it holds."""

    ids: tuple[str, ...] = field(repr=False)
    token: str = field(repr=False)


class Gate:
    """Checks bearer tokens for the routes it guards, as :class:`AuthConfig` says."""

    def __init__(
        self, config: AuthConfig, *, jwt: JwtVerifier | None = None,
        introspection: IntrospectionVerifier | None = None, served: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.config = config
        self.rules = CollectionRules(config.readers, served=served, claim=config.groups_claim)
        """Which collections each caller reads; ``served`` names the server's, in its order."""
        self.audit: Recorder | None = None
        """The record of who read what; a refused token is recorded there too (docs/decisions/0055)."""
        self.static = StaticTokens(config.static)
        self.jwt = jwt
        self.introspection = introspection
        self.sessions: SessionStore | None = None
        self.browser: BrowserSignIn | None = None
        """The page's sign-in (``/auth/*``), when ``[auth].page_client_id`` is set."""
        issuer, resource = config.issuer, config.resource
        if issuer is not None and resource is not None:
            if self.jwt is None:
                keys = KeySet(issuer, refetch_s=config.key_refetch_s)
                self.jwt = JwtVerifier(
                    issuer,
                    resource,
                    algorithms=config.algorithms,
                    clock_skew_s=config.clock_skew_s,
                    keys=keys,
                    audiences=config.audiences,
                )
            if self.introspection is None and config.introspection is not None:
                self.introspection = IntrospectionVerifier(
                    issuer, resource, config.introspection, clock_skew_s=config.clock_skew_s,
                    audiences=config.audiences,
                )  # fmt: skip
            self._document: bytes | None = document(config)
            self._paths = metadata_paths(resource)
            if config.page is not None and self.jwt is not None:
                self.sessions = SessionStore()
                self.browser = BrowserSignIn(
                    config, config.page, check=self._verify_issued, keys=self.jwt.keys, sessions=self.sessions
                )
        else:
            self._document, self._paths = None, frozenset()

    @classmethod
    def build(cls, config: AuthConfig, *, served: tuple[str, ...] = ()) -> Gate | None:
        """The gate ``config`` asks for, for a server holding the collections ``served``; ``None``
        for a server that asks for no token."""
        return cls(config, served=served) if config.enabled else None

    def metadata(self, path: str) -> bytes | None:
        """The RFC 9728 document when ``path`` is one of its well-known paths, else ``None``."""
        return self._document if path in self._paths else None

    async def admit(
        self, authorization: str | None, session: Held | None = None, *, page: bool = False
    ) -> KbAccessToken | Refusal:
        """The caller ``authorization`` (the header's value) proves, or else ``session`` (a page
        session the request's cookie named), or the answer to give. ``page``: the route is one the
        page's script calls, told where to sign in when the page signs in."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        bearer = scheme.lower() == "bearer" and bool(token)
        sign_in = LOGIN_PATH if page and self.browser is not None else None
        no_token = NOT_SIGNED_IN if sign_in else NO_TOKEN
        if not bearer and session is None:
            return Refusal(401, challenge(self.config), no_token, sign_in=sign_in)
        what = "bearer token" if bearer else "page session"
        try:
            identity = await (
                self.verify(token) if session is None or bearer else self._verify_issued(session.token)
            )
        except Rejected as refused:
            log.warning("%s refused (%s): %s", what, refused.reason.value, refused.detail)
            if refused.reason is Reason.UNAVAILABLE:
                message = (
                    "the token cannot be checked now: the identity provider is unreachable; try again shortly"
                )
                return Refusal(503, None, message, refused.reason)
            if not bearer and session is not None and self.sessions is not None:
                self.sessions.close(*session.ids)  # its token will not get better
            return Refusal(
                401, challenge(self.config, error="invalid_token"), no_token, refused.reason, sign_in=sign_in
            )
        needed = self.missing_scope(identity)
        if needed is not None:
            log.warning(
                "%s refused (%s): %s lacks the scope %s", what, Reason.SCOPE.value, _who(identity), needed
            )
            return Refusal(
                403, challenge(self.config, error="insufficient_scope", scope=needed),
                f"the token lacks the scope {needed}", Reason.SCOPE, identity,
            )  # fmt: skip
        identity = identity.model_copy(update={"may_write": self.config.write_scope in identity.scopes})
        if not self.rules.enabled:
            return identity
        collections = self.rules.readable(identity)
        if collections == ():
            log.warning(
                "%s refused (%s): %s has no group [auth.collections] names",
                what, Reason.NO_COLLECTION.value, _who(identity),
            )  # fmt: skip
            return Refusal(403, None, NO_COLLECTION, Reason.NO_COLLECTION, identity)
        return identity.model_copy(update={"collections": collections})

    def held(self, scope: Scope) -> Held | None:
        """The live page session the request's cookie names, if the page signs in and it names one."""
        if self.browser is None:
            return None
        ids = tuple(self.browser.cookies.read(scope, SESSION_COOKIE))
        session = self.browser.sessions.get(*ids) if ids else None
        return Held(ids, session.token) if session is not None else None

    async def verify(self, token: str) -> KbAccessToken:
        """The identity ``token`` carries, checked as :meth:`admit` checks it (``kbseek doctor --auth
        --check-token`` asks this too); :class:`Rejected` naming the check that failed."""
        static = self.static.identity(token)
        if static is not None:
            return static
        return await self._verify_issued(token)

    async def _verify_issued(self, token: str) -> KbAccessToken:
        """A token from the issuer checked: a header's, a page session's, and the page's sign-in's."""
        if self.jwt is not None and looks_like_jwt(token):
            return await self.jwt.check(token)
        if self.introspection is not None and not looks_like_jwt(token):
            return await self.introspection.check(token)
        raise Rejected(Reason.UNKNOWN_TOKEN, "no static token matches it and nothing else can check it")

    def missing_scope(self, identity: KbAccessToken) -> str | None:
        """The scope ``identity`` lacks to read (``403``), or ``None`` when it may."""
        return None if self.config.read_scope in identity.scopes else self.config.read_scope

    def guard(self, app: ASGIApp, *, page: bool = False) -> ASGIApp:
        """``app`` behind this gate: refused requests never reach it; admitted ones carry their caller.
        ``page``: the page's ``/api``, which also takes the page's session cookie."""

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            outcome = await self.admit(_authorization(scope), self.held(scope) if page else None, page=page)
            if isinstance(outcome, Refusal):
                if self.audit is not None and outcome.reason is not None:  # a token was sent, and refused
                    self.audit.record(outcome.identity, tool=str(scope.get("path", "")), outcome="refused")
                await refuse(send, outcome)
                return
            with bound(attach(scope, outcome)):
                await app(scope, receive, send)

        return guarded


def _who(identity: KbAccessToken) -> str:
    if identity.credential is not None:
        return f"the static token {identity.credential!r}"
    return f"client {identity.client_id!r}, subject {identity.subject!r}"


def _authorization(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == b"authorization":
            return bytes(value).decode("latin-1")
    return None


async def refuse(send: Send, refusal: Refusal) -> None:
    """The refusal as kbseek's JSON error answer, with its challenge."""
    answer = {"error": refusal.message, **({"sign_in": refusal.sign_in} if refusal.sign_in else {})}
    body = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if refusal.challenge is not None:
        headers.append((b"www-authenticate", refusal.challenge.encode()))
    if refusal.status == 503:
        headers.append((b"retry-after", str(RETRY_AFTER_S).encode()))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_metadata(send: Send, body: bytes) -> None:
    """The RFC 9728 document; any origin may read it (a browser-based host discovers it too)."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"max-age=3600"), (b"access-control-allow-origin", b"*"),
            ],
        }
    )  # fmt: skip
    await send({"type": "http.response.body", "body": body})
