"""Who is asking: the identity a verified token carries, kept where the SDK keeps it.

A verifier returns a :class:`KbAccessToken`, the SDK's ``AccessToken`` with two fields more: the
static credential's name and how the token was checked. The gate stores it where the SDK and
Starlette look (docs/decisions/0054):

- ``scope["user"]`` as the SDK's ``AuthenticatedUser`` and ``scope["auth"]`` as Starlette's
  ``AuthCredentials``: the SDK binds an MCP session to the credential that opened it, and a
  Starlette handler reads ``request.user``;
- the SDK's auth context variable, so ``mcp.server.auth.middleware.auth_context.get_access_token()``
  answers inside a tool, a resource or a prompt, and inside an ``/api`` handler's worker thread.

:func:`current_identity` reads it back for kbseek's own code (collections by group and the record
of reads will).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from mcp.server.auth.middleware.auth_context import auth_context_var, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials

Method = Literal["jwt", "introspection", "static"]


class KbAccessToken(AccessToken):
    """A verified token: the SDK's fields (``client_id``, ``subject``, ``scopes``, ``claims``,
    ``expires_at``, ``resource``) and how kbseek took it."""

    method: Method
    credential: str | None = None
    """The static credential's name; ``None`` for a token from the issuer."""
    may_write: bool = False
    """Whether the credential carries the write scope (set by the gate): the tools that change notes
    refuse a caller without it."""
    collections: tuple[str, ...] | None = None
    """The collections the caller may read, set by the gate from ``[auth.collections]``; ``None``:
    every one the server holds (``server/auth/collections.py``)."""

    def __repr__(self) -> str:  # never the token itself, wherever this ends up printed
        return (
            f"KbAccessToken(method={self.method!r}, credential={self.credential!r}, "
            f"client_id={self.client_id!r}, subject={self.subject!r}, scopes={self.scopes!r})"
        )

    __str__ = __repr__


def attach(scope: dict[str, Any] | Any, token: KbAccessToken) -> AuthenticatedUser:
    """Put ``token`` in the ASGI ``scope`` where the SDK and Starlette read it; the user made."""
    user = AuthenticatedUser(token)
    scope["user"] = user
    scope["auth"] = AuthCredentials(token.scopes)
    return user


@contextmanager
def bound(user: AuthenticatedUser) -> Iterator[None]:
    """The SDK's auth context set to ``user`` while the request is served, and reset after."""
    reset = auth_context_var.set(user)
    try:
        yield
    finally:
        auth_context_var.reset(reset)


def current_identity() -> KbAccessToken | None:
    """The caller of the request being served, or ``None`` (stdio, a local server, no sign-in)."""
    token = get_access_token()
    return token if isinstance(token, KbAccessToken) else None
