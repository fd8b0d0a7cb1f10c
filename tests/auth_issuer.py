"""An OAuth issuer made in the test: its own RSA keys, its metadata, key set and introspection
endpoint served over HTTP on loopback, and tokens signed the way identity providers sign them.

Nothing in the verifier under test is replaced: it discovers this issuer through
``/.well-known/openid-configuration``, fetches ``/jwks`` over HTTP, and posts opaque tokens to
``/introspect``. The issuer can rotate its keys while a server is running, make tokens a careful
verifier must refuse (``alg: none``, HMAC signed with the public key, foreign keys), and counts the
requests it answers.

It also signs people in, for the web page's sign-in: ``/authorize`` approves its one user
(:attr:`Issuer.subject`) at once for a registered client, insisting on PKCE S256 and a ``resource``,
and sends the browser back with a code; ``/token`` exchanges that code once, for the client it was
given to, at the redirect URL it was given for, only with the verifier whose S256 challenge it
carries, and issues a JWT access token for the resource asked for (and an ID token with the
``nonce`` when ``openid`` was asked for). Knobs make it answer what a careful client must refuse: a
token for another audience, without the read scope, expiring at once, an ID token with another nonce.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

INTROSPECTION_CLIENT = ("kbseek-rs", "introspection-secret")


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(repr=False)

    @classmethod
    def new(cls, kid: str | None = None) -> SigningKey:
        return cls(
            kid or secrets.token_hex(4), rsa.generate_private_key(public_exponent=65537, key_size=2048)
        )

    def jwk(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    """The issuer's state; :func:`running_issuer` serves it."""

    def __init__(self) -> None:
        self.url = ""
        self.keys = [SigningKey.new("k1")]
        self.published: list[SigningKey] = list(self.keys)
        self.opaque: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, int] = {}
        self.lock = threading.Lock()
        self.clients: dict[str, str | None] = {}
        """Clients that may sign people in: id → secret (``None``: a public client, PKCE alone)."""
        self.grants: dict[str, Grant] = {}
        self.authorized: list[dict[str, str]] = []
        """The parameters of each authorization request, in order."""
        self.exchanges: list[dict[str, str]] = []
        """The form of each token request, in order, and the issuer's answer's ``error`` if any."""
        self.subject = "alice"
        self.audience: str | None = None
        """The ``aud`` of issued access tokens; ``None``: the ``resource`` the client asked for."""
        self.granted_scope: str | None = None
        """The ``scope`` of issued access tokens; ``None``: what the client asked for."""
        self.lifetime = 600
        self.id_claims: dict[str, Any] = {}
        """Claims of issued ID tokens overridden (``nonce``, ``aud``…); ``None`` removes one."""
        self.deny = False
        """Send the person back with ``error=access_denied`` instead of a code."""

    def register(self, client_id: str, secret: str | None = None) -> None:
        """A client that may sign people in here."""
        self.clients[client_id] = secret

    @property
    def current(self) -> SigningKey:
        return self.keys[-1]

    def rotate(self, *, keep_old: bool = True) -> SigningKey:
        """A new key, published and used for the tokens made from now on."""
        key = SigningKey.new()
        with self.lock:
            self.keys.append(key)
            self.published = [*self.published, key] if keep_old else [key]
        return key

    def claims(self, resource: str, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.url, "sub": "alice", "aud": resource, "client_id": "claude", "scope": "kb:read",
            "iat": now, "exp": now + 600,
        }  # fmt: skip
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(
        self, resource: str, *, key: SigningKey | None = None, alg: str = "RS256", kid: str | None = "",
        **claims: Any,
    ) -> str:  # fmt: skip
        """A JWT signed with ``key`` (the current one) and naming it; ``kid=None`` leaves the key id
        out, another string names another key. ``claims`` override the defaults; ``None`` removes one."""
        key = key or self.current
        headers = None if kid is None else {"kid": kid or key.kid}
        return jwt.encode(self.claims(resource, **claims), key.private, algorithm=alg, headers=headers)

    def unsigned(self, resource: str, **claims: Any) -> str:
        """``alg: none``: a token with no signature at all."""
        header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": self.current.kid}).encode())
        return f"{header}.{_b64(json.dumps(self.claims(resource, **claims)).encode())}."

    def hmac_with_public_key(self, resource: str, **claims: Any) -> str:
        """HS256 keyed with the issuer's public key, which everyone has: the algorithm-confusion attack."""
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": self.current.kid}).encode())
        body = _b64(json.dumps(self.claims(resource, **claims)).encode())
        mac = hmac.new(self.current.public_pem(), f"{header}.{body}".encode(), hashlib.sha256).digest()
        return f"{header}.{body}.{_b64(mac)}"

    def opaque_token(self, resource: str, *, active: bool = True, **claims: Any) -> str:
        """An opaque token, known to the introspection endpoint."""
        token = secrets.token_urlsafe(24)
        self.opaque[token] = {"active": active, **self.claims(resource, **claims)}
        return token

    def count(self, path: str) -> int:
        with self.lock:
            return self.requests.get(path, 0)

    def authorize(self, params: dict[str, str]) -> tuple[int, dict[str, Any] | str]:
        """An authorization request answered: ``(302, where to)``, or ``(400, an OAuth error)`` for a
        request a careful client would not send (no redirect: its ``redirect_uri`` is not trusted)."""
        with self.lock:
            self.authorized.append(dict(params))
        problem = None
        if params.get("response_type") != "code":
            problem = "unsupported_response_type"
        elif params.get("client_id") not in self.clients or not params.get("redirect_uri"):
            problem = "unauthorized_client"
        elif params.get("code_challenge_method") != "S256" or len(params.get("code_challenge", "")) != 43:
            problem = "invalid_request"  # PKCE S256 is required
        elif not params.get("resource"):
            problem = "invalid_target"  # the resource is required
        if problem is not None:
            return 400, {"error": problem}
        back = {"state": params.get("state", ""), "iss": self.url}
        if self.deny:
            back["error"] = "access_denied"
        else:
            code = secrets.token_urlsafe(24)
            with self.lock:
                self.grants[code] = Grant(
                    params["client_id"], params["redirect_uri"], params["code_challenge"], params["resource"],
                    params.get("scope", ""), params.get("nonce"),
                )  # fmt: skip
            back["code"] = code
        return 302, f"{params['redirect_uri']}?{urlencode(back)}"

    def exchange(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        """A token request answered: the tokens, or an OAuth error (RFC 6749 §5.2)."""
        status, answer = self._exchange(form, authorization)
        with self.lock:
            self.exchanges.append({**form, **({"error": answer["error"]} if "error" in answer else {})})
        return status, answer

    def _exchange(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        client_id, secret = form.get("client_id"), None
        if authorization and authorization.startswith("Basic "):
            pair = base64.b64decode(authorization[6:]).decode()
            client_id, secret = (unquote(part) for part in pair.partition(":")[::2])
        if client_id not in self.clients or self.clients[client_id] != secret:
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "authorization_code":
            return 400, {"error": "unsupported_grant_type"}
        with self.lock:
            grant = self.grants.pop(form.get("code", ""), None)  # a code is used once
        if grant is None or grant.client_id != client_id or grant.redirect_uri != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        verifier = form.get("code_verifier", "")
        if _b64(hashlib.sha256(verifier.encode()).digest()) != grant.challenge:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        if form.get("resource", grant.resource) != grant.resource:
            return 400, {"error": "invalid_target"}
        now = int(time.time())
        scope = self.granted_scope if self.granted_scope is not None else grant.scope
        answer: dict[str, Any] = {
            "access_token": self.token(
                self.audience or grant.resource, sub=self.subject, client_id=client_id, scope=scope,
                iat=now, exp=now + self.lifetime,
            ),
            "token_type": "Bearer", "expires_in": self.lifetime, "scope": scope,
        }  # fmt: skip
        if "openid" in grant.scope.split():
            claims = {"iss": self.url, "sub": self.subject, "aud": client_id, "nonce": grant.nonce, "iat": now,
                      "exp": now + self.lifetime, **self.id_claims}  # fmt: skip
            claims = {k: v for k, v in claims.items() if v is not None}
            answer["id_token"] = jwt.encode(
                claims, self.current.private, algorithm="RS256", headers={"kid": self.current.kid}
            )
        return 200, answer


@dataclass(frozen=True)
class Grant:
    """A code given out: to which client, for which redirect URL, challenge, resource, scope, nonce."""

    client_id: str
    redirect_uri: str
    challenge: str
    resource: str
    scope: str
    nonce: str | None


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _answer(self, status: int, document: Any) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            with issuer.lock:
                issuer.requests[self.path] = issuer.requests.get(self.path, 0) + 1
                published = list(issuer.published)
            if urlsplit(self.path).path == "/authorize":
                query = parse_qs(urlsplit(self.path).query)
                status, answer = issuer.authorize({k: v[0] for k, v in query.items() if len(v) == 1})
                if isinstance(answer, str):
                    self.send_response(status)
                    self.send_header("Location", answer)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._answer(status, answer)
            elif self.path == "/.well-known/openid-configuration":
                self._answer(200, {
                    "issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks",
                    "introspection_endpoint": f"{issuer.url}/introspect",
                    "token_endpoint": f"{issuer.url}/token", "authorization_endpoint": f"{issuer.url}/authorize",
                    "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                })  # fmt: skip
            elif self.path == "/jwks":
                self._answer(200, {"keys": [k.jwk() for k in published]})
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:
            with issuer.lock:
                issuer.requests[self.path] = issuer.requests.get(self.path, 0) + 1
            if self.path == "/token":
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
                fields = {k: v[0] for k, v in form.items() if len(v) == 1}
                self._answer(*issuer.exchange(fields, self.headers.get("Authorization")))
                return
            if self.path != "/introspect":
                self._answer(404, {"error": "not_found"})
                return
            expected = base64.b64encode(":".join(INTROSPECTION_CLIENT).encode()).decode()
            if self.headers.get("Authorization") != f"Basic {expected}":
                self._answer(401, {"error": "invalid_client"})
                return
            form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
            token = form.get("token", [""])[0]
            self._answer(200, issuer.opaque.get(token, {"active": False}))

    return Handler


@contextmanager
def running_issuer() -> Iterator[Issuer]:
    """The issuer, served on a free loopback port until the block ends."""
    issuer = Issuer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(issuer))
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
