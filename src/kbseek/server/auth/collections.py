"""Which collections a signed-in caller may read, from its groups (``[auth.collections]``).

The rule is decided once per request, by the gate, from the verified token alone: the groups in
its ``groups_claim`` (or, for a static token, ``token:NAME``) are looked up in the table and the
collections of all of them are the caller's. The answer rides on the caller's identity
(``KbAccessToken.collections``) and :func:`readable` turns it into the library the caller sees, so
every surface (tools, resources, prompts, ``/api``) asks one function and none decides alone.

A collection outside the caller's set does not exist for it: not listed, not searched, not
counted, and asked for by name it is refused as a name that never existed
(:meth:`~kbseek.library.Library.only`). A caller left with no collection at all is refused at the
gate with ``403``, before any store query, naming no collection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbseek.auth_spec import TOKEN_PREFIX
from kbseek.errors import ConfigError
from kbseek.library import Library
from kbseek.server.auth.identity import KbAccessToken, current_identity

EVERYONE = "*"
"""As a group: every signed-in caller. As a collection: every collection the server holds."""


def groups_of(claims: dict[str, Any] | None, claim: str) -> list[str]:
    """The groups a token's ``claim`` names: a claim of that exact name, else a dotted path into
    nested claims; a list of strings, or one string taken as one group.

    Exact names come first because providers put URLs in claim names (Auth0 requires a namespace
    such as ``https://example.com/groups``), and a URL has dots that are not a path.
    """
    if not claims:
        return []
    value: Any = claims.get(claim)
    if value is None and "." in claim:
        value = claims
        for part in claim.split("."):
            value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str)]
    return []


class CollectionRules:
    """``[auth.collections]`` checked against the collections a server holds, and applied."""

    def __init__(
        self, readers: Sequence[tuple[str, Sequence[str]]] | None, *, served: Sequence[str], claim: str
    ) -> None:
        self.served = tuple(served)
        self.claim = claim
        self.table: dict[str, frozenset[str]] | None = None
        if readers is None:
            return
        self.table = {}
        for group, names in readers:
            unknown = [n for n in names if n != EVERYONE and n not in self.served]
            if unknown:
                raise ConfigError(
                    f"[auth.collections].{group} names {', '.join(map(repr, unknown))}, which this server "
                    f"does not hold; its collections are {', '.join(self.served)}"
                )
            self.table[group] = frozenset(self.served if EVERYONE in names else names)

    @property
    def enabled(self) -> bool:
        """Whether any caller may be shown fewer collections than the server holds."""
        return self.table is not None

    def readable(self, identity: KbAccessToken) -> tuple[str, ...] | None:
        """The collections ``identity`` may read, in the server's order; ``None``: every one."""
        if self.table is None:
            return None
        allowed: set[str] = set()
        for group in self._groups(identity):
            allowed |= self.table.get(group, frozenset())
        if len(allowed) == len(self.served):
            return None
        return tuple(n for n in self.served if n in allowed)

    def _groups(self, identity: KbAccessToken) -> Iterable[str]:
        yield EVERYONE
        if identity.credential is not None:
            yield TOKEN_PREFIX + identity.credential
        else:
            yield from groups_of(identity.claims, self.claim)


def readable(library: Library) -> Library:
    """``library`` as the caller of the request being served may read it: the whole of it for a
    local server, a caller without rules, or one allowed everything; else only its collections."""
    identity = current_identity()
    if identity is None or identity.collections is None:
        return library
    return library.only(identity.collections)
