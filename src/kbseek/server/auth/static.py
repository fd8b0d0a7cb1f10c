"""Static bearer tokens, each a named credential with its own scopes.

Headless clients and CI send a bearer header and nothing else; they keep working beside OAuth
(or alone, ``--token-env``). Each token has a name, so one can be revoked by removing it alone and a
record of reads can say which was used. The comparison runs over every credential and over digests
of equal length, so neither which one matched nor how long a secret is shows in the time taken.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.settings import StaticCredential


class StaticTokens:
    """The SDK's ``TokenVerifier`` over named static tokens."""

    def __init__(self, credentials: Sequence[StaticCredential]) -> None:
        self._credentials = [(hashlib.sha256(c.secret.encode()).digest(), c) for c in credentials]

    def match(self, token: str) -> StaticCredential | None:
        """The credential whose secret is ``token``, in constant time over them all."""
        offered = hashlib.sha256(token.encode()).digest()
        found = None
        for digest, credential in self._credentials:
            if hmac.compare_digest(offered, digest):
                found = credential
        return found

    def identity(self, token: str) -> KbAccessToken | None:
        credential = self.match(token)
        if credential is None:
            return None
        return KbAccessToken(
            token=token, client_id=credential.name, scopes=list(credential.scopes), method="static",
            credential=credential.name,
        )  # fmt: skip

    async def verify_token(self, token: str) -> KbAccessToken | None:
        return self.identity(token)
