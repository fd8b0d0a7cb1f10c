"""Opaque access tokens asked of the issuer (RFC 7662 token introspection).

Some providers' access tokens are not JWTs (Google's, and others' by choice): only the issuer can
say what one means. The server posts it to the introspection endpoint as a client of its own
(HTTP Basic, ``client_secret_basic``) and takes it when the answer is ``active``, names this
resource in ``aud`` (the same rule as for JWTs; an answer without ``aud`` is refused, since nothing
then says the token was made for this server), comes from the configured issuer when it names one,
and is within ``exp`` and ``nbf``.

An active answer is kept for a short while (``verified``: at most a minute, never past the token's
``exp``), so a session's every request is not a round trip to the issuer.
"""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any
from urllib.parse import quote, urlencode

from kbseek.auth_spec import check_url
from kbseek.errors import ConfigError
from kbseek.server.auth.audience import issued_for
from kbseek.server.auth.discovery import discover, fetch_json
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.jwt_verifier import client_of, scopes_of
from kbseek.server.auth.reasons import Checker, Reason, Rejected
from kbseek.server.auth.settings import Introspection
from kbseek.server.auth.verified import VerifiedTokens


class IntrospectionVerifier(Checker):
    """The SDK's ``TokenVerifier`` for opaque tokens, asking the issuer's introspection endpoint."""

    def __init__(
        self, issuer: str, resource: str, client: Introspection, *, clock_skew_s: float = 60.0,
        now: Any = time.time, audiences: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.issuer = issuer
        self.resource = resource
        self.audiences = audiences
        self.client = client
        self.clock_skew_s = clock_skew_s
        self._now = now
        self._endpoint = client.endpoint
        self._verified = VerifiedTokens(now=now)
        self.requests = 0
        """How many times the endpoint was asked (the tests count them)."""

    @property
    def endpoint(self) -> str | None:
        """Where tokens are asked about: the configured endpoint, or the metadata's once read."""
        return self._endpoint

    async def check(self, token: str) -> KbAccessToken:
        """The identity ``token`` carries; :class:`Rejected` naming the check that failed."""
        digest = self._verified.digest(token)
        kept = self._verified.get(digest)
        if kept is not None:
            return kept
        answer = await asyncio.to_thread(self._ask, token)
        identity = self._read(token, answer)
        self._verified.keep(digest, identity)
        return identity

    def _ask(self, token: str) -> Any:
        if self._endpoint is None:
            endpoint = discover(self.issuer).get("introspection_endpoint")
            if not isinstance(endpoint, str):
                raise Rejected(
                    Reason.UNAVAILABLE, f"the metadata of {self.issuer} has no introspection_endpoint"
                )
            try:
                self._endpoint = check_url(endpoint, "introspection_endpoint", https_unless_loopback=True)
            except ConfigError as exc:
                raise Rejected(Reason.UNAVAILABLE, str(exc)) from None
        basic = f"{quote(self.client.client_id, safe='')}:{quote(self.client.secret, safe='')}"
        self.requests += 1
        return fetch_json(
            self._endpoint,
            data=urlencode({"token": token, "token_type_hint": "access_token"}).encode(),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Authorization": "Basic " + base64.b64encode(basic.encode()).decode(),
            },
        )

    def _read(self, token: str, answer: Any) -> KbAccessToken:
        if not isinstance(answer, dict):
            raise Rejected(Reason.UNAVAILABLE, "the introspection answer is not a JSON object")
        if answer.get("active") is not True:
            raise Rejected(Reason.INTROSPECTION_INACTIVE, "the issuer says the token is not active")
        iss = answer.get("iss")
        if iss is not None and iss != self.issuer:
            raise Rejected(Reason.ISSUER, f"iss {iss!r} is not {self.issuer!r}")
        if not issued_for(answer.get("aud"), self.resource, self.audiences):
            raise Rejected(
                Reason.AUDIENCE, f"aud {answer.get('aud')!r} does not name the resource {self.resource}"
            )
        now = self._now()
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if isinstance(exp, int | float) and exp + self.clock_skew_s < now:
            raise Rejected(Reason.EXPIRED, "exp is past (beyond the clock skew)")
        if isinstance(nbf, int | float) and nbf - self.clock_skew_s > now:
            raise Rejected(Reason.NOT_YET_VALID, "nbf is ahead (beyond the clock skew)")
        subject = answer.get("sub") if isinstance(answer.get("sub"), str) else answer.get("username")
        return KbAccessToken(
            token=token, client_id=client_of(answer), scopes=scopes_of(answer),
            expires_at=int(exp) if isinstance(exp, int | float) else None, resource=self.resource,
            subject=subject if isinstance(subject, str) else None, claims={**answer, "iss": self.issuer},
            method="introspection",
        )  # fmt: skip
