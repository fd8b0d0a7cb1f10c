"""The pieces of the page's sign-in (docs/decisions/0056): PKCE, the sealed flow cookie, where a person
is sent back to, the cookies' flags, the bounded session store, the ``[auth]`` keys, the provider's
endpoints, and the gate taking a page session as it takes a bearer token. The whole flow over HTTP is
``tests/wire/test_page_signin.py``."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from kbseek.auth_spec import AuthSpec
from kbseek.errors import ConfigError
from kbseek.server.auth.browser import Endpoints, endpoints_of
from kbseek.server.auth.flow import (
    FLOW_S,
    Flow,
    Sealer,
    authorization_url,
    next_page,
    pkce_challenge,
    pkce_verifier,
)
from kbseek.server.auth.gate import NO_TOKEN, NOT_SIGNED_IN, Gate, Refusal
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.reasons import Rejected
from kbseek.server.auth.sessions import SESSION_COOKIE, Cookies, SessionStore
from kbseek.server.auth.settings import AuthConfig, PageClient, public_url_warnings, redirect_uri
from tests.auth_issuer import Issuer, running_issuer

RESOURCE = "https://kb.example.com/mcp"


def test_the_s256_challenge_is_rfc_7636s_and_verifiers_are_long_and_unreserved() -> None:
    # RFC 7636, Appendix B
    assert (
        pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    )
    verifiers = {pkce_verifier() for _ in range(20)}
    assert len(verifiers) == 20
    assert all(43 <= len(v) <= 128 and v.replace("-", "").replace("_", "").isalnum() for v in verifiers)


def test_a_flow_comes_back_only_as_this_process_sealed_it_and_within_ten_minutes() -> None:
    sealer = Sealer()
    flow = Flow.start(oidc=True, next="/ui?q=x", now=1000.0)
    value = sealer.seal(flow)
    assert sealer.open(value, now=1000.0 + FLOW_S) == flow
    assert flow.verifier not in repr(flow)
    body, mac = value.split(".")
    assert sealer.open(value, now=1001.0 + FLOW_S) is None  # too old
    assert sealer.open(value, now=999.0) is None  # from the future
    assert Sealer().open(value, now=1000.0) is None  # another process's key
    assert sealer.open(body + "." + mac[:-1] + ("A" if mac[-1] != "A" else "B"), now=1000.0) is None
    changed = Flow(flow.state, "another verifier", flow.nonce, flow.next, flow.started)
    assert sealer.open(sealer.seal(changed).split(".")[0] + "." + mac, now=1000.0) is None
    for garbage in ("", ".", "x.y", "e30.", body):
        assert sealer.open(garbage, now=1000.0) is None
    assert Flow.start(oidc=False, next="/ui", now=0).nonce is None


@pytest.mark.parametrize(
    ("asked", "sent"),
    [
        (None, "/ui"), ("", "/ui"), ("/ui", "/ui"), ("/ui?q=rollback&kb=a", "/ui?q=rollback&kb=a"),
        ("/ui#doc=runbooks%2Fdeploy.md", "/ui#doc=runbooks%2Fdeploy.md"), ("/ui/app.js", "/ui/app.js"),
        ("https://evil.example.com/ui", "/ui"), ("//evil.example.com/ui", "/ui"), ("/uix", "/ui"),
        ("/ui\\@evil.example.com", "/ui"), ("/ui?q=a b", "/ui"), ("/ui?q=\u65e5", "/ui"),
        ("/api/search?q=x", "/ui"), ("/ui\r\nSet-Cookie: x=1", "/ui"), ("javascript:alert(1)", "/ui"),
    ],
)  # fmt: skip
def test_a_person_is_sent_back_to_a_page_address_and_nowhere_else(asked: str | None, sent: str) -> None:
    assert next_page(asked) == sent


def test_the_authorization_request_asks_for_pkce_state_nonce_and_the_resource() -> None:
    flow = Flow.start(oidc=True, next="/ui", now=0)
    url = authorization_url(
        "https://sso.example.com/authorize?p=signin", flow, client_id="page", redirect_uri="https://kb/auth/callback",
        resource=RESOURCE, scopes=["openid", "kb:read"],
    )  # fmt: skip
    parts = urlsplit(url)
    asked = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert parts.path == "/authorize" and asked["p"] == "signin"  # the endpoint's own query is kept
    assert (
        asked["code_challenge"] == pkce_challenge(flow.verifier) and asked["code_challenge_method"] == "S256"
    )
    assert (asked["state"], asked["nonce"], asked["resource"]) == (flow.state, flow.nonce, RESOURCE)
    assert asked["scope"] == "openid kb:read" and flow.verifier not in url
    plain = authorization_url(
        "https://sso/a", Flow.start(oidc=False, next="/ui", now=0), client_id="c", redirect_uri="r",
        resource=RESOURCE, scopes=["kb:read"],
    )  # fmt: skip
    assert "nonce" not in parse_qs(urlsplit(plain).query)


def test_the_cookies_are_httponly_lax_and_secure_with_the_host_prefix_over_https() -> None:
    plain, tls = Cookies.for_resource("http://127.0.0.1:8765/mcp"), Cookies.for_resource(RESOURCE)
    assert (
        plain.set(SESSION_COOKIE, "abc", 60)
        == "kbseek-session=abc; Max-Age=60; Path=/; HttpOnly; SameSite=Lax"
    )
    assert tls.set(SESSION_COOKIE, "abc", 60) == (
        "__Host-kbseek-session=abc; Max-Age=60; Path=/; HttpOnly; SameSite=Lax; Secure"
    )
    assert tls.clear(SESSION_COOKIE).startswith("__Host-kbseek-session=; Max-Age=0;")
    scope = {
        "headers": [
            (b"cookie", b"a=1; __Host-kbseek-session=first; kbseek-session=unprefixed"),
            (b"Cookie", b"__Host-kbseek-session=second;__Host-kbseek-session="),
        ]
    }
    assert tls.read(scope, SESSION_COOKIE) == ["first", "second"]
    assert plain.read(scope, SESSION_COOKIE) == ["unprefixed"]
    assert plain.read({"headers": []}, SESSION_COOKIE) == []


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_sessions_expire_are_bounded_and_are_kept_by_a_hash_of_their_id() -> None:
    clock = Clock()
    store = SessionStore(limit=3, clock=clock)
    soon = store.open("token-soon", 1010.0, "a")
    later = store.open("token-later", 1100.0, "b")
    assert store.get(soon) is not None and store.get("made-up", later).subject == "b"  # type: ignore[union-attr]
    assert soon not in repr(store.__dict__) and "token-soon" not in repr(store.get(soon))
    latest = store.open("token-latest", 1200.0, "c")
    fourth = store.open("token-fourth", 1300.0, "d")  # full: the one closest to its end makes room
    assert store.get(soon) is None and len(store) == 3
    clock.now = 1150.0
    assert store.get(later) is None and len(store) == 2  # expired: dropped when asked for
    assert store.get(latest) is not None and store.get(fourth) is not None
    assert store.close(latest) and not store.close(latest) and store.get(latest) is None
    clock.now = 1250.0
    short = store.open("x", 1260.0, None)
    store.open("y", 2000.0, None)
    clock.now = 1270.0
    store.open("z", 2000.0, None)  # full again: the expired one goes, before any live one
    assert store.get(fourth) is not None and store.get(short) is None and len(store) == 3


def test_the_page_client_keys_are_checked_when_the_file_is_read() -> None:
    assert AuthSpec(page_client_id="kbseek-page").page_client_id == "kbseek-page"  # the issuer may be a flag
    for bad, said in (
        ({"page_client_secret_env": "KB_PAGE_SECRET"}, "without [auth].page_client_id"),
        ({"page_client_id": "kb page"}, "page_client_id must be a client id"),
        ({"page_client_id": ""}, "page_client_id must be a client id"),
        (
            {"page_client_id": "p", "page_client_secret_env": "not a name"},
            "must name an environment variable",
        ),
        ({"page_client_id": 7}, "must be a string"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)):
            AuthSpec(**bad)  # type: ignore[arg-type]


def test_the_page_client_needs_an_issuer_and_reads_its_secret_from_the_environment() -> None:
    with pytest.raises(ConfigError, match="page_client_id needs an issuer"):
        AuthConfig.resolve(AuthSpec(page_client_id="p"), environ={})
    spec = AuthSpec(page_client_id="p", page_client_secret_env="KB_PAGE_SECRET")
    with pytest.raises(ConfigError, match="KB_PAGE_SECRET is empty or unset"):
        AuthConfig.resolve(spec, issuer="https://sso.example.com", resource=RESOURCE, environ={})
    config = AuthConfig.resolve(
        spec, issuer="https://sso.example.com", resource=RESOURCE, environ={"KB_PAGE_SECRET": "s3cret"}
    )
    assert config.page == PageClient("p", "s3cret") and "s3cret" not in repr(config)
    assert AuthConfig.resolve(AuthSpec()).page is None


@pytest.mark.parametrize(
    ("resource", "callback"),
    [
        ("https://kb.example.com/mcp", "https://kb.example.com/auth/callback"),
        ("https://kb.example.com/team/mcp/", "https://kb.example.com/auth/callback"),
        ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765/auth/callback"),
    ],
)
def test_the_redirect_url_is_the_resource_urls_origin_and_the_callback(resource: str, callback: str) -> None:
    assert redirect_uri(resource) == callback


def test_a_page_behind_a_proxy_is_told_to_allow_its_origin_for_signing_out() -> None:
    def said(**kw: Any) -> str:
        return " ".join(public_url_warnings(RESOURCE, port=8765, allowed_hosts=["kb.example.com"], **kw))

    assert "--allow-origin https://kb.example.com" in said(page=True)
    assert "--allow-origin" not in said(page=True, allowed_origins=["https://KB.example.com"])
    assert "--allow-origin" not in said()  # without the page's sign-in, no browser POSTs
    assert public_url_warnings("http://127.0.0.1:8765/mcp", port=8765, page=True) == []


def test_the_providers_endpoints_are_taken_only_when_sound() -> None:
    good = {"authorization_endpoint": "https://sso/authorize", "token_endpoint": "https://sso/token"}
    assert endpoints_of(good) == Endpoints("https://sso/authorize", "https://sso/token", oidc=False)
    assert endpoints_of({**good, "id_token_signing_alg_values_supported": ["RS256"]}).oidc
    assert (
        endpoints_of({**good, "token_endpoint": "http://127.0.0.1:9/token"}).token
        == "http://127.0.0.1:9/token"
    )
    for bad in (
        {"authorization_endpoint": "https://sso/authorize"},
        {**good, "token_endpoint": "http://sso.example.com/token"},
        {**good, "authorization_endpoint": "https://sso/authorize#x"},
        {**good, "authorization_endpoint": "https://sso/authorize/\u65e5"},
        {**good, "code_challenge_methods_supported": ["plain"]},
    ):
        with pytest.raises(Rejected, match="unavailable"):
            endpoints_of(bad)  # type: ignore[arg-type]


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


def page_gate(issuer: Issuer) -> Gate:
    return Gate(AuthConfig(issuer=issuer.url, resource=RESOURCE, algorithms=("RS256",), page=PageClient("p")))


def cookie_scope(gate: Gate, session_id: str) -> dict[str, Any]:
    assert gate.browser is not None
    name = gate.browser.cookies.name(SESSION_COOKIE)
    return {"headers": [(b"cookie", f"{name}={session_id}".encode())]}


def test_a_page_session_is_its_token_checked_as_a_bearer_header_would_be(issuer: Issuer) -> None:
    gate = page_gate(issuer)
    assert gate.sessions is not None and gate.browser is not None
    good = issuer.token(RESOURCE)
    live = gate.sessions.open(good, time.time() + 600, "alice")
    held = gate.held(cookie_scope(gate, live))
    identity = asyncio.run(gate.admit(None, held, page=True))
    assert isinstance(identity, KbAccessToken) and identity.subject == "alice" and identity.token == good

    # a session whose token the verifier refuses (here: another audience) is refused, and ended
    other = gate.sessions.open(issuer.token("https://elsewhere.example.com/mcp"), time.time() + 600, "alice")
    refused = asyncio.run(gate.admit(None, gate.held(cookie_scope(gate, other)), page=True))
    assert isinstance(refused, Refusal) and refused.status == 401 and refused.sign_in == "/auth/login"
    assert refused.message == NOT_SIGNED_IN and gate.sessions.get(other) is None

    # no session: where to sign in, for the page's routes only
    nothing = asyncio.run(gate.admit(None, gate.held({"headers": []}), page=True))
    assert isinstance(nothing, Refusal) and nothing.sign_in == "/auth/login"
    mcp = asyncio.run(gate.admit(None, None))
    assert isinstance(mcp, Refusal) and mcp.sign_in is None and mcp.message == NO_TOKEN

    # a bearer header comes first: a bad one is not rescued by a good session
    with_header = asyncio.run(gate.admit("Bearer not-a-token", held, page=True))
    assert isinstance(with_header, Refusal) and with_header.status == 401

    # a session whose token lacks the read scope: 403, as a header's
    narrow = gate.sessions.open(issuer.token(RESOURCE, scope="profile"), time.time() + 600, "alice")
    lacking = asyncio.run(gate.admit(None, gate.held(cookie_scope(gate, narrow)), page=True))
    assert isinstance(lacking, Refusal) and lacking.status == 403


def test_a_gate_without_a_page_client_has_no_sessions_and_reads_no_cookie(issuer: Issuer) -> None:
    gate = Gate(AuthConfig(issuer=issuer.url, resource=RESOURCE))
    assert gate.browser is None and gate.sessions is None
    assert gate.held({"headers": [(b"cookie", b"kbseek-session=x; __Host-kbseek-session=x")]}) is None
    refused = asyncio.run(gate.admit(None, None, page=True))
    assert isinstance(refused, Refusal) and refused.sign_in is None and refused.message == NO_TOKEN
