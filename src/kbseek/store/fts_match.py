"""FTS5 MATCH expressions for the lexical leg, and which terms a bounded query MATCHes.

Pure functions over terms and posting counts, kept apart from the store that runs them so that the
quoting rule (T7) and the bound (docs/decisions/0016) can be read and tested on their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["FULL_QUERY_POSTINGS", "match_expression", "rare_terms"]

FULL_QUERY_POSTINGS = 20_000
"""Up to this many postings in all, the full OR query is cheap (a few ms) and runs as it is, so a
small knowledge base ranks exactly as before the bound."""


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
