"""``[auth]`` and the ``serve`` flags resolved into what the server runs with, secrets included.

:class:`~kbseek.auth_spec.AuthSpec` is the file's shape; this is the running value: the flags laid
over it (``--auth-issuer``, ``--auth-resource``, ``--auth-token``, and the older ``--token-env``),
each static token's secret read from its environment variable, and the introspection client's and
the page client's secrets too. A variable that is unset or empty stops the server at start, naming it: a credential
that silently does not exist would be found out by the person it locks out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

from kbseek.auth_spec import TOKEN_PREFIX, AuthSpec, StaticTokenSpec, parse_static_token
from kbseek.errors import ConfigError

MCP_PATH = "/mcp"
"""Where the server answers MCP; a resource URL with another path is reached through a proxy that
rewrites it."""


@dataclass(frozen=True)
class StaticCredential:
    """A named static bearer token and the scopes it grants."""

    name: str
    secret: str = field(repr=False)
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class Introspection:
    """The RFC 7662 client: where to ask (``None``: the issuer's metadata says) and as whom."""

    endpoint: str | None
    client_id: str
    secret: str = field(repr=False)


@dataclass(frozen=True)
class PageClient:
    """The OAuth client the web page signs in as; ``secret`` ``None`` for a public client."""

    client_id: str
    secret: str | None = field(default=None, repr=False)


CALLBACK_PATH = "/auth/callback"
"""Where the identity provider sends a person back to, on the resource URL's origin."""


def redirect_uri(resource: str) -> str:
    """The page's redirect URL: ``/auth/callback`` on ``resource``'s origin, from configuration only
    (a request's ``Host`` could be anyone's, and the provider compares this with what was registered)."""
    parts = urlsplit(resource)
    return urlunsplit((parts.scheme, parts.netloc, CALLBACK_PATH, "", ""))


@dataclass(frozen=True)
class AuthConfig:
    """What the gate checks. ``issuer`` ``None``: static tokens only, or nothing at all."""

    read_scope: str = "kb:read"
    write_scope: str = "kb:write"
    issuer: str | None = None
    resource: str | None = None
    algorithms: tuple[str, ...] = ()
    clock_skew_s: float = 60.0
    key_refetch_s: float = 30.0
    introspection: Introspection | None = None
    static: tuple[StaticCredential, ...] = ()
    audiences: tuple[str, ...] = ()
    groups_claim: str = "groups"
    readers: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    """``[auth.collections]``: each group and the collections it reads; ``None``: no rule."""
    page: PageClient | None = None
    """The web page's own sign-in (docs/decisions/0056); ``None``: the page asks for a token."""

    @property
    def enabled(self) -> bool:
        """Whether any token is asked for; a server with neither OAuth nor a static token is local-only."""
        return self.issuer is not None or bool(self.static)

    @property
    def scopes(self) -> tuple[str, str]:
        return self.read_scope, self.write_scope

    @classmethod
    def resolve(
        cls, spec: AuthSpec, *, issuer: str | None = None, resource: str | None = None,
        tokens: Sequence[str] = (), token_env: str | None = None, environ: Mapping[str, str] = os.environ,
    ) -> AuthConfig:  # fmt: skip
        """The configuration in force: flags over ``spec``, secrets from ``environ``.

        ``tokens`` are ``--auth-token`` values (``NAME=VAR [SCOPE…]``), added to the file's;
        ``token_env`` is ``--token-env``'s variable, a credential named after it with the read scope.
        Raises :class:`~kbseek.errors.ConfigError` naming the flag, key or variable at fault.
        """
        spec = with_flags(spec, issuer=issuer, resource=resource)
        specs = static_token_specs(spec, tokens=tokens, token_env=token_env)
        static = tuple(
            StaticCredential(s.name, _secret(s.env, environ, f"token {s.name!r}"), s.scopes or (spec.read_scope,))
            for s in specs
        )  # fmt: skip
        named = {s.name for s in specs}
        for group, _ in spec.readers or ():
            if group.startswith(TOKEN_PREFIX) and group[len(TOKEN_PREFIX) :] not in named:
                raise ConfigError(
                    f"[auth.collections].{group!r}: no static token is named {group[len(TOKEN_PREFIX) :]!r}; "
                    f"the static tokens are {', '.join(sorted(named)) or 'none'}"
                )
        introspection = None
        if spec.introspection_client_id is not None and spec.introspection_secret_env is not None:
            introspection = Introspection(
                spec.introspection_endpoint, spec.introspection_client_id,
                _secret(spec.introspection_secret_env, environ, "[auth].introspection_secret_env"),
            )  # fmt: skip
        page = None
        if spec.page_client_id is not None and spec.issuer is None:
            raise ConfigError(
                "[auth].page_client_id needs an issuer and a resource URL: the page signs in with the same "
                "identity provider as the hosts ([auth] issuer and resource, or --auth-issuer and --auth-resource)"
            )
        if spec.page_client_id is not None:
            page = PageClient(
                spec.page_client_id,
                _secret(spec.page_client_secret_env, environ, "[auth].page_client_secret_env")
                if spec.page_client_secret_env is not None else None,
            )  # fmt: skip
        return cls(
            read_scope=spec.read_scope, write_scope=spec.write_scope, issuer=spec.issuer,
            resource=spec.resource, algorithms=spec.algorithms, clock_skew_s=spec.clock_skew,
            key_refetch_s=spec.key_refetch_interval, introspection=introspection, static=static, page=page,
            audiences=spec.audiences, groups_claim=spec.groups_claim, readers=spec.readers,
        )  # fmt: skip


def with_flags(spec: AuthSpec, *, issuer: str | None, resource: str | None) -> AuthSpec:
    """``spec`` with ``--auth-issuer`` and ``--auth-resource`` laid over it, validated again as the
    file was (an issuer without a resource is refused here). The first step of
    :meth:`AuthConfig.resolve`, public so ``kbseek doctor --auth`` reads the flags as ``serve`` does."""
    if issuer is not None or resource is not None:
        spec = replace(
            spec,
            issuer=issuer if issuer is not None else spec.issuer,
            resource=resource if resource is not None else spec.resource,
        )
    spec.check_complete()
    return spec


def static_token_specs(
    spec: AuthSpec, *, tokens: Sequence[str] = (), token_env: str | None = None
) -> list[StaticTokenSpec]:
    """Every static credential asked for: the file's, ``--auth-token``'s, and ``--token-env``'s
    (named after its variable, with the read scope); a ConfigError for two of one name. Public so
    ``kbseek doctor --auth`` checks the same list of variables ``serve`` reads."""
    specs = [*spec.static_tokens, *(parse_static_token(t, "--auth-token") for t in tokens)]
    if token_env:
        specs.append(StaticTokenSpec(token_env, token_env))
    names = [s.name for s in specs]
    if len(names) != len(set(names)):
        raise ConfigError("two static tokens have the same name; give each its own")
    return specs


def _secret(variable: str, environ: Mapping[str, str], what: str) -> str:
    value = environ.get(variable)
    if not value:
        raise ConfigError(f"{what}: the environment variable {variable} is empty or unset")
    return value


def public_url_warnings(
    resource: str, *, port: int, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = (),
    page: bool = False,
) -> list[str]:  # fmt: skip
    """What is wrong between the configured public URL and how the server is bound, in sentences
    for stderr at start (each a likely silent ``401`` or ``403`` later).

    The resource URL is not checked against requests (a TLS proxy in front changes the scheme and
    often the host), so it is checked here against what the server knows of itself: the path it
    serves MCP at, the scheme it speaks (plain HTTP), its port on this machine, and the ``Host``
    values it accepts.
    """
    parts = urlsplit(resource)
    hostname = parts.hostname or ""
    local = hostname in ("127.0.0.1", "localhost", "::1")
    warnings = []
    if parts.path.rstrip("/") != MCP_PATH:
        warnings.append(
            f"the resource URL's path is {parts.path or '/'!r} but MCP is served at {MCP_PATH}: "
            "hosts must connect to the resource URL, so a proxy in front must map it to /mcp"
        )
    if local and parts.scheme == "https":
        warnings.append(
            f"the resource URL {resource} is https:// on this machine, but this server speaks plain "
            "HTTP: hosts connecting to it will fail unless a TLS proxy listens there"
        )
    if local and (parts.port or 80) != port and parts.scheme == "http":
        warnings.append(f"the resource URL names port {parts.port or 80}, but the server listens on {port}")
    if not local and parts.scheme == "http":
        warnings.append(
            f"the resource URL {resource} is plain http:// to another machine: tokens would cross the "
            "network in clear; put a TLS proxy in front and give its https:// URL"
        )
    netloc = parts.netloc.rsplit("@", 1)[-1].lower()
    if not local and netloc not in {h.lower() for h in allowed_hosts}:
        warnings.append(
            f"the resource URL's host {netloc} is not an allowed Host header: requests a proxy "
            f"forwards with it are refused (403); add --allow-host {netloc}, or have the proxy send "
            f"Host: 127.0.0.1:{port}"
        )
    origin = f"{parts.scheme}://{netloc}"
    if page and not local and origin not in {o.lower() for o in allowed_origins}:
        warnings.append(
            f"the page signs in at {origin}, which is not an allowed Origin: its sign-out (a POST, which "
            f"browsers send with Origin) is refused (403); add --allow-origin {origin}"
        )
    return warnings
