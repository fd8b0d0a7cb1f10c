"""``kbseek audit``: who read a document, and what a subject read, from the record ``serve`` keeps.

Reads the record and its rotated files (``audit.jsonl.1`` …), oldest first, as written by
``server/audit/`` (docs/decisions/0055). Kept out of ``cli/__init__.py``, which is at its size cap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kbseek.server.audit.writer import log_files, read_records


def _who(record: dict[str, Any]) -> str:
    """The subject, or for a static token (which has none) the credential's name."""
    if record.get("subject"):
        return str(record["subject"])
    if record.get("credential"):
        return f"token:{record['credential']}"
    return "(refused token)"


def _reads(record: dict[str, Any], document: str) -> bool:
    paths = record.get("paths") or []
    return any(p == document or (isinstance(p, str) and p.endswith(":" + document)) for p in paths)


def _names(record: dict[str, Any], subject: str) -> bool:
    return subject in (record.get("subject"), record.get("credential"), record.get("client"), _who(record))


@click.command("audit")
@click.option("--log", "log_path", required=True, metavar="PATH", help="The record (serve --audit-log).")
@click.option(
    "--document", metavar="PATH", default=None, help="List who read this document (a path in the KB)."
)
@click.option(
    "--subject", metavar="S", default=None, help="List what this subject (or static token's name) read."
)
@click.option("--json", "as_json", is_flag=True, help="Print the matching records as JSON lines.")
def audit(log_path: str, document: str | None, subject: str | None, as_json: bool) -> None:
    """Answer "who read this document" and "what did they read" from the record of reads that
    `serve --http` keeps when sign-in is configured. Rotated files are read too.

    \b
    Examples:
        kbseek audit --log ~/.local/state/kbseek/audit/notes.jsonl --document runbooks/deploy.md
        kbseek audit --log ~/.local/state/kbseek/audit/notes.jsonl --subject alice@example.com
    """
    path = Path(log_path).expanduser()
    if not log_files(path):
        raise click.ClickException(
            f"no audit record at {log_path}: `serve --http` writes one when sign-in is configured "
            "(see [audit] path and --audit-log)"
        )
    if document is None and subject is None:
        raise click.UsageError("pass --document PATH (who read it) or --subject S (what they read)")
    found = 0
    for record in read_records(path):
        if "tool" not in record:  # a "dropped" note, not a call
            continue
        if document is not None and not _reads(record, document):
            continue
        if subject is not None and not _names(record, subject):
            continue
        found += 1
        if as_json:
            click.echo(json.dumps(record, ensure_ascii=False))
        elif document is not None:
            click.echo(f"{record.get('time')}  {_who(record)}  {record.get('tool')}  {record.get('outcome')}")
        else:
            paths = ", ".join(record.get("paths") or []) or "-"
            click.echo(f"{record.get('time')}  {record.get('tool')}  {record.get('outcome')}  {paths}")
    if not found and not as_json:
        click.echo("no matching records", err=True)
