"""The verifiers against an issuer made in the test (its keys and endpoints served on loopback): each
refusal names the check that failed, a rotated key is picked up, refetches are bounded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kbseek.auth_spec import AuthSpec, parse_static_token
from kbseek.errors import ConfigError
from kbseek.server.auth.gate import Gate, Refusal
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.introspection import IntrospectionVerifier
from kbseek.server.auth.jwks import KeySet
from kbseek.server.auth.jwt_verifier import JwtVerifier
from kbseek.server.auth.metadata import challenge, document, metadata_paths, metadata_url
from kbseek.server.auth.reasons import Reason, Rejected
from kbseek.server.auth.settings import AuthConfig, Introspection, StaticCredential, public_url_warnings
from tests.auth_issuer import INTROSPECTION_CLIENT, Issuer, SigningKey, running_issuer

RESOURCE = "https://kb.example.com/mcp"


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def verifier(issuer: Issuer, *, clock: Clock | None = None, refetch_s: float = 30.0) -> JwtVerifier:
    keys = KeySet(issuer.url, refetch_s=refetch_s, clock=clock or Clock())
    return JwtVerifier(issuer.url, RESOURCE, algorithms=("RS256", "ES256"), clock_skew_s=30, keys=keys)


def reason_of(check: Any) -> Reason | None:
    try:
        asyncio.run(check)
    except Rejected as refused:
        return refused.reason
    return None


def test_a_valid_token_gives_its_subject_client_scopes_and_claims(issuer: Issuer) -> None:
    token = issuer.token(RESOURCE, scope="kb:read kb:write")
    identity = asyncio.run(verifier(issuer).check(token))
    assert (identity.subject, identity.client_id, identity.method) == ("alice", "claude", "jwt")
    assert identity.scopes == ["kb:read", "kb:write"] and identity.resource == RESOURCE
    assert identity.claims is not None and identity.claims["iss"] == issuer.url
    assert token not in repr(identity)


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda i: i.token("https://other.example.com/mcp"), Reason.AUDIENCE),
        (lambda i: i.token("http://kb.example.com/mcp"), Reason.AUDIENCE),
        (lambda i: i.token(RESOURCE, aud=None), Reason.AUDIENCE),
        (lambda i: i.token(RESOURCE, iss="https://evil.example.com"), Reason.ISSUER),
        (lambda i: i.token(RESOURCE, iss=None), Reason.ISSUER),
        (lambda i: i.token(RESOURCE, exp=int(time.time()) - 120), Reason.EXPIRED),
        (lambda i: i.token(RESOURCE, exp=None), Reason.MALFORMED),
        (lambda i: i.token(RESOURCE, nbf=int(time.time()) + 600), Reason.NOT_YET_VALID),
        (lambda i: i.token(RESOURCE, iat=int(time.time()) + 600), Reason.NOT_YET_VALID),
        (lambda i: i.unsigned(RESOURCE), Reason.ALGORITHM),
        (lambda i: i.hmac_with_public_key(RESOURCE), Reason.ALGORITHM),
        (lambda i: i.token(RESOURCE, alg="RS512"), Reason.ALGORITHM),
        (lambda i: i.token(RESOURCE, key=SigningKey.new()), Reason.UNKNOWN_KEY),
        (lambda i: i.token(RESOURCE, key=SigningKey.new(), kid="k1"), Reason.SIGNATURE),
        (lambda i: i.token(RESOURCE)[:-6] + "AAAAAA", Reason.SIGNATURE),
        (lambda i: "not.a.jwt", Reason.MALFORMED),
        (lambda i: "opaque-token", Reason.MALFORMED),
    ],
    ids=[
        "wrong audience", "audience of another scheme", "no audience", "wrong issuer", "no issuer", "expired",
        "no exp", "not yet valid", "issued in the future", "alg none", "HS256 with the public key",
        "alg off the list", "unknown kid", "signed by another key under a known kid", "tampered signature",
        "garbage", "not a JWT",
    ],
)  # fmt: skip
def test_each_refusal_names_the_check_that_failed(issuer: Issuer, make: Any, reason: Reason) -> None:
    assert reason_of(verifier(issuer).check(make(issuer))) == reason


def test_an_audience_list_holding_the_resource_is_taken(issuer: Issuer) -> None:
    token = issuer.token(RESOURCE, aud=["account", RESOURCE + "/"])
    assert asyncio.run(verifier(issuer).check(token)).subject == "alice"


def test_an_audience_named_in_the_configuration_is_taken_as_entra_writes_its_client_id(
    issuer: Issuer,
) -> None:
    guid = "6f1d2c3b-0a9e-4b8d-9c7f-2e5a1b3c4d5e"
    token = issuer.token(RESOURCE, aud=guid)
    assert reason_of(verifier(issuer).check(token)) is Reason.AUDIENCE
    accepting = verifier(issuer)
    accepting.audiences = (guid,)
    assert asyncio.run(accepting.check(token)).subject == "alice"
    assert reason_of(accepting.check(issuer.token(RESOURCE, aud="api://" + guid))) is Reason.AUDIENCE
    with pytest.raises(ConfigError, match="audiences is set without"):
        AuthConfig.resolve(AuthSpec(audiences=(guid,)), environ={})
    spec = AuthSpec(issuer=issuer.url, resource=RESOURCE, audiences=(guid,))
    assert Gate(AuthConfig.resolve(spec, environ={})).jwt.audiences == (guid,)  # type: ignore[union-attr]


def test_expiry_within_the_clock_skew_is_tolerated_and_beyond_it_is_not(issuer: Issuer) -> None:
    now = int(time.time())
    assert reason_of(verifier(issuer).check(issuer.token(RESOURCE, exp=now - 10))) is None
    assert reason_of(verifier(issuer).check(issuer.token(RESOURCE, nbf=now + 10))) is None
    assert reason_of(verifier(issuer).check(issuer.token(RESOURCE, exp=now - 60))) is Reason.EXPIRED


def test_a_token_without_a_kid_is_taken_when_the_issuer_has_one_key_of_its_kind(issuer: Issuer) -> None:
    assert reason_of(verifier(issuer).check(issuer.token(RESOURCE, kid=None))) is None
    issuer.rotate()
    assert reason_of(verifier(issuer).check(issuer.token(RESOURCE, kid=None))) is Reason.UNKNOWN_KEY


def test_a_rotated_key_is_picked_up_after_one_bounded_refetch(issuer: Issuer) -> None:
    clock = Clock()
    check = verifier(issuer, clock=clock, refetch_s=30)

    async def scenario() -> list[Reason | None]:
        seen: list[Reason | None] = []

        async def attempt(token: str) -> None:
            try:
                await check.check(token)
                seen.append(None)
            except Rejected as refused:
                seen.append(refused.reason)

        await attempt(issuer.token(RESOURCE))  # the first fetch
        upcoming = SigningKey.new("k2")
        for _ in range(20):  # a key not yet published, twenty times: refetches stay bounded
            await attempt(issuer.token(RESOURCE, key=upcoming))
        issuer.keys.append(upcoming)
        issuer.published.append(upcoming)
        await attempt(issuer.token(RESOURCE, key=upcoming))  # within the interval: the cache answers
        clock.now += 31
        await attempt(issuer.token(RESOURCE, key=upcoming))  # past it: one fetch finds the new key
        await attempt(issuer.token(RESOURCE))  # the old key, still published, still works
        return seen

    seen = asyncio.run(scenario())
    assert seen[0] is None and set(seen[1:22]) == {Reason.UNKNOWN_KEY}
    assert seen[22:] == [None, None]
    assert issuer.count("/jwks") == 2 and check.keys.fetches == 2


def test_concurrent_tokens_with_an_unknown_kid_share_one_fetch(issuer: Issuer) -> None:
    clock = Clock()
    check = verifier(issuer, clock=clock, refetch_s=30)
    unknown = [issuer.token(RESOURCE, key=SigningKey.new()) for _ in range(5)]

    async def scenario() -> None:
        await check.check(issuer.token(RESOURCE))
        clock.now += 31
        await asyncio.gather(*(check.check(t) for t in unknown), return_exceptions=True)

    asyncio.run(scenario())
    assert issuer.count("/jwks") == 2


def test_an_unreachable_issuer_is_unavailable_not_a_bad_token() -> None:
    keys = KeySet("http://127.0.0.1:9", refetch_s=30)
    check = JwtVerifier("http://127.0.0.1:9", RESOURCE, algorithms=("RS256",), keys=keys)
    issuer = Issuer()
    issuer.url = "http://127.0.0.1:9"
    assert reason_of(check.check(issuer.token(RESOURCE))) is Reason.UNAVAILABLE


def introspector(issuer: Issuer) -> IntrospectionVerifier:
    client = Introspection(None, *INTROSPECTION_CLIENT)  # the endpoint from the issuer's metadata
    return IntrospectionVerifier(issuer.url, RESOURCE, client)


def test_an_active_opaque_token_is_introspected_once_and_cached(issuer: Issuer) -> None:
    token = issuer.opaque_token(RESOURCE, scope="kb:read")
    check = introspector(issuer)

    async def twice() -> tuple[KbAccessToken, KbAccessToken]:
        return await check.check(token), await check.check(token)

    first, second = asyncio.run(twice())
    assert first.subject == "alice" and first.method == "introspection" and first.scopes == ["kb:read"]
    assert second == first and issuer.count("/introspect") == 1


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"active": False}, Reason.INTROSPECTION_INACTIVE),
        ({"aud": "https://other.example.com/mcp"}, Reason.AUDIENCE),
        ({"aud": None}, Reason.AUDIENCE),
        ({"iss": "https://evil.example.com"}, Reason.ISSUER),
        ({"exp": -600}, Reason.EXPIRED),
        ({"nbf": 600}, Reason.NOT_YET_VALID),
    ],
)
def test_introspection_refusals_name_the_check(
    issuer: Issuer, claims: dict[str, Any], reason: Reason
) -> None:
    """Times are seconds from now, read when the test runs: a run's collection can be many minutes
    before the test, and an ``nbf`` ten minutes ahead of collection was behind by then."""
    now = int(time.time())
    claims = {k: now + v if k in ("exp", "nbf") else v for k, v in claims.items()}
    token = issuer.opaque_token(RESOURCE, **claims)
    check = introspector(issuer)
    assert reason_of(check.check(token)) is reason
    assert reason_of(check.check(token)) is reason and issuer.count("/introspect") == 2  # refusals never kept
    assert reason_of(check.check("never-issued")) is Reason.INTROSPECTION_INACTIVE


def gate(issuer: Issuer, **overrides: Any) -> Gate:
    config = AuthConfig(
        issuer=issuer.url, resource=RESOURCE, algorithms=("RS256",),
        static=(StaticCredential("ci", "ci-secret", ("kb:read",)), StaticCredential("ops", "ops-secret", ("x",))),
        introspection=Introspection(None, *INTROSPECTION_CLIENT), **overrides,
    )  # fmt: skip
    return Gate(config)


def test_the_gate_routes_static_jwt_and_opaque_tokens_and_checks_the_read_scope(issuer: Issuer) -> None:
    g = gate(issuer)

    async def admit(header: str | None) -> KbAccessToken | Refusal:
        return await g.admit(header)

    static = asyncio.run(admit("Bearer ci-secret"))
    assert isinstance(static, KbAccessToken) and static.credential == "ci" and static.method == "static"
    assert isinstance(asyncio.run(admit(f"bearer {issuer.token(RESOURCE)}")), KbAccessToken)
    assert isinstance(asyncio.run(admit(f"Bearer {issuer.opaque_token(RESOURCE)}")), KbAccessToken)
    for header in (None, "", "Basic abc", "Bearer", "Bearer   "):
        refused = asyncio.run(admit(header))
        assert isinstance(refused, Refusal) and refused.status == 401 and refused.reason is None
        assert refused.challenge is not None and "error=" not in refused.challenge
    for token in ("wrong", issuer.token("https://other.example/mcp")):
        refused = asyncio.run(admit(f"Bearer {token}"))
        assert isinstance(refused, Refusal) and refused.status == 401
        assert refused.challenge is not None and 'error="invalid_token"' in refused.challenge
    for token in ("ops-secret", issuer.token(RESOURCE, scope="kb:write")):
        refused = asyncio.run(admit(f"Bearer {token}"))
        assert isinstance(refused, Refusal) and (refused.status, refused.reason) == (403, Reason.SCOPE)
        assert refused.challenge is not None and 'error="insufficient_scope", ' in refused.challenge


def test_the_metadata_document_and_challenges_come_from_configuration(issuer: Issuer) -> None:
    g = gate(issuer)
    assert metadata_url(RESOURCE) == "https://kb.example.com/.well-known/oauth-protected-resource/mcp"
    assert (
        metadata_url("https://kb.example.com/")
        == "https://kb.example.com/.well-known/oauth-protected-resource"
    )
    assert metadata_paths("https://kb.example.com/team/mcp") == {
        "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource/team/mcp",
    }  # fmt: skip
    assert g.metadata("/.well-known/oauth-protected-resource") == g.metadata(
        "/.well-known/oauth-protected-resource/mcp"
    )
    assert g.metadata("/.well-known/oauth-authorization-server") is None
    from mcp.shared.auth import ProtectedResourceMetadata

    parsed = ProtectedResourceMetadata.model_validate_json(document(g.config))
    assert str(parsed.resource) == RESOURCE and [str(a) for a in parsed.authorization_servers] == [issuer.url]
    assert parsed.scopes_supported == ["kb:read", "kb:write"] and parsed.bearer_methods_supported == [
        "header"
    ]
    assert challenge(g.config) == (
        'Bearer resource_metadata="https://kb.example.com/.well-known/oauth-protected-resource/mcp", '
        'scope="kb:read"'
    )
    assert challenge(AuthConfig(static=(StaticCredential("t", "s", ("kb:read",)),))) == "Bearer"


def test_static_tokens_match_by_name_and_only_exactly() -> None:
    g = Gate(
        AuthConfig(
            static=(StaticCredential("a", "secret-a", ("kb:read",)), StaticCredential("b", "b", ("kb:read",)))
        )
    )
    assert g.static.match("secret-a") is not None and g.static.match("secret-a").name == "a"  # type: ignore[union-attr]
    assert (
        g.static.match("secret-a ") is None
        and g.static.match("secret") is None
        and g.static.match("") is None
    )
    assert "secret-a" not in repr(g.config)


def test_the_auth_table_is_checked_when_read() -> None:
    assert AuthSpec().issuer is None
    for incomplete in (
        {"issuer": "https://idp.example"},
        {"resource": RESOURCE},
        {"introspection_client_id": "rs", "introspection_secret_env": "KB_RS"},
    ):
        spec = AuthSpec(**incomplete)  # type: ignore[arg-type]  # a flag may complete it ...
        with pytest.raises(ConfigError, match=r"\[auth\]"):
            AuthConfig.resolve(spec, environ={})  # ... and nothing did
    completed = AuthSpec(introspection_client_id="rs", introspection_secret_env="KB_RS")
    resolved = AuthConfig.resolve(
        completed, issuer="https://idp.example", resource=RESOURCE, environ={"KB_RS": "secret"}
    )  # the introspection client in the file, the issuer and resource as flags
    assert resolved.introspection is not None and resolved.issuer == "https://idp.example"
    for bad in (
        {"issuer": "http://idp.example", "resource": RESOURCE},  # clear text to another machine
        {"issuer": "https://idp.example?x=1", "resource": RESOURCE},
        {"algorithms": ("HS256",)}, {"algorithms": ("none",)}, {"algorithms": ()},
        {"clock_skew": 301.0}, {"clock_skew": float("nan")}, {"read_scope": "a b"},
        {"read_scope": "kb", "write_scope": "kb"}, {"tokens": ("ci",)}, {"tokens": ("ci=1BAD",)},
        {"tokens": ("a=X", "a=Y")},
        {"issuer": "https://idp.example", "resource": RESOURCE, "introspection_client_id": "rs"},
    ):  # fmt: skip
        with pytest.raises(ConfigError, match=r"\[auth\]"):
            AuthSpec(**bad)  # type: ignore[arg-type]
    assert parse_static_token("ci=KB_CI kb:read kb:write").scopes == ("kb:read", "kb:write")


def test_secrets_come_from_the_environment_and_a_missing_one_is_named() -> None:
    spec = AuthSpec(tokens=("ci=KB_CI", "deploy=KB_DEPLOY kb:read kb:write"))
    config = AuthConfig.resolve(
        spec, tokens=("cli=KB_CLI",), token_env="KB_TOKEN",
        environ={"KB_CI": "1", "KB_DEPLOY": "2", "KB_CLI": "3", "KB_TOKEN": "4"},
    )  # fmt: skip
    assert [(c.name, c.secret, c.scopes) for c in config.static] == [
        ("ci", "1", ("kb:read",)), ("deploy", "2", ("kb:read", "kb:write")), ("cli", "3", ("kb:read",)),
        ("KB_TOKEN", "4", ("kb:read",)),
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="KB_DEPLOY"):
        AuthConfig.resolve(spec, environ={"KB_CI": "1"})
    with pytest.raises(ConfigError, match=r"\[auth\].issuer needs"):
        AuthConfig.resolve(AuthSpec(), issuer="https://idp.example", environ={})
    assert not AuthConfig.resolve(AuthSpec(), environ={}).enabled


def test_a_public_url_at_odds_with_how_the_server_is_bound_is_said() -> None:
    assert (
        public_url_warnings("https://kb.example.com/mcp", port=8765, allowed_hosts=("kb.example.com",)) == []
    )
    assert public_url_warnings("http://127.0.0.1:8765/mcp", port=8765) == []
    said = " ".join(public_url_warnings("http://kb.example.com/kb", port=8765))
    assert "path is '/kb'" in said and "plain http://" in said and "--allow-host kb.example.com" in said
    assert "port 9000" in " ".join(public_url_warnings("http://127.0.0.1:9000/mcp", port=8765))
    assert "TLS proxy" in " ".join(public_url_warnings("https://localhost/mcp", port=8765))


def test_a_checked_jwt_is_kept_until_its_expiry_and_a_refusal_is_never_kept(issuer: Issuer) -> None:
    from kbseek.server.auth.verified import KEEP_S, VerifiedTokens

    check = verifier(issuer)
    calls = 0
    inner = check._check

    async def counted(token: str) -> KbAccessToken:
        nonlocal calls
        calls += 1
        return await inner(token)

    check._check = counted  # type: ignore[method-assign]
    token = issuer.token(RESOURCE)
    first, second = asyncio.run(check.check(token)), asyncio.run(check.check(token))
    assert first is second and calls == 1
    wrong = issuer.token("https://elsewhere.example/mcp")
    for _ in range(2):
        assert reason_of(check.check(wrong)) is Reason.AUDIENCE
    assert calls == 3

    clock = Clock()
    kept = VerifiedTokens(now=clock)
    soon = first.model_copy(update={"expires_at": int(clock.now) + 5})
    kept.keep(b"a", soon)
    kept.keep(b"b", first.model_copy(update={"expires_at": None}))
    clock.now += 5
    assert kept.get(b"a") is None and kept.get(b"b") is not None  # never past exp
    clock.now += KEEP_S
    assert kept.get(b"b") is None  # nor past a minute
