"""What ``[auth]`` says: sign-in for ``serve --http``, validated when the file is read.

kbseek over HTTP is an OAuth 2.1 resource server (the MCP specification's "Authorization"): it takes
bearer tokens an identity provider (the *issuer*) made for it, and checks them itself
(``server/auth/``, docs/decisions/0054). This value holds the shape of that configuration only: URLs,
scope names, the algorithms accepted, and the *names* of the environment variables that hold
secrets, never a secret, so a config file can be committed. The server reads the variables when it
starts. A table left out (every default) is a server that takes no token, local-only as before.

Lives in the settings layer beside ``config`` (which lists it in ``SECTIONS``) rather than in
``server/auth/``, because the config file is read below the surfaces; the server turns it into
verifiers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from kbseek.errors import ConfigError

ASYMMETRIC_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
"""The JWS algorithms ``[auth].algorithms`` may name: signatures checked with the issuer's *public*
key. ``none`` and the HMAC family (``HS*``) are never accepted: an HMAC checked with a public key
lets anyone who has that key (everyone) sign tokens."""

DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
"""What the identity providers teams use sign access tokens with (Keycloak, Entra, Auth0 and Okta
default to RS256)."""

MAX_CLOCK_SKEW_S = 300.0
"""A larger tolerance would let an expired token be used for more than five minutes."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CREDENTIAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CLIENT_ID = re.compile(r"^[\x21-\x7e]{1,255}$")
"""An OAuth client id: visible ASCII (RFC 6749 allows it; providers use GUIDs, URLs and names)."""
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_PREFIX = "token:"
"""How ``[auth.collections]`` names a static token rather than a group: ``"token:ci"``."""


@dataclass(frozen=True)
class StaticTokenSpec:
    """One named static credential: the variable holding its secret and the scopes it grants."""

    name: str
    env: str
    scopes: tuple[str, ...] = ()
    """Empty: the read scope, whatever ``[auth].read_scope`` names."""


def parse_static_token(text: str, where: str = "[auth].tokens") -> StaticTokenSpec:
    """``"NAME=VAR"`` or ``"NAME=VAR scope scope…"``: a credential's name, the environment variable
    holding its secret, and its scopes, space-separated as OAuth writes scopes."""
    name, sep, rest = text.partition("=")
    parts = rest.split()
    if not sep or not parts:
        raise ConfigError(
            f"{where}: {text!r} is not NAME=VAR or 'NAME=VAR SCOPE…' (e.g. 'ci=KB_TOKEN_CI kb:read')"
        )
    if not _CREDENTIAL_NAME.match(name.strip()):
        raise ConfigError(
            f"{where}: {name.strip()!r} is not a credential name (letters, digits, '.', '_', '-'; "
            "at most 64 characters)"
        )
    if not _ENV_NAME.match(parts[0]):
        raise ConfigError(f"{where}: {parts[0]!r} is not the name of an environment variable")
    return StaticTokenSpec(name.strip(), parts[0], tuple(parts[1:]))


def check_url(value: str, label: str, *, https_unless_loopback: bool) -> str:
    """``value`` when it is an absolute http(s) URL without a query or fragment, else a ConfigError.

    With ``https_unless_loopback``, plain ``http`` is refused except for a loopback host: an issuer's
    keys fetched in clear could be replaced on the way.
    """
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{label} must be an absolute http:// or https:// URL, not {value!r}")
    if parts.query or parts.fragment or "#" in value:
        raise ConfigError(f"{label} must have no query or fragment: {value!r}")
    if https_unless_loopback and parts.scheme != "https" and parts.hostname not in _LOOPBACK:
        raise ConfigError(f"{label} must be https:// (plain http only on this machine): {value!r}")
    return value


@dataclass(frozen=True)
class AuthSpec:
    """The ``[auth]`` table: who issues tokens, what they must be issued for, which scopes mean what.

    Every check is made here, when the file is read, so a typo fails at start naming the key.
    """

    issuer: str | None = None
    """The identity provider's issuer URL, exactly as its tokens' ``iss`` says it (Auth0's ends with
    a slash, Keycloak's does not). Its keys are found from its metadata (``/.well-known/…``). Unset:
    no OAuth, only the static tokens, if any. Also ``serve --auth-issuer``."""
    resource: str | None = None
    """This server's public URL as hosts reach it, e.g. ``https://kb.example.com/mcp``: what tokens
    must be issued for (their audience), and the ``resource`` of its published metadata. Taken from
    here, never from a request, so a TLS proxy in front cannot change it. Required with ``issuer``.
    Also ``serve --auth-resource``."""
    audiences: tuple[str, ...] = ()
    """Values a token's ``aud`` may hold instead of the resource URL, compared exactly: for a
    provider that never writes the URL there, such as Microsoft Entra, whose v2 access tokens carry
    the application's client ID (``["00000000-…"]``). Needs ``issuer``."""
    read_scope: str = "kb:read"
    """The scope a token needs to search and read (every tool, resource, prompt and ``/api`` route)."""
    write_scope: str = "kb:write"
    """The scope the tools that change notes will need; no tool changes notes yet. Published in the
    metadata so providers can be set up once."""
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    """The signature algorithms accepted in a token's header; only public-key ones (RS, PS, ES,
    EdDSA), never ``none`` or ``HS*``."""
    clock_skew: float = 60.0
    """Seconds of difference between this server's clock and the issuer's tolerated on ``exp``,
    ``nbf`` and ``iat`` (at most 300)."""
    key_refetch_interval: float = 30.0
    """A token signed with a key the cached key set lacks fetches the set again, at most once per
    this many seconds: a rotated key is picked up without a restart, and a stream of made-up key ids
    cannot turn into a stream of requests to the issuer."""
    introspection_endpoint: str | None = None
    """An RFC 7662 endpoint for opaque (non-JWT) access tokens; unset, the issuer's metadata's
    ``introspection_endpoint`` is used when a client id is set."""
    introspection_client_id: str | None = None
    """The client id this server introspects as; setting it turns introspection on for tokens that
    are not JWTs."""
    introspection_secret_env: str | None = None
    """The environment variable holding that client's secret (never the secret itself)."""
    tokens: tuple[str, ...] = ()
    """Static bearer tokens beside OAuth, for headless clients and CI, each ``"NAME=VAR"`` (the read
    scope) or ``"NAME=VAR SCOPE…"``: a name of its own, so one can be revoked alone and a record can
    say which was used, and the environment variable holding its secret. Also ``serve --auth-token``."""
    groups_claim: str = "groups"
    """The token claim naming the caller's groups or roles, read by ``[auth.collections]``: a claim's
    name (``groups``, ``roles``, Auth0's ``https://example.com/groups``) or, when no claim has that
    name, a dotted path into nested claims (Keycloak's ``realm_access.roles``)."""
    collections: dict[str, list[str]] | None = None
    """``[auth.collections]``: which collections each group may read, e.g. ``support = ["runbooks"]``.
    A key is a group from ``groups_claim``, ``"token:NAME"`` for a static token, or ``"*"`` for every
    signed-in caller; a value lists collection names, or ``["*"]`` for all. A caller reads the
    collections of all its groups; the others do not exist for it. Unset: every caller with the read
    scope reads every collection."""
    page_client_id: str | None = None
    """The OAuth client the web page signs people in as (the server runs the authorization-code flow
    with PKCE; the token stays on the server, the browser holds an HttpOnly session cookie). Register
    ``<the resource URL's origin>/auth/callback`` as its redirect URL. Unset: the page asks for a
    token, as before. Needs ``issuer`` (docs/decisions/0056)."""
    page_client_secret_env: str | None = None
    """The environment variable holding the page client's secret, for a provider that registers it
    as a confidential client; unset, it signs in as a public client (PKCE alone)."""

    def __post_init__(self) -> None:
        optional = ("issuer", "resource", "introspection_endpoint", "introspection_client_id",
                    "introspection_secret_env", "page_client_id", "page_client_secret_env")  # fmt: skip
        for name in optional:
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ConfigError(f"[auth].{name} must be a string, not {getattr(self, name)!r}")
        if self.issuer is not None:
            check_url(self.issuer, "[auth].issuer", https_unless_loopback=True)
        if self.resource is not None:
            check_url(self.resource, "[auth].resource", https_unless_loopback=False)
        if any(not isinstance(a, str) or not a.strip() for a in self.audiences):
            raise ConfigError("[auth].audiences must be a list of non-empty strings")
        for label, scope in (("read_scope", self.read_scope), ("write_scope", self.write_scope)):
            if not scope or any(c.isspace() or c in '"\\' for c in scope):
                raise ConfigError(f"[auth].{label} must be one scope name, without spaces or quotes")
        if self.read_scope == self.write_scope:
            raise ConfigError("[auth].read_scope and [auth].write_scope must differ")
        unknown = [a for a in self.algorithms if a not in ASYMMETRIC_ALGORITHMS]
        if unknown or not self.algorithms:
            raise ConfigError(
                f"[auth].algorithms: {', '.join(map(repr, unknown)) or 'an empty list'} refused; "
                f"public-key algorithms only: {', '.join(ASYMMETRIC_ALGORITHMS)}"
            )
        if not 0 <= self.clock_skew <= MAX_CLOCK_SKEW_S:  # also refuses NaN
            raise ConfigError(f"[auth].clock_skew must be between 0 and {MAX_CLOCK_SKEW_S:g} seconds")
        if not 0 <= self.key_refetch_interval <= 3600:
            raise ConfigError("[auth].key_refetch_interval must be between 0 and 3600 seconds")
        self._check_introspection()
        self._check_page()
        names = [parse_static_token(t).name for t in self.tokens]
        if len(names) != len(set(names)):
            raise ConfigError("[auth].tokens: two tokens have the same name; give each its own")
        if not isinstance(self.groups_claim, str) or not self.groups_claim.strip():
            raise ConfigError("[auth].groups_claim must name a claim, e.g. 'groups' or 'realm_access.roles'")
        self._check_collections()

    def check_complete(self) -> None:
        """The checks between keys that a flag may complete: run once ``--auth-issuer`` and
        ``--auth-resource`` are laid over the file (``server/auth/settings.py``'s ``with_flags``), so
        a file holding the introspection client or the resource alone, with the issuer given as a
        flag, is taken."""
        if self.issuer is not None and self.resource is None:
            raise ConfigError(
                "[auth].issuer needs [auth].resource: the public URL tokens must be issued for, "
                "e.g. https://kb.example.com/mcp (serve --auth-resource)"
            )
        if self.issuer is None:
            given = [
                name for name in ("resource", "audiences", "introspection_client_id", "introspection_endpoint")
                if getattr(self, name)
            ]  # fmt: skip
            if given:
                raise ConfigError(
                    f"[auth].{given[0]} is set without [auth].issuer (serve --auth-issuer): it is about tokens "
                    "from an identity provider"
                )

    def _check_collections(self) -> None:
        if self.collections is None:
            return
        if not isinstance(self.collections, dict):
            raise ConfigError('[auth.collections] must be a table: GROUP = ["COLLECTION", …]')
        for group, names in self.collections.items():
            if not group.strip():
                raise ConfigError("[auth.collections]: a group name is empty")
            if group.startswith(TOKEN_PREFIX) and not _CREDENTIAL_NAME.match(group[len(TOKEN_PREFIX) :]):
                raise ConfigError(f"[auth.collections]: {group!r} names no possible static token")
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise ConfigError(
                    f'[auth.collections].{group} must be a list of collection names, e.g. ["runbooks"] '
                    'or ["*"] for all'
                )

    def _check_introspection(self) -> None:
        if self.introspection_endpoint is not None:
            check_url(
                self.introspection_endpoint, "[auth].introspection_endpoint", https_unless_loopback=True
            )
        wanted = (self.introspection_endpoint, self.introspection_client_id, self.introspection_secret_env)
        if any(v is not None for v in wanted):
            if self.introspection_client_id is None or self.introspection_secret_env is None:
                raise ConfigError(
                    "[auth] introspection needs introspection_client_id and introspection_secret_env"
                )
            if not _ENV_NAME.match(self.introspection_secret_env):
                raise ConfigError(
                    "[auth].introspection_secret_env must name an environment variable, "
                    f"not {self.introspection_secret_env!r}"
                )

    def _check_page(self) -> None:
        if self.page_client_secret_env is not None and self.page_client_id is None:
            raise ConfigError("[auth].page_client_secret_env is set without [auth].page_client_id")
        if self.page_client_id is None:
            return  # its need of an issuer is checked once the flags are laid over the file (settings)
        if not _CLIENT_ID.match(self.page_client_id):
            raise ConfigError(
                f"[auth].page_client_id must be a client id without spaces or control characters, "
                f"not {self.page_client_id!r}"
            )
        if self.page_client_secret_env is not None and not _ENV_NAME.match(self.page_client_secret_env):
            raise ConfigError(
                "[auth].page_client_secret_env must name an environment variable, "
                f"not {self.page_client_secret_env!r}"
            )

    @property
    def readers(self) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
        """``[auth.collections]`` as pairs of a group and the collections it reads; ``None``: no rule."""
        if self.collections is None:
            return None
        return tuple((group, tuple(names)) for group, names in self.collections.items())

    @property
    def static_tokens(self) -> tuple[StaticTokenSpec, ...]:
        return tuple(parse_static_token(t) for t in self.tokens)
