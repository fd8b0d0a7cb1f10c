"""``kbseek doctor --auth``: sign-in for ``serve --http`` checked before a host meets it.

A signed-in server refuses with a bare ``401`` and keeps the reason in its own log
(docs/decisions/0054), so a mistake in its configuration is usually found by the first person it
locks out. These checks find it first, each saying what to change. They resolve the configuration as
``serve`` does (the file's ``[auth]`` with the same flags laid over it, ``AuthConfig.resolve``) and
ask the server's own pieces: discovery, the key set, the introspection verifier, the gate and
``public_url_warnings``. Nothing here reads metadata or judges a token in a way of its own, so what
doctor says is what the server would do.

Like the rest of doctor it changes nothing. It does talk to the issuer, as the server would at its
first request: its metadata, its keys, and one introspection request for a made-up token. Secrets
are read from the environment and never printed; neither is the token ``--check-token`` names.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kbseek.auth_spec import ASYMMETRIC_ALGORITHMS, AuthSpec
from kbseek.cli.doctor.result import CheckResult, DoctorOptions, guarded, guarded_pair
from kbseek.cli.doctor.token_check import check_token
from kbseek.config import CONFIG_FILENAME, find_config, load_config_file, table_of
from kbseek.errors import ConfigError
from kbseek.server.auth.discovery import IssuerAnswered, NoMetadata, discover
from kbseek.server.auth.gate import Gate
from kbseek.server.auth.jwks import KeySet
from kbseek.server.auth.reasons import Reason, Rejected
from kbseek.server.auth.settings import AuthConfig, public_url_warnings, static_token_specs, with_flags
from kbseek.server.http import HttpPolicy

LATER = ("issuer", "keys", "introspection", "resource")
"""The checks that need an ``[auth]`` that parses and an issuer."""


@dataclass(frozen=True)
class SignInOptions:
    """The sign-in flags ``serve`` takes, as given to ``doctor --auth``, and the token to try."""

    port: int
    """``--port``: where ``serve --http`` would listen, which the resource URL is compared with."""
    issuer: str | None = None
    resource: str | None = None
    tokens: tuple[str, ...] = ()
    token_env: str | None = None
    allow_hosts: tuple[str, ...] = ()
    check_token: str | None = None
    """The environment variable holding a token to try: a variable, so the token never sits in the
    shell's history."""


def run_sign_in_doctor(
    options: DoctorOptions, sign_in: SignInOptions, environ: Mapping[str, str] = os.environ
) -> list[CheckResult]:
    """Every sign-in check, in the order a fix has to happen; later ones skip when what they need failed."""
    config, spec = guarded_pair("auth config", lambda: check_auth_config(options, sign_in))
    results = [config]
    if spec is None or config.status != "ok":  # a failed table, or no sign-in at all (a warning)
        why = "needs an [auth] that parses" if spec is None else "no sign-in is configured"
        asked = ("token",) if sign_in.check_token is not None else ()
        results.extend(CheckResult(name, "skip", why) for name in (*LATER, *asked))
        return results
    results.extend(check_token_variables(spec, sign_in, environ))
    oauth = _oauth_half(spec, environ)
    if spec.issuer is None:
        results.extend(
            CheckResult(name, "skip", "no issuer: static tokens only (set [auth] issuer for OAuth)")
            for name in LATER
        )
    else:
        issuer = spec.issuer
        found, document = guarded_pair("issuer", lambda: check_issuer(issuer))
        results.append(found)
        if document is None:
            results.append(CheckResult("keys", "skip", "needs the issuer's metadata", "fix the issuer first"))
        else:
            results.append(guarded("keys", lambda: check_keys(spec)))
        results.append(guarded("introspection", lambda: check_introspection(spec, oauth, environ, document)))
        results.append(guarded("resource", lambda: check_resource(spec, sign_in)))
    if sign_in.check_token is not None:
        variable = sign_in.check_token
        gate_config = _resolved(spec, sign_in, environ) or oauth
        results.append(guarded("token", lambda: check_token(gate_config, variable, environ)))
    return results


def check_auth_config(options: DoctorOptions, sign_in: SignInOptions) -> tuple[CheckResult, AuthSpec | None]:
    """``[auth]`` read as ``serve`` reads it, with the flags laid over it and the static tokens listed;
    a ConfigError is the failed check, naming the key or flag. No sign-in at all warns: such a
    server takes every call, which is right only on this machine."""
    cfg = options.config if options.config is not None else find_config(options.cwd)
    cfg = cfg.expanduser().resolve() if cfg is not None else None
    origin = f"config {cfg}" if cfg else f"no config file (no {CONFIG_FILENAME} here; flags only)"
    try:
        file_spec: AuthSpec = table_of(load_config_file(cfg), "auth") if cfg else AuthSpec()
        spec = with_flags(file_spec, issuer=sign_in.issuer, resource=sign_in.resource)
        credentials = static_token_specs(spec, tokens=sign_in.tokens, token_env=sign_in.token_env)
    except ConfigError as exc:
        where = cfg if cfg is not None else "the config"
        fix = f"correct the setting named above in {where} or the flag, then run kbseek doctor --auth again"
        return CheckResult("auth config", "fail", str(exc), fix), None
    except OSError as exc:
        return CheckResult(
            "auth config", "fail", f"cannot read config {cfg}: {exc}",
            "check the file's permissions, or point --config at another file",
        ), None  # fmt: skip
    if spec.issuer is None and not credentials:
        return CheckResult(
            "auth config", "warn",
            f"{origin}: no sign-in: serve --http would take every call without a token (right on this machine only)",
            "set [auth] issuer and resource (or --auth-issuer and --auth-resource), or a static token "
            "([auth] tokens, --auth-token, --token-env)",
        ), spec  # fmt: skip
    parts = []
    if spec.issuer is not None:
        algorithms = ", ".join(spec.algorithms)
        parts.append(f"tokens from {spec.issuer} for {spec.resource}, algorithms {algorithms}")
        if spec.introspection_client_id is not None:
            parts.append(f"opaque tokens introspected as client {spec.introspection_client_id!r}")
    if credentials:
        parts.append("static tokens " + ", ".join(c.name for c in credentials))
    parts.append(f"scope {spec.read_scope} to read")
    return CheckResult("auth config", "ok", f"{origin}: " + "; ".join(parts)), spec


def check_token_variables(
    spec: AuthSpec, sign_in: SignInOptions, environ: Mapping[str, str]
) -> list[CheckResult]:
    """One line per static token: its variable set (a server with one unset stops at start, naming
    it), and the read scope among its scopes (without it, every call with it is ``403``)."""
    results = []
    for credential in static_token_specs(spec, tokens=sign_in.tokens, token_env=sign_in.token_env):
        name = f"token {credential.name}"
        scopes = credential.scopes or (spec.read_scope,)
        if not environ.get(credential.env):
            results.append(CheckResult(
                name, "fail", f"${credential.env} is empty or unset: serve would stop at start",
                f"set {credential.env} to the token's secret in the server's environment (the service "
                "unit's Environment=, a secrets manager), or remove the token",
            ))  # fmt: skip
        elif spec.read_scope not in scopes:
            results.append(CheckResult(
                name, "warn",
                f"${credential.env} is set; scopes {' '.join(scopes)} lack {spec.read_scope}: every call with it is 403",
                f"add {spec.read_scope} to its scopes ('{credential.name}={credential.env} {spec.read_scope} …')",
            ))  # fmt: skip
        else:
            results.append(CheckResult(name, "ok", f"${credential.env} is set; scopes {' '.join(scopes)}"))
    return results


def check_issuer(issuer: str) -> tuple[CheckResult, dict[str, Any] | None]:
    """The issuer's metadata found where the server looks (RFC 8414, OpenID Connect discovery) and
    naming the configured issuer exactly, with a ``jwks_uri``; an issuer that differs by a trailing
    slash is called out by name, the mistake most often made (Auth0's issuer ends with '/')."""
    try:
        document = discover(issuer)
    except NoMetadata as missing:
        alike = [n for n in missing.named if n != issuer and n.rstrip("/") == issuer.rstrip("/")]
        if alike:
            has = "without" if issuer.endswith("/") else "with"
            return CheckResult(
                "issuer", "fail",
                f"trailing slash: the issuer's metadata names {alike[0]!r}, {has} the trailing slash of the "
                f"configured {issuer!r}; the issuer is compared exactly, so every token (iss {alike[0]!r}) "
                "would be refused",
                f"set [auth] issuer (or --auth-issuer) to {alike[0]!r}, exactly as the provider writes it "
                "(Auth0's ends with '/', Keycloak's and Entra's do not)",
            ), None  # fmt: skip
        if missing.named:
            return CheckResult(
                "issuer", "fail",
                f"the metadata found names another issuer: {', '.join(map(repr, missing.named))}, not {issuer!r}",
                "set [auth] issuer (or --auth-issuer) to the provider's issuer exactly as its tokens' iss "
                "writes it (its /.well-known/openid-configuration shows it)",
            ), None  # fmt: skip
        return _unreachable(missing)
    except Rejected as refused:
        return _unreachable(refused)
    jwks = document.get("jwks_uri")
    if not isinstance(jwks, str):
        return CheckResult(
            "issuer", "fail", f"{issuer}: its metadata publishes no jwks_uri, so no JWT can be checked",
            "use the provider's OAuth/OpenID issuer URL (the one whose metadata lists jwks_uri)",
        ), None  # fmt: skip
    found = f"{issuer}: metadata found, it names this issuer exactly; jwks_uri {jwks}"
    endpoint = document.get("introspection_endpoint")
    if isinstance(endpoint, str):
        found += f"; introspection_endpoint {endpoint}"
    return CheckResult("issuer", "ok", found), document


def _unreachable(refused: Rejected) -> tuple[CheckResult, None]:
    return CheckResult(
        "issuer", "fail", f"the issuer's metadata cannot be had: {refused.detail}",
        "check the issuer URL and that this machine reaches it (DNS, a proxy, a firewall, the "
        "provider being up): the server fetches the same URLs, and answers 503 while it cannot",
    ), None  # fmt: skip


def check_keys(spec: AuthSpec) -> CheckResult:
    """The issuer's key set fetched as the server fetches it, holding a key a token signed with one of
    the configured algorithms can be checked with; when none fits, which algorithms its keys are for."""
    assert spec.issuer is not None
    keys = KeySet(spec.issuer, refetch_s=spec.key_refetch_interval)
    try:
        asyncio.run(keys.fetch())
    except Rejected as refused:
        return CheckResult(
            "keys", "fail", f"the issuer's keys cannot be had: {refused.detail}",
            "check that the jwks_uri in the issuer's metadata answers from this machine (https://, or "
            "http:// on loopback only)",
        )  # fmt: skip
    usable = keys.usable(spec.algorithms)
    where = keys.jwks_uri
    if not usable:
        return CheckResult(
            "keys", "fail", f"{where} holds no signing key", "check the provider's signing keys for the realm or tenant"
        )  # fmt: skip
    fitting = {kid: algs for kid, algs in usable.items() if algs}
    if fitting:
        algorithms = sorted({alg for algs in fitting.values() for alg in algs})
        return CheckResult(
            "keys", "ok",
            f"{len(usable)} signing key(s) at {where}; {len(fitting)} can check tokens signed with "
            f"{', '.join(algorithms)}",
        )  # fmt: skip
    for_what = keys.usable(ASYMMETRIC_ALGORITHMS)
    said = "; ".join(
        f"key {kid!r}: {', '.join(a) or 'no algorithm kbseek takes'}" for kid, a in for_what.items()
    )
    wanted = sorted({alg for algs in for_what.values() for alg in algs})
    fix = (
        f"add {' or '.join(wanted)} to [auth] algorithms (the ones the provider signs with)"
        if wanted else "have the provider sign access tokens with a public-key algorithm (RS256, ES256)"
    )  # fmt: skip
    return CheckResult(
        "keys", "fail",
        f"none of the {len(usable)} key(s) at {where} fits the configured algorithms "
        f"({', '.join(spec.algorithms)}): its keys are for {said}",
        fix,
    )  # fmt: skip


def check_introspection(
    spec: AuthSpec, oauth: AuthConfig | None, environ: Mapping[str, str], metadata: dict[str, Any] | None
) -> CheckResult:
    """When introspection is configured: its endpoint known (configured, or in the issuer's
    ``metadata``) and answering the configured client. A made-up token must come back ``active:
    false``; a ``401`` means the client's id or secret is wrong, and every opaque token would be refused."""
    client, variable = spec.introspection_client_id, spec.introspection_secret_env
    if client is None or variable is None:
        return CheckResult(
            "introspection", "skip", "not configured: JWTs are checked, opaque tokens refused "
            "(set introspection_client_id and introspection_secret_env for a provider whose tokens are opaque)",
        )  # fmt: skip
    if not environ.get(variable):
        return CheckResult(
            "introspection", "fail", f"the client secret's variable ${variable} is empty or unset: serve would stop at start",
            f"set {variable} to the secret of client {client!r} at the issuer",
        )  # fmt: skip
    if spec.introspection_endpoint is None and metadata is None:
        return CheckResult(
            "introspection", "skip", "needs the issuer's metadata (its introspection_endpoint)", "fix the issuer first"
        )  # fmt: skip
    if oauth is None or (verifier := Gate(oauth).introspection) is None:
        return CheckResult("introspection", "skip", "needs [auth] to resolve", "fix the lines above first")
    probe = "kbseek-doctor-" + secrets.token_urlsafe(24)  # opaque: no issuer knows it
    try:
        identity = asyncio.run(verifier.check(probe))
    except IssuerAnswered as refused:
        if refused.status == 401:
            return CheckResult(
                "introspection", "fail",
                f"{verifier.endpoint} answered 401 to client {client!r}: the client id or its secret "
                f"(${variable}) is wrong, so every opaque token would be refused",
                f"check introspection_client_id and the secret in {variable} against the client at the issuer",
            )  # fmt: skip
        return CheckResult(
            "introspection", "fail", refused.detail,
            "check [auth] introspection_endpoint, or the issuer's introspection_endpoint",
        )  # fmt: skip
    except Rejected as refused:
        if refused.reason is Reason.INTROSPECTION_INACTIVE:
            return CheckResult(
                "introspection", "ok",
                f"{verifier.endpoint} answers client {client!r}: a made-up token is inactive, as it should be",
            )  # fmt: skip
        if refused.reason is Reason.UNAVAILABLE:
            return CheckResult(
                "introspection", "fail", refused.detail,
                "set [auth] introspection_endpoint when the issuer's metadata does not name one",
            )  # fmt: skip
        return CheckResult(
            "introspection", "warn",
            f"a made-up token was refused for another reason ({refused.reason.value}): {refused.detail}",
            "check what the endpoint answers for an unknown token: RFC 7662 asks for active: false",
        )  # fmt: skip
    return CheckResult(
        "introspection", "warn",
        f"{verifier.endpoint} says a made-up token is active (client {identity.client_id!r})",
        "the endpoint is not an RFC 7662 introspection endpoint, or takes any token: check it",
    )  # fmt: skip


def check_resource(spec: AuthSpec, sign_in: SignInOptions) -> CheckResult:
    """The resource URL against how the server would be bound, in the words ``serve`` prints at start."""
    assert spec.resource is not None
    policy = HttpPolicy.from_flags(host="127.0.0.1", port=sign_in.port, allow_hosts=sign_in.allow_hosts)
    warnings = public_url_warnings(spec.resource, port=sign_in.port, allowed_hosts=policy.allowed_hosts)
    if not warnings:
        return CheckResult(
            "resource", "ok", f"{spec.resource}: tokens must name it in aud; a server on port {sign_in.port} serves it"
        )  # fmt: skip
    return CheckResult(
        "resource", "warn", f"{spec.resource}: " + "; ".join(warnings),
        "change [auth] resource (--auth-resource) or how the server is started (--port, --allow-host, "
        "a TLS proxy in front), as said",
    )  # fmt: skip


def _resolved(spec: AuthSpec, sign_in: SignInOptions, environ: Mapping[str, str]) -> AuthConfig | None:
    """The whole configuration as ``serve`` resolves it; ``None`` when it would stop at start (an
    unset variable, said on its own line)."""
    try:
        return AuthConfig.resolve(spec, tokens=sign_in.tokens, token_env=sign_in.token_env, environ=environ)
    except ConfigError:
        return None


def _oauth_half(spec: AuthSpec, environ: Mapping[str, str]) -> AuthConfig | None:
    """The issuer's part of the configuration, resolved as ``serve`` resolves it but without the
    static tokens (whose variables have a line each), so one unset token does not hide what the
    issuer says; ``None`` when the introspection secret is unset too."""
    try:
        return AuthConfig.resolve(replace(spec, tokens=()), environ=environ)
    except ConfigError:
        return None
