"""``kbseek doctor``, the command: which checks to run, printed, and the exit status.

The checks themselves are in ``cli/doctor/``, imported when the command runs (they load the
embedder's and the server's modules, which ``kbseek --help`` does not need). The command takes the
shared options without opening the knowledge base (``kbseek.cli.options``): doctor stays read-only
and reports a broken config as a failed check. With ``--auth`` it takes the flags ``serve`` takes
for sign-in instead, so a server's command line can be checked as it would run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kbseek.cli.auth_options import sign_in_options
from kbseek.cli.options import WHOLE_NUMBER, configure_logging, shared_options

SERVE_PORT = 8765
"""``serve --port``'s default."""


@click.command()
@shared_options
@click.option("--json", "as_json", is_flag=True, help="Print the checks as a JSON list.")
@click.option(
    "--auth", "auth", is_flag=True,
    help="Check sign-in for serve --http instead: [auth], the issuer, its keys, introspection, the resource URL.",
)  # fmt: skip
@sign_in_options
@click.option(
    "--port", default=SERVE_PORT, show_default=True, type=WHOLE_NUMBER,
    help="With --auth: the port serve --http would bind, compared with the resource URL.",
)  # fmt: skip
@click.option(
    "--allow-host", "allow_hosts", multiple=True,
    help="With --auth: an extra allowed Host header value, as serve takes it (repeatable).",
)  # fmt: skip
@click.option(
    "--check-token", metavar="VAR", default=None,
    help="With --auth: check the access token in $VAR as the server would, and say why it is refused.",
)  # fmt: skip
def doctor(
    kb: tuple[str, ...], config: Path | None, index_dir: Path | None, store: str | None, kb_name: str | None,
    lexical_only: bool, as_json: bool, verbose: int, auth: bool, token_env: str | None,
    auth_issuer: str | None, auth_resource: str | None, auth_tokens: tuple[str, ...], port: int,
    allow_hosts: tuple[str, ...], check_token: str | None,
) -> None:  # fmt: skip
    """Check what usually goes wrong, and say how to fix each thing.

    Python version, config, embedding model (loaded for real, about a
    second), index and its schema, the writer lock, the file watcher's
    inotify limits and free disk space. With the index in PostgreSQL:
    the database (5 s timeout, shown without its password), pgvector,
    the knowledge base's schema and who holds its advisory lock.
    Read-only: it creates and changes nothing. Exit status 1 if any
    check fails.

    With --auth (or any sign-in flag), sign-in for serve --http instead:
    [auth] with the flags serve takes, each static token's variable, the
    issuer's metadata (its issuer exactly as configured) and keys (one
    for the configured algorithms), introspection for the configured
    client, and the resource URL against the port. --check-token VAR
    puts the token in $VAR through the server's own checks and says which
    one refuses it; no token or secret is ever printed.

    \b
    Example:
        kbseek doctor --kb ~/notes
        kbseek doctor --kb ~/notes --store postgresql://kb@db.example/notes
        kbseek doctor --auth --config team.toml --check-token KB_TOKEN
    """
    from kbseek.cli.doctor import DoctorOptions, report, run_doctor

    configure_logging(verbose)
    if auth or any((token_env, auth_issuer, auth_resource, auth_tokens, check_token)):
        from kbseek.cli.doctor.sign_in import SignInOptions, run_sign_in_doctor

        sign_in = SignInOptions(
            port=port, issuer=auth_issuer, resource=auth_resource, tokens=auth_tokens, token_env=token_env,
            allow_hosts=allow_hosts, check_token=check_token,
        )  # fmt: skip
        results = run_sign_in_doctor(DoctorOptions(config=config, cwd=Path.cwd()), sign_in)
    else:
        if len(kb) > 1:
            raise click.UsageError("doctor checks one knowledge base at a time: give one --kb")
        options = DoctorOptions(
            kb=Path(kb[0]) if kb else None, config=config, index_dir=index_dir, lexical_only=lexical_only,
            cwd=Path.cwd(), store_url=store, kb_name=kb_name,
        )  # fmt: skip
        results = run_doctor(options)
    click.echo(report(results, as_json=as_json))
    if any(r.status == "fail" for r in results):
        sys.exit(1)
