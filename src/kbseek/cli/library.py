"""``serve`` over several knowledge bases: ``--kb`` given more than once, or ``[[kb]]`` tables.

Every other command reads or writes one knowledge base, so the shared options stay one folder for
them and say so when given several; ``serve`` gets the collections as a
:class:`~kbseek.library.Library` (its default collection is the first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from kbseek.config import find_config, load_config_file
from kbseek.library import Library as Library  # serve's annotation

SEVERAL = ("serve",)
"""The commands that take several collections; they get them as ``library=``."""


def several_or_one(
    fn: Callable[..., Any], configure_logging: Callable[[int], None]
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap ``kb_options``' wrapper of ``fn``: several collections go to :func:`with_library`, one
    knowledge base to the wrapper as before."""

    def decorate(wrapper: Callable[..., Any]) -> Callable[..., Any]:
        def choose(
            kb: tuple[str, ...], config: Path | None, index_dir: Path | None, store: str | None,
            kb_name: str | None, lexical_only: bool, verbose: int, **kwargs: Any,
        ) -> Any:  # fmt: skip
            config = config or find_config(Path.cwd())
            if not several_kbs(kb, config):
                return wrapper(kb, config, index_dir, store, kb_name, lexical_only, verbose, **kwargs)
            configure_logging(verbose)
            return with_library(fn, kb, config, index_dir or store or kb_name, lexical_only, kwargs)

        return choose

    return decorate


def several_kbs(kb: Sequence[str], config: Path | None) -> bool:
    """Whether the flags or the config file's ``[[kb]]`` tables name several collections."""
    return len(kb) > 1 or (not kb and config is not None and "collections" in load_config_file(config))


def with_library(
    fn: Callable[..., Any],
    kb: Sequence[str],
    config: Path | None,
    single_only: object,
    lexical_only: bool,
    kwargs: dict[str, Any],
) -> Any:
    """Run ``fn`` over a :class:`~kbseek.library.Library` of the collections; ``single_only``: a
    flag that names one knowledge base was given (the index folder, the store, its name)."""
    from kbseek.library import open_library

    if fn.__name__ not in SEVERAL:
        raise click.UsageError(
            "only serve takes several knowledge bases (--kb given twice, or [[kb]] tables)"
        )
    if single_only or kwargs.get("read_only"):
        raise click.UsageError(
            "--index-dir, --store, --kb-name and --read-only name one knowledge base: give one --kb with them"
        )
    library = open_library(
        kb,
        config=config,
        semantic=False if lexical_only else None,
        allow_write=bool(kwargs.get("allow_write")),
    )
    try:
        return fn(library[library.default], library=library, **kwargs)
    finally:
        library.close()
