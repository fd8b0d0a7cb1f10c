"""The web page's sign-in: the authorization-code flow with PKCE, run by the server for the page.

The server is the page's OAuth client, a backend for the frontend (docs/decisions/0056): the
identity provider's code comes back here, is exchanged here, and the access token stays here; the
browser holds an opaque HttpOnly session cookie (``sessions``) and its script never sees a token.
The routes, offered under the page's own policy (``server/http.py``):

- ``GET /auth/login[?next=/ui…]``: a sign-in started (``flow``: PKCE S256, ``state``, a ``nonce``
  for an OpenID provider) and sealed into a short-lived cookie; the person is sent to the provider's
  authorization endpoint, found in its metadata as the key set is, asking for the read scope (and
  ``openid``) for ``resource`` = the resource URL;
- ``GET /auth/callback``: the ``state`` checked against that cookie, the code exchanged at the token
  endpoint with the verifier and the resource, the ID token's signature, audience and ``nonce``
  checked, the access token checked by the gate's own verifiers (the audience, issuer, expiry and
  scope rules are those of a bearer header), a session opened, and the person sent back to the page;
- ``POST /auth/logout``: the session ended and its cookie removed (``POST``, so a link on another
  site cannot sign anyone out: ``SameSite=Lax`` withholds the cookie from a cross-site ``POST``);
- ``GET /auth/session``: who is signed in, for the page's script to offer "Sign out".

The redirect URL is ``/auth/callback`` on the resource URL's origin, from configuration, never from
the request. A sign-in that cannot finish is answered with its status and a short page in English
and Japanese; which check failed is said in the server's log only.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import html
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import jwt

from kbseek.server.auth.discovery import MAX_BYTES, TIMEOUT_S, discover
from kbseek.server.auth.flow import FLOW_S, Flow, Sealer, authorization_url, next_page
from kbseek.server.auth.identity import KbAccessToken
from kbseek.server.auth.jwks import KeySet
from kbseek.server.auth.reasons import Reason, Rejected
from kbseek.server.auth.sessions import FLOW_COOKIE, SESSION_COOKIE, Cookies, SessionStore
from kbseek.server.auth.settings import AuthConfig, PageClient, redirect_uri

log = logging.getLogger("kbseek.auth")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Check = Callable[[str], Awaitable[KbAccessToken]]
Clock = Callable[[], float]

LOGIN_PATH = "/auth/login"
METHODS = {
    LOGIN_PATH: ("GET", "HEAD"), "/auth/callback": ("GET",), "/auth/logout": ("POST",),
    "/auth/session": ("GET", "HEAD"),
}  # fmt: skip
DEFAULT_LIFETIME_S = 3600
"""A session's length when neither the token nor the token endpoint's answer says when it ends."""
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
NO_STORE = [(b"cache-control", b"no-store"), (b"referrer-policy", b"no-referrer")]

SAID = {
    "flow": (
        "This sign-in was not started in this browser, or took more than ten minutes.",
        "このサインインはこのブラウザーで始めたものではないか、10 分以上かかりました。",
    ),
    "provider": (
        "The identity provider did not sign you in.",
        "ID プロバイダーはサインインを完了しませんでした。",
    ),
    "code": (
        "The identity provider refused to finish the sign-in.",
        "ID プロバイダーがサインインの完了を拒みました。",
    ),
    "token": (
        "The identity provider's token is not one this server takes: ask whoever runs it to check the "
        "server's log.",
        "ID プロバイダーのトークンをこのサーバーは受け付けません。運用者にサーバーのログを確かめるよう頼んでください。",
    ),
    "scope": (
        "Your account may not read this knowledge base.",
        "このアカウントにはこのナレッジベースを読む権限がありません。",
    ),
    "unavailable": (
        "The identity provider cannot be reached now: try again shortly.",
        "ID プロバイダーにいま接続できません。少し待ってから試してください。",
    ),
}
"""What a person reads when signing in fails, by the failure's kind, in the page's two languages."""


class Failed(Exception):
    """A sign-in that cannot finish: its status, the kind a person is told, and the log's detail."""

    def __init__(self, status: int, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.status, self.kind, self.detail = status, kind, detail
        self.headers: list[tuple[bytes, bytes]] = []
        """Headers the answer carries besides the page (the spent flow's cookie removed)."""


@dataclass(frozen=True)
class Endpoints:
    """Where the provider takes the person (``authorize``) and the code (``token``), and whether it
    speaks OpenID Connect (an ID token then comes back, carrying the ``nonce``)."""

    authorize: str
    token: str
    oidc: bool


def endpoint_url(value: object, label: str) -> str:
    """A provider endpoint from its metadata: ``https`` (plain ``http`` on this machine only), no
    fragment; a query is kept (some providers name a policy in it)."""
    parts = urlsplit(value) if isinstance(value, str) and value.isascii() else None
    loopback = parts is not None and parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts is None or parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment:
        raise Rejected(Reason.UNAVAILABLE, f"the issuer's {label} is not a URL: {value!r}")
    if parts.scheme != "https" and not loopback:
        raise Rejected(Reason.UNAVAILABLE, f"the issuer's {label} is not https: {value!r}")
    return str(value)


def endpoints_of(metadata: dict[str, Any]) -> Endpoints:
    """The endpoints the page signs in through; :class:`Rejected` (``unavailable``) when the metadata
    lacks one, or lists PKCE methods without S256 (a provider that ignores the challenge would let a
    stolen code be exchanged)."""
    methods = metadata.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise Rejected(Reason.UNAVAILABLE, f"the issuer supports PKCE {methods}, not S256")
    return Endpoints(
        endpoint_url(metadata.get("authorization_endpoint"), "authorization_endpoint"),
        endpoint_url(metadata.get("token_endpoint"), "token_endpoint"),
        "id_token_signing_alg_values_supported" in metadata,  # required by OpenID Connect Discovery
    )


def exchange(endpoint: str, form: dict[str, str], client: PageClient) -> dict[str, Any]:
    """The token endpoint's answer to ``form`` (blocking), the client authenticated with HTTP Basic
    when it has a secret (``client_secret_basic``), named in the form when it has none."""
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    if client.secret is None:
        form = {**form, "client_id": client.client_id}
    else:
        basic = f"{quote(client.client_id, safe='')}:{quote(client.secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode()
    request = urllib.request.Request(endpoint, data=urlencode(form).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            raw = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        with exc:
            said = _error_of(exc.read(MAX_BYTES))
        if 400 <= exc.code < 500:
            raise Failed(401, "code", f"the token endpoint answered {exc.code} {said}") from None
        raise Failed(503, "unavailable", f"the token endpoint answered {exc.code} {said}") from None
    except (OSError, ValueError) as exc:
        raise Failed(503, "unavailable", f"the token endpoint could not be reached: {exc}") from None
    try:
        answer = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise Failed(503, "unavailable", "the token endpoint did not answer a JSON object")
    return answer


def _error_of(raw: bytes) -> str:
    """The OAuth ``error`` code of an error answer, for the log (never its whole body)."""
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        return "(not an OAuth error answer)"
    return repr(str(error)[:64])


class BrowserSignIn:
    """The ``/auth/*`` routes: see the module's docstring. ``check`` is the gate's check of a token
    from the issuer (a JWT against its keys, an opaque one by introspection); ``keys`` its key set,
    which also checks the ID token."""

    def __init__(
        self, config: AuthConfig, client: PageClient, *, check: Check, keys: KeySet, sessions: SessionStore,
        clock: Clock = time.time, sealer: Sealer | None = None,
    ) -> None:  # fmt: skip
        assert config.issuer is not None and config.resource is not None
        self.issuer, self.resource = config.issuer, config.resource
        self.read_scope = config.read_scope
        self.algorithms = config.algorithms
        self.clock_skew_s = config.clock_skew_s
        self.client = client
        self.redirect_uri = redirect_uri(config.resource)
        self.cookies = Cookies.for_resource(config.resource)
        self.sessions = sessions
        self._check = check
        self._keys = keys
        self._clock = clock
        self._sealer = sealer or Sealer()
        self._endpoints: Endpoints | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope.get("path", ""), scope.get("method", "GET")
        if path not in METHODS:
            await _json(send, 404, {"error": f"no such sign-in route: the routes are {', '.join(METHODS)}"})
            return
        if method not in METHODS[path]:
            allowed = ", ".join(METHODS[path])
            await _json(
                send, 405, {"error": f"{method} is not answered on {path}: send {allowed}"},
                [(b"allow", allowed.encode())],
            )  # fmt: skip
            return
        try:
            if path == LOGIN_PATH:
                await self._login(scope, send)
            elif path == "/auth/callback":
                await self._callback(scope, send)
            elif path == "/auth/logout":
                self.sessions.close(*self.cookies.read(scope, SESSION_COOKIE))
                headers = [(b"set-cookie", self.cookies.clear(SESSION_COOKIE).encode())]
                await _json(send, 200, {"signed_in": False}, headers)
            else:
                await self._session(scope, send)
        except Failed as failed:
            log.warning("page sign-in refused (%s): %s", failed.kind, failed.detail)
            await _page(send, failed.status, failed.kind, failed.headers)

    async def endpoints(self) -> Endpoints:
        """The provider's endpoints, from its metadata, fetched once (again only after a failure)."""
        async with self._lock:
            if self._endpoints is None:
                try:
                    self._endpoints = endpoints_of(await asyncio.to_thread(discover, self.issuer))
                except Rejected as exc:
                    raise Failed(503, "unavailable", exc.detail) from None
            return self._endpoints

    async def _login(self, scope: Scope, send: Send) -> None:
        asked = _params(scope)
        endpoints = await self.endpoints()
        flow = Flow.start(oidc=endpoints.oidc, next=next_page(asked.get("next")), now=self._clock())
        scopes = ["openid", self.read_scope] if endpoints.oidc else [self.read_scope]
        location = authorization_url(
            endpoints.authorize, flow, client_id=self.client.client_id, redirect_uri=self.redirect_uri,
            resource=self.resource, scopes=scopes,
        )  # fmt: skip
        cookie = self.cookies.set(FLOW_COOKIE, self._sealer.seal(flow), FLOW_S)
        await _redirect(send, location, [(b"set-cookie", cookie.encode())])

    async def _callback(self, scope: Scope, send: Send) -> None:
        params = _params(scope)
        now = self._clock()
        flows = [f for v in self.cookies.read(scope, FLOW_COOKIE) if (f := self._sealer.open(v, now=now))]
        if not flows:
            raise Failed(
                400, "flow", "no sign-in under way in this browser (no flow cookie, or an expired one)"
            )
        state = params.get("state") or ""
        flow = next((f for f in flows if hmac.compare_digest(f.state.encode(), state.encode())), None)
        if flow is None:
            raise Failed(400, "flow", "the state is not the one this browser's sign-in sent")
        try:
            identity = await self._finish(flow, params)
        except Failed as failed:  # the flow is spent either way: its cookie goes
            failed.headers.append((b"set-cookie", self.cookies.clear(FLOW_COOKIE).encode()))
            raise
        expires_at = float(identity.expires_at or now + DEFAULT_LIFETIME_S)
        session_id = self.sessions.open(identity.token, expires_at, identity.subject)
        log.info("page sign-in: subject %r, client %r", identity.subject, identity.client_id)
        await _redirect(
            send, flow.next,
            [(b"set-cookie", self.cookies.clear(FLOW_COOKIE).encode()),
             (b"set-cookie", self.cookies.set(SESSION_COOKIE, session_id, int(expires_at - now)).encode())],
        )  # fmt: skip

    async def _finish(self, flow: Flow, params: dict[str, str]) -> KbAccessToken:
        """The access token the provider's answer brings, checked; :class:`Failed` saying why not."""
        if "error" in params:
            error = params["error"][:64]
            raise Failed(
                403 if error == "access_denied" else 400, "provider", f"the provider answered error={error!r}"
            )
        if "iss" in params and params["iss"] != self.issuer:  # RFC 9207: an answer from another issuer
            raise Failed(400, "provider", f"the answer names the issuer {params['iss'][:200]!r}")
        code = params.get("code")
        if not code:
            raise Failed(400, "provider", "the provider's answer has no code")
        endpoints = await self.endpoints()
        form = {
            "grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
            "code_verifier": flow.verifier, "resource": self.resource,
        }  # fmt: skip
        answer = await asyncio.to_thread(exchange, endpoints.token, form, self.client)
        token, kind = answer.get("access_token"), answer.get("token_type")
        if not isinstance(token, str) or not token or not isinstance(kind, str) or kind.lower() != "bearer":
            raise Failed(401, "token", f"the token endpoint answered no bearer access token (type {kind!r})")
        if flow.nonce is not None and isinstance(answer.get("id_token"), str):
            await self._check_id_token(answer["id_token"], flow.nonce)
        try:
            identity = await self._check(token)
        except Rejected as refused:
            if refused.reason is Reason.UNAVAILABLE:
                raise Failed(503, "unavailable", refused.detail) from None
            raise Failed(
                401, "token", f"the access token is refused ({refused.reason.value}): {refused.detail}"
            ) from None
        if self.read_scope not in identity.scopes:
            raise Failed(403, "scope", f"subject {identity.subject!r} lacks the scope {self.read_scope}")
        if identity.expires_at is None and isinstance(answer.get("expires_in"), int):
            identity = identity.model_copy(update={"expires_at": int(self._clock()) + answer["expires_in"]})
        return identity

    async def _check_id_token(self, id_token: str, nonce: str) -> None:
        """The ID token signed by the issuer, for this client, and carrying this sign-in's nonce."""
        try:
            header = jwt.get_unverified_header(id_token)
            alg, kid = header.get("alg"), header.get("kid")
            if alg not in self.algorithms or (kid is not None and not isinstance(kid, str)):
                raise Failed(401, "token", f"the ID token's alg {alg!r} or kid is not accepted")
            key = await self._keys.key(kid, str(alg))
            claims = jwt.decode(
                id_token, key=key.key, algorithms=[str(alg)], audience=self.client.client_id, issuer=self.issuer,
                leeway=self.clock_skew_s, options={"require": ["exp", "iss", "aud"]},
            )  # fmt: skip
        except Rejected as refused:
            status, kind = (503, "unavailable") if refused.reason is Reason.UNAVAILABLE else (401, "token")
            raise Failed(
                status, kind, f"the ID token is refused ({refused.reason.value}): {refused.detail}"
            ) from None
        except jwt.PyJWTError as exc:
            raise Failed(401, "token", f"the ID token is refused: {exc}") from None
        if not hmac.compare_digest(str(claims.get("nonce", "")).encode(), nonce.encode()):
            raise Failed(401, "token", "the ID token's nonce is not this sign-in's")

    async def _session(self, scope: Scope, send: Send) -> None:
        session = self.sessions.get(*self.cookies.read(scope, SESSION_COOKIE))
        if session is None:
            await _json(send, 401, {"error": "not signed in", "sign_in": LOGIN_PATH})
            return
        await _json(send, 200, {"subject": session.subject, "expires_at": int(session.expires_at)})


def _params(scope: Scope) -> dict[str, str]:
    """The query's parameters, each once; a repeated one counts as absent (RFC 6749 §3.1 forbids
    repeating them, and a second value would be a guess)."""
    raw = bytes(scope.get("query_string", b"")).decode("latin-1")
    parsed = parse_qs(raw, keep_blank_values=True, errors="replace", max_num_fields=32)
    return {name: values[0] for name, values in parsed.items() if len(values) == 1}


async def _json(
    send: Send, status: int, document: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(document).encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    *NO_STORE, *(headers or [])],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, headers: list[tuple[bytes, bytes]]) -> None:
    """303: the browser follows with a ``GET``; nothing cached, no ``Referer`` carrying a code on."""
    await send({
        "type": "http.response.start", "status": 303,
        "headers": [(b"location", location.encode("ascii")), (b"content-length", b"0"), *NO_STORE, *headers],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": b""})


async def _page(send: Send, status: int, kind: str, headers: list[tuple[bytes, bytes]]) -> None:
    """A short page saying, in English and Japanese, that signing in failed, with a way to try again."""
    english, japanese = (html.escape(s) for s in SAID[kind])
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>kbseek: sign-in</title></head>'
        f'<body><p>{english}</p><p lang="ja">{japanese}</p>'
        f'<p><a href="{LOGIN_PATH}">Sign in again / もう一度サインイン</a> · <a href="/ui">kbseek</a></p>'
        "</body></html>"
    ).encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                    (b"content-security-policy", PAGE_CSP.encode()), *NO_STORE, *headers],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})
