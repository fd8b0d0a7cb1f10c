"""``kbseek related PATH``: the documents related to one, as the ``related`` tool gives them.

Kept out of ``cli/__init__.py`` (at its size cap) and built by a factory that takes the shared
``--kb``/``--config`` options decorator, so this module does not import ``cli`` back. The decorator
it is given opens the index read-only when no folder is named: relations come from the index alone
(links and vectors the writer stored), so a team's reader machine answers them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kbseek import KnowledgeBase, render
from kbseek.cli.options import WHOLE_NUMBER


def related_command(kb_options: Callable[[Callable[..., Any]], Callable[..., Any]]) -> click.Command:
    """The ``related`` command, with the options every command shares."""

    @click.command("related")
    @kb_options
    @click.argument("path", required=False)
    @click.option(
        "--chunk", "chunk_id", metavar="CHUNK_ID", help="Related to one passage (a search hit's id)."
    )
    @click.option(
        "--limit", type=WHOLE_NUMBER, default=None, help="Documents to list (default 10, at most 50)."
    )
    @click.option("--no-links", is_flag=True, help="By similar passages alone, not by links.")
    @click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
    def related(
        kb: KnowledgeBase,
        path: str | None,
        chunk_id: str | None,
        limit: int | None,
        no_links: bool,
        as_json: bool,
    ) -> None:
        """List the documents most related to PATH: the ones it links to, the ones linking to it
        (its backlinks), and those with similar passages, each saying why.

        \b
        Example:
            kbseek related --kb examples/kb runbooks/deploy.md
        """
        r = kb.related(path, chunk_id=chunk_id, limit=limit, links=not no_links)
        click.echo(r.model_dump_json(indent=2) if as_json else render.related_text(r))

    return related
