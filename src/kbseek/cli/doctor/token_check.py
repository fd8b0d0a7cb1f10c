"""``kbseek doctor --auth --check-token VAR``: one real token through the server's gate, and why it
would be refused, in words.

The server tells a refused caller only ``invalid_token`` and logs the reason code (decision 0054);
the person setting up a provider needs both the code and what to change. The token is checked by
the gate itself (``Gate.verify``, then the scope the gate asks for), so the verdict is the server's;
the claims shown beside it (``aud``, ``iss``, ``exp``, the scopes) are read from the token without
checking, to explain a verdict, never to reach one. The token is taken from an environment variable,
so it is not in the shell's history, and never printed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import jwt

from kbseek.auth_spec import ASYMMETRIC_ALGORITHMS
from kbseek.cli.doctor.result import CheckResult
from kbseek.server.auth.gate import Gate
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.jwt_verifier import unverified_claims
from kbseek.server.auth.reasons import Reason, Rejected
from kbseek.server.auth.settings import AuthConfig

Clock = Callable[[], float]
CLOCK_FIX = "if the token was just issued, check this machine's clock against the issuer's (NTP)"


def check_token(
    config: AuthConfig | None, variable: str, environ: Mapping[str, str], *, now: Clock = time.time
) -> CheckResult:
    """The token in ``$variable`` checked by the gate ``config`` makes: whom it admits, or which check
    refuses it (the reason code the server would log) and what to change."""
    token = environ.get(variable, "").strip()
    if token.lower().startswith("bearer "):  # pasted with the header's scheme
        token = token[7:].strip()
    if not token:
        return CheckResult(
            "token", "fail", f"${variable} is empty or unset",
            f"put the access token in {variable} (e.g. read -rs {variable} && export {variable}), then run this again",
        )  # fmt: skip
    if config is None:
        return CheckResult("token", "skip", "needs [auth] to resolve", "fix the lines above first")
    gate = Gate(config)
    try:
        identity = asyncio.run(gate.verify(token))
    except Rejected as refused:
        sentence, fix = _explained(refused, token, config, now())
        return CheckResult("token", "fail", f"refused ({refused.reason.value}): {sentence}", fix)
    needed = gate.missing_scope(identity)
    if needed is not None:
        has = " ".join(identity.scopes) or "none"
        return CheckResult(
            "token", "fail",
            f"refused ({Reason.SCOPE.value}): {_who(identity)} has the scopes {has}, and reading needs {needed} "
            "(the server answers 403 insufficient_scope)",
            f"have the client ask for the scope {needed} and the provider grant it (a client scope in "
            f"Keycloak, a permission in Auth0), or set [auth] read_scope to the scope your provider issues",
        )  # fmt: skip
    scopes = " ".join(identity.scopes)
    return CheckResult(
        "token", "ok", f"accepted: {_who(identity)}, scopes {scopes}{_expiry(identity, now())}"
    )


def _who(identity: KbAccessToken) -> str:
    if identity.credential is not None:
        return f"the static token {identity.credential!r}"
    how = "a JWT" if identity.method == "jwt" else "an introspected token"
    return f"{how} for subject {identity.subject!r}, client {identity.client_id!r}"


def _expiry(identity: KbAccessToken, now: float) -> str:
    if identity.expires_at is None:
        return ""
    return f"; expires {_when(identity.expires_at)} (in {_span(identity.expires_at - now)})"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _explained(refused: Rejected, token: str, config: AuthConfig, now: float) -> tuple[str, str]:
    """The sentence and the fix for a refusal: the server's detail, with the claims it is about."""
    claims = unverified_claims(token)
    try:
        header: dict[str, Any] = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        header = {}
    if refused.reason is Reason.AUDIENCE:
        return _audience(claims, config)
    if refused.reason is Reason.ISSUER:
        return _issuer(claims, config)
    if refused.reason in (Reason.EXPIRED, Reason.NOT_YET_VALID):
        return _time(refused.reason, claims, config, now)
    if refused.reason is Reason.SIGNATURE:
        return (
            f"its signature does not verify with the issuer's key {header.get('kid')!r}",
            f"the token was altered, or signed by another issuer using the same key id: get one from {config.issuer}",
        )  # fmt: skip
    if refused.reason is Reason.ALGORITHM:
        alg = header.get("alg")
        if isinstance(alg, str) and alg in ASYMMETRIC_ALGORITHMS and alg not in config.algorithms:
            return (
                f"it is signed with {alg}, not one of the configured algorithms ({', '.join(config.algorithms)})",
                f"add {alg} to [auth] algorithms",
            )  # fmt: skip
        return (
            refused.detail,
            "kbseek takes public-key signatures whose algorithm fits the issuer's key (never none or HS*): "
            "have the provider sign access tokens with RS256 or ES256",
        )  # fmt: skip
    return refused.detail, _FIXES.get(refused.reason, "see the detail")


def _audience(claims: dict[str, Any], config: AuthConfig) -> tuple[str, str]:
    aud = claims.get("aud")
    said = "the token has no aud" if aud is None else f"the token's aud is {aud!r}"
    return (
        f"{said}, and this server's resource is {config.resource!r}: it was issued for another resource "
        "(one trailing slash aside, they must be equal)",
        f"have the client ask for resource={config.resource} (RFC 8707) and the provider put it in aud "
        "(Keycloak: an audience mapper; Auth0: an API whose identifier is that URL); or, if the token is "
        "right, set [auth] resource to the URL it names",
    )  # fmt: skip


def _issuer(claims: dict[str, Any], config: AuthConfig) -> tuple[str, str]:
    iss = claims.get("iss")
    assert config.issuer is not None
    if isinstance(iss, str) and iss.rstrip("/") == config.issuer.rstrip("/"):
        return (
            f"trailing slash: the token's iss is {iss!r}, the configured issuer {config.issuer!r}; the "
            "issuer is compared exactly",
            f"set [auth] issuer (or --auth-issuer) to {iss!r}, exactly as the provider writes it",
        )  # fmt: skip
    return (
        f"the token's iss is {iss!r}, not the configured issuer {config.issuer!r}",
        f"the token comes from another issuer (realm, tenant or environment): get one from {config.issuer}, "
        "or configure the issuer that made it",
    )  # fmt: skip


def _time(reason: Reason, claims: dict[str, Any], config: AuthConfig, now: float) -> tuple[str, str]:
    skew = f"{config.clock_skew_s:g} s of clock difference tolerated"
    if reason is Reason.EXPIRED:
        exp = claims.get("exp")
        if isinstance(exp, int | float):
            said = f"the token expired at {_when(exp)}, {_span(now - exp)} ago ({skew})"
        else:
            said = f"the token has expired ({skew})"
        return said, f"get a new token (providers issue them for minutes); {CLOCK_FIX}"
    times = [(name, claims.get(name)) for name in ("nbf", "iat")]
    ahead = [(name, t) for name, t in times if isinstance(t, int | float) and t > now]
    said = ", ".join(f"its {name} is {_when(t)}, {_span(t - now)} ahead" for name, t in ahead)
    return f"the token is not valid yet: {said or 'nbf or iat is ahead'} ({skew})", CLOCK_FIX


_FIXES = {
    Reason.UNKNOWN_KEY: "the token names a key the issuer does not publish: it comes from another issuer or "
    "environment, or from a key not yet in the issuer's key set",
    Reason.MALFORMED: "the value is not an access token the server can read: check what was put in the variable "
    "(an ID token or a refresh token will not do either)",
    Reason.INTROSPECTION_INACTIVE: "the issuer says the token is expired, revoked or not its own: get a new one",
    Reason.UNKNOWN_TOKEN: "no static token has this value, and nothing else can check it (no issuer, or no "
    "introspection for a token that is not a JWT)",
    Reason.UNAVAILABLE: "the issuer could not be reached to check it: see the issuer and keys lines",
}
