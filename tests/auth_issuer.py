"""An OAuth issuer made in the test: its own RSA keys, its metadata, key set and introspection
endpoint served over HTTP on loopback, and tokens signed the way identity providers sign them.

Nothing in the verifier under test is replaced: it discovers this issuer through
``/.well-known/openid-configuration``, fetches ``/jwks`` over HTTP, and posts opaque tokens to
``/introspect``. The issuer can rotate its keys while a server is running, make tokens a careful
verifier must refuse (``alg: none``, HMAC signed with the public key, foreign keys), and counts the
requests it answers.
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
from urllib.parse import parse_qs

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
            if self.path == "/.well-known/openid-configuration":
                self._answer(200, {
                    "issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks",
                    "introspection_endpoint": f"{issuer.url}/introspect",
                    "token_endpoint": f"{issuer.url}/token", "authorization_endpoint": f"{issuer.url}/authorize",
                })  # fmt: skip
            elif self.path == "/jwks":
                self._answer(200, {"keys": [k.jwk() for k in published]})
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:
            with issuer.lock:
                issuer.requests[self.path] = issuer.requests.get(self.path, 0) + 1
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
