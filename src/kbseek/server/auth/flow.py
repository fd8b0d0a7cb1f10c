"""One sign-in under way: PKCE, ``state`` and ``nonce``, kept in a sealed cookie until the callback.

When a person starts signing in (``/auth/login``), the server makes a PKCE verifier (RFC 7636, sent
as its S256 challenge), a ``state`` (which the callback must bring back: it ties the answer to this
browser, so a code someone else obtained cannot be slipped into it) and, with an OpenID provider, a
``nonce`` (which the ID token must carry). They are kept in the browser, in a short-lived HttpOnly
cookie sealed with a key this process made at start (HMAC-SHA256), rather than on the server: the
server holds nothing for a sign-in that is never finished, so a stream of ``/auth/login`` requests
costs no memory and evicts no one else's sign-in. The seal stops the browser's side from changing
what the server will send the provider; the values are not secret from the person signing in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlencode

FLOW_S = 600
"""How long a person has between starting to sign in and coming back (the provider's own login,
a second factor, a password reset)."""
PAGE = "/ui"
"""Where a person lands after signing in, unless the page asked for one of its own addresses."""
_NEXT = re.compile(r"^/ui(?:[/?#][\x21-\x7e]*)?$")
"""A page address to come back to: ``/ui`` and what follows it, visible ASCII (the page percent-encodes
the rest); never another path, host or scheme (an open redirect would lend this server's name)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def pkce_verifier() -> str:
    """A code verifier: 64 random bytes, 86 characters of base64url (RFC 7636 §4.1 asks 43 to 128)."""
    return secrets.token_urlsafe(64)


def pkce_challenge(verifier: str) -> str:
    """The S256 challenge for ``verifier``: base64url of its SHA-256, unpadded (RFC 7636 §4.2)."""
    return _b64(hashlib.sha256(verifier.encode("ascii")).digest())


def next_page(asked: str | None) -> str:
    """Where to send a person after signing in: ``asked`` when it is one of the page's own
    addresses, else the page."""
    if asked and _NEXT.match(asked) and "\\" not in asked:
        return asked
    return PAGE


@dataclass(frozen=True)
class Flow:
    """A sign-in under way, as the ``flow`` cookie carries it."""

    state: str
    verifier: str = field(repr=False)
    nonce: str | None
    next: str
    started: int

    @classmethod
    def start(cls, *, oidc: bool, next: str, now: float) -> Flow:
        return cls(
            secrets.token_urlsafe(32), pkce_verifier(), secrets.token_urlsafe(32) if oidc else None, next,
            int(now),
        )  # fmt: skip


class Sealer:
    """Seals flows into cookie values and opens them; the key lives as long as the process."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def seal(self, flow: Flow) -> str:
        body = _b64(json.dumps([flow.state, flow.verifier, flow.nonce, flow.next, flow.started]).encode())
        return f"{body}.{self._mac(body)}"

    def open(self, value: str, *, now: float) -> Flow | None:
        """The flow ``value`` seals, or ``None``: not sealed by this process, changed, or older than
        :data:`FLOW_S`."""
        body, sep, mac = value.partition(".")
        if not sep or not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            state, verifier, nonce, next_, started = json.loads(_unb64(body))
        except (ValueError, TypeError):
            return None
        if not (isinstance(started, int) and 0 <= now - started <= FLOW_S):
            return None
        shown = next_page(next_ if isinstance(next_, str) else None)
        return Flow(str(state), str(verifier), None if nonce is None else str(nonce), shown, started)

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii", "replace"), hashlib.sha256).digest())


def authorization_url(
    endpoint: str, flow: Flow, *, client_id: str, redirect_uri: str, resource: str, scopes: list[str]
) -> str:
    """The provider's authorization endpoint asked for a code: PKCE S256, ``state``, the ``nonce``
    of an OpenID sign-in, and ``resource`` (RFC 8707), so the token is issued for this server."""
    params = {
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
        "scope": " ".join(scopes), "state": flow.state, "code_challenge": pkce_challenge(flow.verifier),
        "code_challenge_method": "S256", "resource": resource,
    }  # fmt: skip
    if flow.nonce is not None:
        params["nonce"] = flow.nonce
    return endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
