"""Why a token was refused: one code per check, for the server's log and, later, ``doctor``.

The caller is told only what OAuth says it may be told (``invalid_token``, ``insufficient_scope``):
which check failed helps whoever holds a stolen or forged token as much as the operator. The operator
reads the code and its detail on stderr.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbseek.server.auth.identity import KbAccessToken


class Reason(StrEnum):
    """What failed. The values are stable: logs are searched for them."""

    AUDIENCE = "audience"
    ISSUER = "issuer"
    EXPIRED = "expired"
    NOT_YET_VALID = "not_yet_valid"
    SIGNATURE = "signature"
    ALGORITHM = "algorithm"
    UNKNOWN_KEY = "unknown_key"
    SCOPE = "scope"
    NO_COLLECTION = "no_collection"
    """A good token with the read scope whose groups ``[auth.collections]`` gives no collection."""
    MALFORMED = "malformed"
    INTROSPECTION_INACTIVE = "introspection_inactive"
    UNKNOWN_TOKEN = "unknown_token"
    """No static token matches, and nothing else can check it (no issuer, or no introspection for a
    token that is not a JWT)."""
    UNAVAILABLE = "unavailable"
    """The issuer's metadata, keys or introspection endpoint could not be reached or read: not the
    token's fault, so the caller is asked to retry (``503``) rather than to sign in again."""


class Rejected(Exception):
    """A token refused, with the check that failed and what the operator needs to see about it.

    ``detail`` never holds the token: it names claims and values the issuer chose (``iss``, ``aud``,
    ``kid``), which are not secret.
    """

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


class Checker(ABC):
    """A verifier whose :meth:`check` says why a token is refused, and which is also the SDK's
    ``TokenVerifier``: ``verify_token`` is ``check`` with the reason dropped, written once here."""

    @abstractmethod
    async def check(self, token: str) -> KbAccessToken:
        """The identity ``token`` carries; :class:`Rejected` naming the check that failed."""

    async def verify_token(self, token: str) -> KbAccessToken | None:
        """The SDK's protocol: the token's identity, or ``None``. :meth:`check` says why not."""
        try:
            return await self.check(token)
        except Rejected:
            return None
