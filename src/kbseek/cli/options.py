"""The options every command shares, declared once: which knowledge base, which config, where the
index lives, keyword-only, verbosity.

Two decorators, because two kinds of command take them. :func:`kb_options` opens the knowledge base
and hands it to the command (``read_only=True`` for the commands that only look, so they create no
index folder in the notes; ``reader=True`` for the ones that answer from the index, so they work on
a team's reader machine, which has the database and no notes). :func:`shared_options` only declares
the options, for ``doctor``, which must not open anything: opening creates the index folder and
raises on a broken config, which doctor reports as a failed check instead.
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
from kbseek.config import find_config, load_config_file
from kbseek.errors import ConfigError
from kbseek.facade.status import index_command
from kbseek.numbers import MAX_DIGITS, NotAWholeNumber, read_whole_number
from kbseek.text.quoting import ECHO_CHARS, bounded_middle

Command = Callable[..., Any]

REPORTS_ABSENT = ("status",)
"""The commands whose answer, without the files, may be that the database holds no such knowledge
base yet; every other command that reads refuses rather than answer from an index that is not there
(an empty answer would read as "nothing matched" when the name is wrong). Only the commands opened
with ``read_only=True`` or ``reader=True`` are checked: ``serve --read-only`` is a server, which
starts whatever the index holds."""

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


def ascii_whole(value: str) -> int | str:
    """``value`` as a whole number in ASCII digits (``kbseek.numbers``), or the sentence saying why
    it is not one and how to write it: click's ``INT`` would read ``+5``, ``1_0`` and ``٥`` too."""
    try:
        return read_whole_number(value)
    except NotAWholeNumber as refused:
        if refused.digits is not None:
            return (
                f"the number has {refused.digits} digits, more than the {MAX_DIGITS} read: pass one in range"
            )
        hint = f": write {refused.meant}" if refused.meant is not None else ""
        return (
            f"{bounded_middle(value, ECHO_CHARS)!r} is not a whole number written in ASCII digits (0-9){hint}"
        )


def _ascii_first(
    kind: click.ParamType[Any], value: Any, param: click.Parameter | None, ctx: click.Context | None
) -> Any:
    """A command-line string read by :func:`ascii_whole` (a usage error when it is no number);
    a default, already an ``int``, as it is."""
    if not isinstance(value, str):
        return value
    read = ascii_whole(value)
    if isinstance(read, str):
        kind.fail(read, param, ctx)
    return read


class WholeNumber(click.types.IntParamType):
    """click's ``INT`` in ASCII digits only (:func:`ascii_whole`); the help still says ``INTEGER``."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(_ascii_first(self, value, param, ctx), param, ctx)


class WholeNumberRange(click.IntRange):
    """click's ``IntRange`` in ASCII digits only (:func:`ascii_whole`), then its bounds checked."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(_ascii_first(self, value, param, ctx), param, ctx)


WHOLE_NUMBER = WholeNumber()
"""The type of every whole-number option (``type=int`` would be click's lenient ``INT``)."""


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
def kb_options(fn: Command, *, read_only: bool = False, reader: bool = False) -> Command: ...
@overload
def kb_options(
    fn: None = None, *, read_only: bool = False, reader: bool = False
) -> Callable[[Command], Command]: ...
def kb_options(fn: Command | None = None, *, read_only: bool = False, reader: bool = False) -> Any:
    """Open the knowledge base the shared options name and call ``fn`` with it first.

    ``@kb_options`` for a command that may index; ``@kb_options(read_only=True)`` for one that only
    looks (status, get): it creates no index folder in the notes. ``@kb_options(reader=True)`` for
    one that answers from the index (search, fetch, topics, related, eval): with the folder it
    brings the index up to date first (T10), as before; with no folder named it opens the index
    read-only, as status does, which is all a team's reader machine can do (decision 0031). A
    command with a ``--read-only`` flag of its own (serve) gets the flag's value.
    """
    if fn is None:
        return functools.partial(kb_options, read_only=read_only, reader=reader)
    command = fn
    refuses_absent = (read_only or reader) and command.__name__ not in REPORTS_ABSENT

    @shared_options
    @functools.wraps(command)
    @several_or_one(command, configure_logging)
    def wrapper(
        kb: tuple[str, ...], config: Path | None, index_dir: Path | None, store: str | None, kb_name: str | None,
        lexical_only: bool, verbose: int, **kwargs: Any,
    ) -> Any:  # fmt: skip
        configure_logging(verbose)
        config = config or find_config(Path.cwd())
        looks = read_only or kwargs.get("read_only", False) or (reader and not names_a_folder(kb, config))
        knowledge_base = KnowledgeBase(
            Path(kb[0]) if kb else None, config=config, index_dir=index_dir,
            semantic=False if lexical_only else None, read_only=looks, store=store, kb_name=kb_name,
            allow_write=bool(kwargs.get("allow_write")),
        )  # fmt: skip
        try:  # an error escaping the command is answered by KbseekGroup, from the error table
            if refuses_absent and knowledge_base.root is None:
                require_indexed(knowledge_base)
            return command(knowledge_base, **kwargs)
        finally:
            knowledge_base.close()

    return wrapper


def names_a_folder(kb: tuple[str, ...], config: Path | None) -> bool:
    """Whether the options name a folder of notes: ``--kb`` (or ``KBSEEK_KB``), or ``kb`` in the
    config file, the two places the settings take the root from (``config.build_settings``).

    Without one, a command that only reads is on a reader machine and opens the index read-only;
    with no ``--store`` either, opening it says that a knowledge base must be given.
    """
    return bool(kb) or (config is not None and "kb" in load_config_file(config))


def require_indexed(kb: KnowledgeBase) -> None:
    """Refuse a knowledge base, opened without its files, that the database does not hold.

    A reader opens the index without creating it, so a mistyped ``--kb-name`` reads as an empty
    index: a search would answer "no hits" and a fetch "unknown id" for a knowledge base that is
    simply not there. Nothing indexed and no pass ever recorded is that case (the writer's first
    pass records one even for an empty folder). Raises :class:`ConfigError` naming the name and the
    database (as the store shows it, without its password), how to list the names it holds, and
    how to build this one.
    """
    if kb.summary().documents or kb.status(max_skipped=0).last_index_at is not None:
        return
    name = kb.settings.kb_name
    raise ConfigError(
        f"the database holds no knowledge base {name} ({kb.index_path}): nothing was ever indexed under "
        "that name; check --kb-name or [store] name (`psql URL -c '\\dn kbseek_*'` lists the knowledge "
        "bases it holds, as schemas kbseek_NAME), or build it on the machine that has the notes: "
        f"`{index_command(kb.settings)}`"
    )
