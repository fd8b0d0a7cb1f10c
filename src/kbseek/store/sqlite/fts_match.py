"""FTS5 MATCH expressions for the SQLite store's keyword leg.

A pure function, kept apart from the store that runs it so that the quoting rule (T7) can be read
and tested on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["match_expression"]


def match_expression(terms: Sequence[str]) -> str | None:
    """The FTS5 MATCH expression that ORs ``terms`` together; ``None`` for no terms.

    Each term is an FTS5 string literal: inside quotes every character is literal text, so
    ``-``, ``:``, ``"``, ``*``, ``AND``/``NOT``/``NEAR`` never change the query's meaning or raise
    a syntax error (T7). The one character a literal cannot hold, NUL, ends FTS5's string early;
    the tokenizer separates words at it anyway, so it becomes a space. (The analyzer never emits
    one; the protocol promises that no term at all can make the engine raise.) OR rather than AND
    because agents ask in sentences; BM25 still ranks chunks that hold more (and rarer) terms first.
    """
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""').replace("\x00", " ") + '"' for term in terms)
