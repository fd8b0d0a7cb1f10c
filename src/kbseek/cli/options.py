"""The options every command shares, declared once: which knowledge base, which config, where the
index lives, keyword-only, verbosity.

Two decorators, because two kinds of command take them. :func:`kb_options` opens the knowledge base
and hands it to the command (``read_only=True`` for the commands that only look, so they create no
index folder in the notes). :func:`shared_options` only declares the options, for ``doctor``, which
must not open anything: opening creates the index folder and raises on a broken config, which
doctor reports as a failed check instead.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, overload

import click

from kbseek import KnowledgeBase
from kbseek.cli.errors import note_verbosity
from kbseek.cli.library import several_or_one
from kbseek.config import find_config

Command = Callable[..., Any]

_OPTIONS = (
    click.option(
        "--kb", "kb", type=click.Path(file_okay=False), envvar="KBSEEK_KB", multiple=True,
        help="Knowledge-base folder (default: `kb` in kbseek.toml); serve takes several, each PATH or NAME=PATH.",
    ),
    click.option(
        "--config", "config", type=click.Path(path_type=Path, dir_okay=False), envvar="KBSEEK_CONFIG",
        help="Config file (default: ./kbseek.toml if present).",
    ),
    click.option(
        "--index-dir", type=click.Path(path_type=Path, file_okay=False), envvar="KBSEEK_INDEX_DIR",
        help="Where the index lives (default: <kb>/.kbseek, or the user cache dir if the KB is read-only).",
    ),
    click.option(
        "--store", "store", metavar="URL", envvar="KBSEEK_STORE_URL",
        help="Keep the index in PostgreSQL at this postgresql:// URL (kbseek[postgres]; default: a SQLite file).",
    ),
    click.option(
        "--kb-name", metavar="NAME", envvar="KBSEEK_KB_NAME",
        help="The knowledge base's name in that database (default: from the folder's name).",
    ),
    click.option("--lexical-only", is_flag=True, help="Do not load the embedding model; keyword search only."),
    click.option("-v", "--verbose", count=True, help="Log more to stderr (-vv for debug)."),
)  # fmt: skip


def configure_logging(verbose: int) -> None:
    """Logs go to stderr: stdout carries results, and under ``serve`` the MCP protocol itself."""
    note_verbosity(verbose)  # a bug report shows the traceback with -v
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(
        stream=sys.stderr, level=level, format="kbseek: %(levelname)s %(message)s", force=True
    )


def shared_options(fn: Command) -> Command:
    """Declare the shared options on ``fn``, which receives them as keyword arguments."""
    for option in reversed(_OPTIONS):
        fn = option(fn)
    return fn


@overload
def kb_options(fn: Command, *, read_only: bool = False) -> Command: ...
@overload
def kb_options(fn: None = None, *, read_only: bool = False) -> Callable[[Command], Command]: ...
def kb_options(fn: Command | None = None, *, read_only: bool = False) -> Any:
    """Open the knowledge base the shared options name and call ``fn`` with it first.

    ``@kb_options`` for a command that may index; ``@kb_options(read_only=True)`` for one that only
    looks (status, get): it creates no index folder in the notes. A command with a ``--read-only``
    flag of its own (serve) gets the flag's value.
    """
    if fn is None:
        return functools.partial(kb_options, read_only=read_only)
    command = fn

    @shared_options
    @functools.wraps(command)
    @several_or_one(command, configure_logging)
    def wrapper(
        kb: tuple[str, ...], config: Path | None, index_dir: Path | None, store: str | None, kb_name: str | None,
        lexical_only: bool, verbose: int, **kwargs: Any,
    ) -> Any:  # fmt: skip
        configure_logging(verbose)
        knowledge_base = KnowledgeBase(
            Path(kb[0]) if kb else None, config=config or find_config(Path.cwd()), index_dir=index_dir,
            semantic=False if lexical_only else None, read_only=read_only or kwargs.get("read_only", False),
            store=store, kb_name=kb_name,
        )  # fmt: skip
        try:  # an error escaping the command is answered by KbseekGroup, from the error table
            return command(knowledge_base, **kwargs)
        finally:
            knowledge_base.close()

    return wrapper
