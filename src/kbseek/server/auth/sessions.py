"""The web page's sessions: an opaque id in an HttpOnly cookie, the access token kept on the server.

A person signed in through the page (``browser``) holds a cookie naming a session, never the token:
a script on the page, or one that found its way there, has nothing to steal (docs/decisions/0056).
The session is a holder of the access token the identity provider issued for this server; the gate
checks that token on every request exactly as it checks a bearer header, so expiry, audience, scope
and the record of reads are one set of rules, and a session ends when its token does.

Sessions live in this process's memory, keyed by a hash of their id (a memory dump shows no usable
cookie), at most :data:`MAX_SESSIONS` at once: a full store first drops the expired ones, then the one
closest to its end. A restart signs everyone out; several replicas behind one address need their
balancer to keep a person on one (or an SSO proxy in front, as the decision record says). Only the
event loop's thread touches the store, so it has no lock.

The cookies are ``HttpOnly`` (no script reads them), ``SameSite=Lax`` (a cross-site request other
than a top-level ``GET`` navigation carries none), ``Path=/``, and, when the resource URL is
``https``, ``Secure`` with the ``__Host-`` prefix (the browser then refuses the cookie from any other
origin, sibling subdomains included, and over plain HTTP).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SESSION_COOKIE = "kbseek-session"
FLOW_COOKIE = "kbseek-signin"
"""The cookie holding a sign-in under way (``flow``), until the provider sends the person back."""
MAX_SESSIONS = 1000
"""Sessions held at once; each is a few hundred bytes and a token."""
ID_BYTES = 32

Clock = Callable[[], float]
Scope = MutableMapping[str, Any]


@dataclass(frozen=True)
class Cookies:
    """How this server names and flags its cookies: ``secure`` when the resource URL is ``https``."""

    secure: bool

    @classmethod
    def for_resource(cls, resource: str) -> Cookies:
        """The cookies of a server reached at ``resource``: a TLS proxy in front still makes the
        browser's side ``https``, so the configured URL says, not how this process is bound."""
        return cls(secure=urlsplit(resource).scheme == "https")

    def name(self, base: str) -> str:
        return f"__Host-{base}" if self.secure else base

    def set(self, base: str, value: str, max_age: int) -> str:
        """A ``Set-Cookie`` value for ``base`` holding ``value`` for ``max_age`` seconds."""
        flags = f"Max-Age={max(0, int(max_age))}; Path=/; HttpOnly; SameSite=Lax"
        return f"{self.name(base)}={value}; {flags}" + ("; Secure" if self.secure else "")

    def clear(self, base: str) -> str:
        """A ``Set-Cookie`` value that removes ``base`` from the browser."""
        return self.set(base, "", 0)

    def read(self, scope: Scope, base: str) -> list[str]:
        """Every value the request's ``Cookie`` headers give ``base`` (a browser may send two of one
        name when another path or domain set one; each is tried, none is trusted for being first)."""
        wanted = self.name(base)
        values = []
        for key, raw in scope.get("headers", []):
            if key.lower() != b"cookie":
                continue
            for pair in bytes(raw).decode("latin-1").split(";"):
                name, sep, value = pair.strip().partition("=")
                if sep and name == wanted and value:
                    values.append(value.strip())
        return values


@dataclass(frozen=True)
class Session:
    """What a session holds: the access token it stands for, and when it ends."""

    token: str = field(repr=False)
    expires_at: float
    subject: str | None


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


class SessionStore:
    """Sessions by id, bounded and expiring; see the module's docstring."""

    def __init__(self, *, limit: int = MAX_SESSIONS, clock: Clock = time.time) -> None:
        self.limit = limit
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, token: str, expires_at: float, subject: str | None) -> str:
        """A new session for ``token`` until ``expires_at`` (epoch seconds); its id, for the cookie."""
        if len(self._sessions) >= self.limit:
            self._make_room()
        session_id = secrets.token_urlsafe(ID_BYTES)
        self._sessions[_key(session_id)] = Session(token, expires_at, subject)
        return session_id

    def get(self, *session_ids: str) -> Session | None:
        """The live session the first of ``session_ids`` that names one names; an expired one is
        dropped on the way."""
        now = self._clock()
        for session_id in session_ids:
            key = _key(session_id)
            session = self._sessions.get(key)
            if session is None:
                continue
            if session.expires_at <= now:
                del self._sessions[key]
                continue
            return session
        return None

    def close(self, *session_ids: str) -> bool:
        """End the sessions named; whether one was open."""
        return any([self._sessions.pop(_key(s), None) is not None for s in session_ids])

    def _make_room(self) -> None:
        now = self._clock()
        for key in [k for k, s in self._sessions.items() if s.expires_at <= now]:
            del self._sessions[key]
        while len(self._sessions) >= self.limit:
            soonest = min(self._sessions, key=lambda k: self._sessions[k].expires_at)
            del self._sessions[soonest]
