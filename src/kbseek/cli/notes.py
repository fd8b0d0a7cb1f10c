"""``kbseek notes``: what agents wrote (the trail), what they deleted (the trash), and putting a
deleted note back. For the person who owns the notes: MCP never deletes for good, and this is
where a delete is undone (docs/decisions/0058). Kept out of ``cli/__init__.py``, at its size cap.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from kbseek import KnowledgeBase
from kbseek.cli.options import kb_options
from kbseek.facade.notes import entry_name


@click.group("notes")
def notes() -> None:
    """What agents wrote to the notes, the trash, and restoring from it."""


@notes.command("log")
@kb_options(read_only=True)
@click.option("-n", "--count", default=20, show_default=True, type=click.IntRange(min=1), help="How many.")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON lines.")
def log(kb: KnowledgeBase, count: int, as_json: bool) -> None:
    """The last writes agents made, newest first: when, which client, what, and the hashes."""
    records = kb.notes.recent(count)
    if not records:
        click.echo("no writes recorded")
        return
    for r in records:
        if as_json:
            click.echo(json.dumps({k: v for k, v in asdict(r).items() if v is not None}, ensure_ascii=False))
            continue
        where = r.path + (f" → {r.new_path}" if r.new_path else "")
        who = f" by {r.client}" if r.client else ""
        hashes = f"{r.before or '-'} → {r.after or '-'}"
        trash = f" (trash entry {r.trash})" if r.trash else ""
        click.echo(f"{r.time} {r.operation} {where}{who}: {hashes}, {r.diff_lines} lines{trash}")


@notes.command("trash")
@kb_options(read_only=True)
def trash(kb: KnowledgeBase) -> None:
    """The notes agents deleted, newest first, with the entry `kbseek notes restore` takes."""
    entries = kb.notes.trashed()
    if not entries:
        click.echo("the trash is empty")
        return
    for e in entries:
        name = entry_name(kb.notes.trash, e.path)
        click.echo(f"{name}  {e.rel}  deleted {e.removed_at:%Y-%m-%d %H:%M:%S} UTC")


@notes.command("restore")
@kb_options
@click.argument("entry")
@click.option(
    "--to", "path", metavar="PATH", default=None, help="Restore to this path instead of the old one."
)
def restore(kb: KnowledgeBase, entry: str, path: str | None) -> None:
    """Put a deleted note back, at its old path or --to PATH; never over an existing file.

    \b
    Example:
        kbseek notes trash --kb ~/notes
        kbseek notes restore 20261207T101500.123456Z-3f2a9c01 --kb ~/notes
    """
    change = kb.notes.restore(entry, path=path)
    click.echo(f"restored {change.path} (hash {change.hash})")
