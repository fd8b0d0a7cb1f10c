"""Tokens already checked, kept a short while so a caller's next request is not checked again.

A host sends the same access token on every request of a session. Checking a JWT costs a signature
check and two parses (about 0.4 ms, most of it PyJWT reading the token twice); asking the issuer
about an opaque one costs a round trip. Both verifiers keep what a token proved, keyed by a digest
(never the token itself), until the earlier of :data:`KEEP_S` from the check and the token's own
``exp``: a token is never taken past its expiry, and a key the issuer withdraws, or a token it
revokes, stops working within :data:`KEEP_S`. Only a token that passed every check is kept; a
refusal is never kept, so a token the issuer has just made good works at once.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from kbseek.server.auth.identity import KbAccessToken

KEEP_S = 60.0
"""How long a checked token is taken without checking it again, at most."""
ENTRIES = 4096
"""Tokens kept at once; the least recently used go first."""


class VerifiedTokens:
    """A bounded map from a token's digest to the identity it proved, each entry with its deadline."""

    def __init__(self, *, now: Callable[[], float] = time.time) -> None:
        self._now = now
        self._kept: OrderedDict[bytes, tuple[float, KbAccessToken]] = OrderedDict()

    @staticmethod
    def digest(token: str) -> bytes:
        return hashlib.sha256(token.encode()).digest()

    def get(self, digest: bytes) -> KbAccessToken | None:
        """The identity a token proved, while it may still be taken."""
        kept = self._kept.get(digest)
        if kept is None:
            return None
        if kept[0] <= self._now():
            del self._kept[digest]
            return None
        self._kept.move_to_end(digest)
        return kept[1]

    def keep(self, digest: bytes, identity: KbAccessToken) -> None:
        until = self._now() + KEEP_S
        if identity.expires_at is not None:
            until = min(until, identity.expires_at)
        self._kept[digest] = (until, identity)
        self._kept.move_to_end(digest)
        while len(self._kept) > ENTRIES:
            self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)
