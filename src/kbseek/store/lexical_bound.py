"""Which terms a bounded keyword query MATCHes (docs/decisions/0016), the same in both backends.

Pure functions and constants over terms and posting counts, kept apart from the stores that run
them so that the bound can be read and tested on its own, and so that PostgreSQL's postings bound
a query exactly as SQLite's FTS5 does.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FULL_QUERY_POSTINGS", "LEXICAL_POSTINGS_BUDGET", "NEGLIGIBLE_SHARE", "rare_terms"]

FULL_QUERY_POSTINGS = 20_000
"""Up to this many postings in all, the full OR query is cheap (a few ms) and runs as it is, so a
small knowledge base ranks exactly as before the bound."""

LEXICAL_POSTINGS_BUDGET: int | None = 4_000
"""How many postings the rare terms of a bounded lexical query may hold (docs/decisions/0016).

FTS5 scores every row that holds any OR-ed term, so a query with ``the`` or ``of`` in it costs
as much as the collection is large. A query whose terms hold more than :data:`FULL_QUERY_POSTINGS`
postings between them finds its candidates among the chunks holding its rarest terms (together at
most this many postings) and scores those on every term, exactly as the full query would. ``None``
switches the bound off (the benchmark's baseline)."""

NEGLIGIBLE_SHARE = 0.5
"""A term held by at least this share of the chunks is left out of a bounded query's score
(``SqliteStore._weighty``, ``postgres.lexical``): FTS5's BM25 gives such a term an IDF of 1e-6,
so leaving it out moves no score by more than that. 1.0 keeps every term."""


def rare_terms(postings: Mapping[str, int], budget: int, *, least: int = 1) -> tuple[str, ...] | None:
    """The terms a bounded query MATCHes, rarest first; ``None`` when the full OR query is cheap.

    ``postings`` maps each term to how many chunks hold it (a count above ``budget`` may be capped).
    The full query runs when all terms together hold at most :data:`FULL_QUERY_POSTINGS` postings
    (always so on a small knowledge base) or when every term that matches anything is rare enough
    to be MATCHed anyway. Otherwise the rarest terms are taken while their postings stay within
    ``budget``, and past it until they hold at least ``least`` postings (the candidates wanted), so
    an identifier next to common words still fills the list and a query of common words only
    still finds chunks. Terms no chunk holds are left out: they match nothing and score nothing.
    """
    present = sorted((t for t, n in postings.items() if n > 0), key=lambda t: postings[t])
    if sum(postings[t] for t in present) <= FULL_QUERY_POSTINGS:
        return None
    chosen: list[str] = []
    total = 0
    for term in present:
        if chosen and total + postings[term] > budget and total >= least:
            break
        chosen.append(term)
        total += postings[term]
    return None if len(chosen) == len(present) else tuple(chosen)
