"""The issuer's signing keys, cached, and fetched again when a token names a key the cache lacks.

Issuers rotate keys: they publish the new key, then sign with it. A token whose ``kid`` the cache
does not hold makes one fetch of the key set, so the new key is taken without a restart; such
fetches are at most one per ``refetch_s`` and shared by every request waiting for one, so tokens
with made-up key ids cannot make the server flood the issuer. The set is also refreshed when older
than ``max_age_s``, and an issuer that is down then leaves the keys already held in use.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import jwt

from kbseek.auth_spec import check_url
from kbseek.errors import ConfigError
from kbseek.server.auth.discovery import discover, fetch_json
from kbseek.server.auth.reasons import Reason, Rejected

log = logging.getLogger(__name__)

MAX_AGE_S = 600.0
"""Keys are fetched again after this long even when no token asks for a new one, so a key the
issuer withdrew stops being accepted."""

KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
"""The key type each algorithm family is checked with: a token whose ``alg`` does not fit its key
is refused rather than checked with a key of another kind (the HMAC-with-a-public-key attack)."""

Clock = Callable[[], float]


class KeySet:
    """The issuer's JSON Web Key Set: keys by id, found from the issuer's metadata."""

    def __init__(
        self, issuer: str, *, refetch_s: float = 30.0, max_age_s: float = MAX_AGE_S,
        clock: Clock = time.monotonic, load: Callable[[], Awaitable[list[dict[str, Any]]]] | None = None,
    ) -> None:  # fmt: skip
        self.issuer = issuer
        self.refetch_s = refetch_s
        self.max_age_s = max_age_s
        self._clock = clock
        self._load = load or self._fetch
        self._keys: dict[str | None, list[dict[str, Any]]] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = asyncio.Lock()
        self._jwks_uri: str | None = None
        self.fetches = 0
        """How many times the set was fetched (the tests count them)."""

    async def key(self, kid: str | None, alg: str) -> jwt.PyJWK:
        """The key that checks a token with header ``kid`` and ``alg``; :class:`Rejected` with
        ``unknown_key`` when the issuer has none, or ``unavailable`` when its keys cannot be had."""
        now = self._clock()
        if self._fetched_at is None or now - self._fetched_at >= self.max_age_s:
            await self._refresh(stale_ok=self._fetched_at is not None)
        elif kid is not None and kid not in self._keys:
            await self._refresh(stale_ok=True, only_if_missing=kid)
        return self._pick(kid, alg)

    async def fetch(self) -> None:
        """Fetch the set now, whatever is held and however recently it was tried (``kbseek doctor
        --auth`` asks once and wants the answer); :class:`Rejected` when it cannot be had."""
        self._attempted_at = None
        await self._refresh(stale_ok=False)

    @property
    def jwks_uri(self) -> str | None:
        """Where the set was fetched from, once the issuer's metadata has said."""
        return self._jwks_uri

    def usable(self, algorithms: Sequence[str]) -> dict[str | None, list[str]]:
        """Each key held, by id, with those of ``algorithms`` a token naming it may be signed with:
        the choice :meth:`key` makes, asked of every key (a key without an id as a token without
        one would find it)."""
        usable: dict[str | None, list[str]] = {}
        for kid in self._keys:
            usable[kid] = []
            for alg in algorithms:
                try:
                    self._pick(kid, alg)
                except Rejected:
                    continue
                usable[kid].append(alg)
        return usable

    async def _refresh(self, *, stale_ok: bool, only_if_missing: str | None = None) -> None:
        async with self._lock:  # one fetch for every request that waited for it
            now = self._clock()
            if only_if_missing is not None and only_if_missing in self._keys:
                return  # fetched by the request before this one
            if self._attempted_at is not None and now - self._attempted_at < self.refetch_s:
                if self._fetched_at is None:
                    raise Rejected(Reason.UNAVAILABLE, f"the keys of {self.issuer} could not be fetched")
                return  # rate-limited: the keys held answer
            self._attempted_at = now
            try:
                keys = await self._load()
            except Rejected as exc:
                if not stale_ok:
                    raise
                log.warning("keeping the keys of %s: fetching them again failed: %s", self.issuer, exc.detail)
                return
            self.fetches += 1
            self._keys = {}
            for jwk in keys:
                if isinstance(jwk, dict) and jwk.get("use", "sig") == "sig":
                    kid = jwk.get("kid")
                    self._keys.setdefault(kid if isinstance(kid, str) else None, []).append(jwk)
            self._fetched_at = self._clock()

    def _pick(self, kid: str | None, alg: str) -> jwt.PyJWK:
        family = KEY_TYPES.get(alg[:2])
        if kid is None:  # a token without a kid is taken only when the issuer has one key of its kind
            candidates = [k for keys in self._keys.values() for k in keys if k.get("kty") == family]
            if len(candidates) != 1:
                raise Rejected(Reason.UNKNOWN_KEY, f"the token names no key id and {self.issuer} has "
                               f"{len(candidates)} {family} keys")  # fmt: skip
        else:
            candidates = [k for k in self._keys.get(kid, []) if k.get("kty") == family]
            if not candidates:
                if kid in self._keys:
                    raise Rejected(Reason.ALGORITHM, f"alg {alg} does not fit the key {kid!r}")
                raise Rejected(Reason.UNKNOWN_KEY, f"{self.issuer} publishes no key {kid!r}")
        jwk = candidates[0]
        if jwk.get("alg", alg) != alg:
            raise Rejected(Reason.ALGORITHM, f"the key {kid!r} is for {jwk.get('alg')}, the token says {alg}")
        try:
            return jwt.PyJWK(jwk, algorithm=alg)
        except jwt.PyJWTError as exc:
            raise Rejected(Reason.UNKNOWN_KEY, f"the key {kid!r} cannot be used: {exc}") from None

    async def _fetch(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._fetch_blocking)

    def _fetch_blocking(self) -> list[dict[str, Any]]:
        if self._jwks_uri is None:
            uri = discover(self.issuer).get("jwks_uri")
            if not isinstance(uri, str):
                raise Rejected(Reason.UNAVAILABLE, f"the metadata of {self.issuer} has no jwks_uri")
            try:
                self._jwks_uri = check_url(uri, "jwks_uri", https_unless_loopback=True)
            except ConfigError as exc:
                raise Rejected(Reason.UNAVAILABLE, str(exc)) from None
        document = fetch_json(self._jwks_uri)
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise Rejected(Reason.UNAVAILABLE, f"{self._jwks_uri} is not a JSON Web Key Set")
        return keys
