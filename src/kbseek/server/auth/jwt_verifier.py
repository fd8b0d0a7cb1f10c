"""JWT access tokens checked here, against the issuer's published keys (RFC 9068, RFC 8725).

A token is taken only when every check passes, in this order, each failure with its reason code:
it is a JWS of three parts (``malformed``); its ``alg`` is on the allow-list (``algorithm``: never
``none``, never ``HS*``); its key is one the issuer publishes, of the kind its ``alg`` needs
(``unknown_key``, ``algorithm``); the signature holds (``signature``); ``iss`` is the configured
issuer, exactly (``issuer``); ``aud`` names the resource URL (``audience``, see ``audience``);
``exp`` is present and not past, ``nbf`` and ``iat`` not ahead, each within the clock skew
(``expired``, ``not_yet_valid``).

A token that passed is kept (``verified``) until the earlier of a minute and its ``exp``: a host
sends one token on every request, and the second request need not parse and check it again.
"""

from __future__ import annotations

from typing import Any

import jwt

from kbseek.server.auth.audience import issued_for
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.jwks import KeySet
from kbseek.server.auth.reasons import Checker, Reason, Rejected
from kbseek.server.auth.verified import VerifiedTokens


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts: a JWS in compact form (an opaque token goes to introspection)."""
    return token.count(".") == 2


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """A token's scopes: ``scope``, space-separated (RFC 9068, RFC 7662), or ``scp`` as a list or a
    string (Microsoft Entra, Okta)."""
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            return value.split()
        if isinstance(value, list):
            return [s for s in value if isinstance(s, str)]
    return []


def client_of(claims: dict[str, Any]) -> str:
    """The OAuth client the token was issued to: ``client_id`` (RFC 9068), else ``azp`` (OpenID
    Connect; Keycloak, Entra v2), else ``appid`` (Entra v1); ``""`` when none says."""
    for name in ("client_id", "azp", "appid"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


class JwtVerifier(Checker):
    """The SDK's ``TokenVerifier`` for JWT access tokens from one issuer, for one resource."""

    def __init__(
        self, issuer: str, resource: str, *, algorithms: tuple[str, ...], clock_skew_s: float = 60.0,
        keys: KeySet | None = None, audiences: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        self.issuer = issuer
        self.resource = resource
        self.audiences = audiences
        """``aud`` values accepted beside the resource URL (``[auth].audiences``)."""
        self.algorithms = algorithms
        self.clock_skew_s = clock_skew_s
        self.keys = keys or KeySet(issuer)
        self.verified = VerifiedTokens()

    async def check(self, token: str) -> KbAccessToken:
        """The identity ``token`` carries; :class:`Rejected` naming the check that failed."""
        digest = self.verified.digest(token)
        kept = self.verified.get(digest)
        if kept is not None:
            return kept
        identity = await self._check(token)
        self.verified.keep(digest, identity)
        return identity

    async def _check(self, token: str) -> KbAccessToken:
        if not looks_like_jwt(token):
            raise Rejected(Reason.MALFORMED, "not a JWT")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Rejected(Reason.MALFORMED, f"unreadable header: {exc}") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise Rejected(Reason.ALGORITHM, f"alg {alg!r} is not one of {', '.join(self.algorithms)}")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise Rejected(Reason.MALFORMED, "the kid is not a string")
        key = await self.keys.key(kid, alg)
        claims = self._decode(token, key, alg)
        if not issued_for(claims.get("aud"), self.resource, self.audiences):
            raise Rejected(
                Reason.AUDIENCE, f"aud {claims.get('aud')!r} does not name the resource {self.resource}"
            )
        exp = claims["exp"]
        return KbAccessToken(
            token=token, client_id=client_of(claims), scopes=scopes_of(claims),
            expires_at=int(exp) if isinstance(exp, int | float) else None, resource=self.resource,
            subject=claims.get("sub") if isinstance(claims.get("sub"), str) else None, claims=claims,
            method="jwt",
        )  # fmt: skip

    def _decode(self, token: str, key: jwt.PyJWK, alg: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key=key.key, algorithms=[alg], issuer=self.issuer, leeway=self.clock_skew_s,
                options={"require": ["exp", "iss"], "verify_aud": False},
            )  # fmt: skip
        except jwt.InvalidSignatureError:
            raise Rejected(Reason.SIGNATURE, "the signature does not verify with the issuer's key") from None
        except jwt.ExpiredSignatureError:
            raise Rejected(Reason.EXPIRED, "exp is past (beyond the clock skew)") from None
        except jwt.ImmatureSignatureError as exc:
            raise Rejected(Reason.NOT_YET_VALID, f"{exc} (beyond the clock skew)") from None
        except jwt.InvalidIssuerError:
            raise Rejected(
                Reason.ISSUER, f"iss {_unverified(token, 'iss')!r} is not {self.issuer!r}"
            ) from None
        except jwt.MissingRequiredClaimError as exc:
            reason = Reason.ISSUER if exc.claim == "iss" else Reason.MALFORMED
            raise Rejected(reason, f"the token has no {exc.claim} claim") from None
        except jwt.InvalidAlgorithmError as exc:
            raise Rejected(Reason.ALGORITHM, str(exc)) from None
        except jwt.PyJWTError as exc:
            raise Rejected(Reason.MALFORMED, str(exc)) from None
        return claims


def unverified_claims(token: str) -> dict[str, Any]:
    """A token's claims read without checking anything, to say why it was refused (the log line,
    ``kbseek doctor --auth --check-token``), never to decide; ``{}`` when they cannot be read."""
    try:
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return {}
    return claims


def _unverified(token: str, claim: str) -> object:
    return unverified_claims(token).get(claim)
