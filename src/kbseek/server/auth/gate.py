"""The step in front of ``/mcp`` and ``/api/*``: a token checked, the caller attached, or a refusal.

Every request to a guarded route passes here before anything else runs, so a call without a valid
token costs no store query and no knowledge-base slot. The order:

1. no ``Authorization: Bearer`` header: ``401`` with the challenge (no error code, as RFC 6750 asks);
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbseek.server.auth.collections import CollectionRules
from kbseek.server.auth.identity import KbAccessToken, attach, bound
from kbseek.server.auth.introspection import IntrospectionVerifier
from kbseek.server.auth.jwks import KeySet
from kbseek.server.auth.jwt_verifier import JwtVerifier, looks_like_jwt
from kbseek.server.auth.metadata import challenge, document, metadata_paths
from kbseek.server.auth.reasons import Reason, Rejected
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


@dataclass(frozen=True)
class Refusal:
    """An answer instead of the route: its status, challenge and sentence."""

    status: int
    challenge: str | None
    message: str
    reason: Reason | None = None
    identity: KbAccessToken | None = None
    """The caller, when the token was good but lacked the scope."""


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

    async def admit(self, authorization: str | None) -> KbAccessToken | Refusal:
        """The caller ``authorization`` (the header's value) proves, or the answer to give."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return Refusal(401, challenge(self.config), NO_TOKEN)
        try:
            identity = await self.verify(token)
        except Rejected as refused:
            log.warning("bearer token refused (%s): %s", refused.reason.value, refused.detail)
            if refused.reason is Reason.UNAVAILABLE:
                message = (
                    "the token cannot be checked now: the identity provider is unreachable; try again shortly"
                )
                return Refusal(503, None, message, refused.reason)
            return Refusal(401, challenge(self.config, error="invalid_token"), NO_TOKEN, refused.reason)
        needed = self.missing_scope(identity)
        if needed is not None:
            log.warning(
                "bearer token refused (%s): %s lacks the scope %s", Reason.SCOPE.value, _who(identity), needed
            )
            return Refusal(
                403, challenge(self.config, error="insufficient_scope", scope=needed),
                f"the token lacks the scope {needed}", Reason.SCOPE, identity,
            )  # fmt: skip
        if not self.rules.enabled:
            return identity
        collections = self.rules.readable(identity)
        if collections == ():
            log.warning(
                "bearer token refused (%s): %s has no group [auth.collections] names",
                Reason.NO_COLLECTION.value, _who(identity),
            )  # fmt: skip
            return Refusal(403, None, NO_COLLECTION, Reason.NO_COLLECTION, identity)
        return identity.model_copy(update={"collections": collections})

    async def verify(self, token: str) -> KbAccessToken:
        """The identity ``token`` carries, checked as :meth:`admit` checks it (``kbseek doctor --auth
        --check-token`` asks this too); :class:`Rejected` naming the check that failed."""
        static = self.static.identity(token)
        if static is not None:
            return static
        if self.jwt is not None and looks_like_jwt(token):
            return await self.jwt.check(token)
        if self.introspection is not None and not looks_like_jwt(token):
            return await self.introspection.check(token)
        raise Rejected(Reason.UNKNOWN_TOKEN, "no static token matches it and nothing else can check it")

    def missing_scope(self, identity: KbAccessToken) -> str | None:
        """The scope ``identity`` lacks to read (``403``), or ``None`` when it may."""
        return None if self.config.read_scope in identity.scopes else self.config.read_scope

    def guard(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind this gate: refused requests never reach it; admitted ones carry their caller."""

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            outcome = await self.admit(_authorization(scope))
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
    body = json.dumps({"error": refusal.message}).encode()
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
