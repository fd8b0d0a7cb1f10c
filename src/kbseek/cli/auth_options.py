"""``serve``'s sign-in flags, and the gate they and ``[auth]`` make (``server/auth/``).

Kept apart from the command so ``serve`` reads as what it does; ``--token-env`` is one of them, so
the flags sit together in its help, where a person looks for them, and ``doctor --auth`` takes the
very same ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from kbseek.audit_spec import AuditSpec
from kbseek.auth_spec import AuthSpec

if TYPE_CHECKING:  # the server's modules load the SDK; --help does not need it
    from kbseek.server.audit.record import Recorder
    from kbseek.server.auth.gate import Gate


def sign_in_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--token-env``, ``--auth-issuer``, ``--auth-resource`` and ``--auth-token``, passed as
    ``token_env``, ``auth_issuer``, ``auth_resource`` and ``auth_tokens``: ``serve`` takes them, and
    ``doctor --auth`` takes the same, so a server's command line checks as it would run."""
    options = (
        click.option(
            "--token-env", default=None, metavar="VAR",
            help="Require 'Authorization: Bearer $VAR' on /mcp and /api.",
        ),
        click.option(
            "--auth-issuer", metavar="URL", default=None,
            help="Take OAuth access tokens from this issuer (its exact 'iss'); overrides [auth] issuer.",
        ),
        click.option(
            "--auth-resource", metavar="URL", default=None,
            help="This server's public URL, e.g. https://kb.example.com/mcp: what tokens must be issued for.",
        ),
        click.option(
            "--auth-token", "auth_tokens", metavar="'NAME=VAR [SCOPE…]'", multiple=True,
            help="A named static token read from $VAR, with its scopes (default: the read scope; repeatable).",
        ),
    )  # fmt: skip
    return functools.reduce(lambda f, option: option(f), reversed(options), fn)


def auth_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`sign_in_options` and ``--audit-log`` (passed as ``audit_log``): ``serve``'s."""
    return sign_in_options(
        click.option(
            "--audit-log", metavar="PATH", default=None,
            help="Record who read what here, one JSON line per signed-in call; overrides [audit] path.",
        )(fn)
    )  # fmt: skip


def auth_gate(
    spec: AuthSpec, *, issuer: str | None, resource: str | None, tokens: Sequence[str], token_env: str | None,
    port: int, allowed_hosts: Sequence[str], served: tuple[str, ...], allowed_origins: Sequence[str] = (),
) -> Gate | None:  # fmt: skip
    """The gate ``serve --http`` runs behind, or ``None`` for a server that asks for no token; what it
    takes, and what looks wrong with the public URL, said on stderr."""
    from kbseek.server.auth.gate import Gate
    from kbseek.server.auth.settings import AuthConfig, public_url_warnings, redirect_uri

    config = AuthConfig.resolve(spec, issuer=issuer, resource=resource, tokens=tokens, token_env=token_env)
    gate = Gate.build(config, served=served)
    if gate is None:
        if config.readers is not None:
            click.echo(
                "warning: [auth.collections] is set, but nothing signs in: every caller reads all", err=True
            )
        return None
    if config.issuer is not None and config.resource is not None:
        click.echo(
            f"kbseek: sign-in: tokens from {config.issuer} for {config.resource} "
            f"(scope {config.read_scope} to read)", err=True,
        )  # fmt: skip
        if config.page is not None:  # the provider must know this URL, exactly, before anyone signs in
            kind = "a confidential" if config.page.secret is not None else "a public"
            click.echo(
                f"kbseek: the web page signs in as {kind} client {config.page.client_id!r}; its redirect URL "
                f"is {redirect_uri(config.resource)}", err=True,
            )  # fmt: skip
        for warning in public_url_warnings(
            config.resource, port=port, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins,
            page=config.page is not None,
        ):  # fmt: skip
            click.echo(f"warning: {warning}", err=True)
    if config.static:
        names = ", ".join(f"{c.name} ({' '.join(c.scopes)})" for c in config.static)
        click.echo(f"kbseek: static tokens: {names}", err=True)
    if gate.rules.enabled:
        click.echo(f"kbseek: collections by group, from the token's {config.groups_claim!r} claim", err=True)
    return gate


def audit_recorder(
    spec: AuditSpec, gate: Gate | None, *, path: str | None, collection: str, several: bool
) -> Recorder | None:
    """The record of who read what a server with ``gate`` keeps (``None``: nothing is recorded, and
    nothing is hooked), hooked into the gate's refusals; where it goes, said on stderr."""
    from kbseek.server.audit import open_recorder

    if gate is None:
        if path is not None:
            click.echo(
                "warning: --audit-log: nothing is recorded without sign-in (no caller is known)", err=True
            )
        return None
    recorder = open_recorder(spec, signed_in=True, path=path, collection=collection, several=several)
    if recorder is not None:
        gate.audit = recorder
        queries = " (with query text)" if recorder.queries else ""
        click.echo(f"kbseek: recording who read what{queries} to {recorder.writer.path}", err=True)
    return recorder
