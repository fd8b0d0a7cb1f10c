"""The keyword legs of one search, run once and kept: what several indexes searched as one share.

A search over several collections normalises each collection's keyword leg by the best keyword match
over all of them (docs/decisions/0037). To know that best, every collection runs its keyword legs
before any of them ranks; :class:`KeywordScale` keeps what they found, so the search that follows
ranks from those very candidates instead of asking the store the same questions again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kbseek.filters import SearchFilters
from kbseek.search.fts_query import CompiledQuery, compile_query
from kbseek.search.lexical import COVERAGE_DEPTH, lexical_candidates, lexical_coverage
from kbseek.search.request import SearchPolicy, SearchRequest
from kbseek.store.base import Store

CANDIDATES_PER_LEG = 100
"""How deep each leg looks before fusion; deep enough that de-duplication never starves the result."""

Scale = tuple[tuple[float, float], ...]
"""Per phrasing, the best BM25 and the best query coverage a keyword leg is normalised by."""


@dataclass(frozen=True)
class KeywordLeg:
    """One phrasing's keyword candidates as the store answered them, and their coverage once known."""

    candidates: list[tuple[int, float]]
    complete: bool
    """Whether they were asked for in full (``Store.lexical_candidates``): a search whose dense leg
    ranks this phrasing asks for less, and a leg asked otherwise is asked again."""
    coverage: dict[int, float] | None = None
    """Of the best :data:`~kbseek.search.lexical.COVERAGE_DEPTH` candidates; ``None`` until needed."""

    def covered(self, store: Store, compiled: CompiledQuery) -> dict[int, float]:
        """The coverage of the best candidates: as kept, or asked of the store now."""
        if self.coverage is not None:
            return self.coverage
        return lexical_coverage(store, compiled, [r for r, _ in self.candidates[:COVERAGE_DEPTH]])


def ask(store: Store, compiled: CompiledQuery, filters: SearchFilters, *, complete: bool) -> KeywordLeg:
    """One phrasing's keyword candidates, ``complete`` or not (``Store.lexical_candidates``)."""
    found = lexical_candidates(store, compiled, limit=CANDIDATES_PER_LEG, filters=filters, complete=complete)
    return KeywordLeg(found, complete)


@dataclass(frozen=True)
class KeywordScale:
    """The keyword legs one index ran for a search, and the scale they reach.

    :attr:`own` is this index's best match per phrasing; :attr:`shared` the best over every index
    answering the search together (:func:`widest`), which the search normalises by. The legs are
    reused only by a search of the same phrasings and filters (:meth:`legs_for`).
    """

    phrasings: tuple[str, ...]
    filters: SearchFilters
    legs: tuple[KeywordLeg, ...]
    own: Scale
    shared: Scale = ()

    def sharing(self, shared: Scale) -> KeywordScale:
        """These legs, to be normalised by ``shared`` (:func:`widest` over every index searched)."""
        return replace(self, shared=shared)

    def legs_for(self, request: SearchRequest) -> tuple[KeywordLeg, ...] | None:
        """The kept legs when ``request`` asks what they answered; ``None`` otherwise."""
        if request.phrasings != self.phrasings or request.filters != self.filters:
            return None
        return self.legs


def widest(scales: Sequence[KeywordScale]) -> Scale:
    """The largest best BM25 and best coverage per phrasing over ``scales``: one index holding every
    collection would normalise by the best over all of them."""
    if not scales:
        return ()
    own = [s.own for s in scales]
    return tuple((max(s[i][0] for s in own), max(s[i][1] for s in own)) for i in range(len(own[0])))


def keyword_scale(store: Store, request: SearchRequest, policy: SearchPolicy, *, dense: bool) -> KeywordScale:
    """Each phrasing's keyword leg as the search will run it (``dense``: with a dense leg beside it,
    so a phrasing with words asks for less), with its coverage and the best of each.

    The scale is that of the complete list, as a single index's normalisation reads it: when a
    filtered leg asked for less may have stopped short, the complete one is asked for the scale.
    """
    legs: list[KeywordLeg] = []
    own: list[tuple[float, float]] = []
    for phrasing in request.phrasings:
        compiled = compile_query(phrasing, max_terms=policy.max_terms)
        complete = not (dense and phrasing.strip())
        leg = ask(store, compiled, request.filters, complete=complete)
        leg = replace(leg, coverage=leg.covered(store, compiled))
        legs.append(leg)
        full = leg
        if not complete and request.filters.narrows and len(leg.candidates) < CANDIDATES_PER_LEG:
            full = ask(store, compiled, request.filters, complete=True)
            full = replace(full, coverage=full.covered(store, compiled))
        best = max((s for _, s in full.candidates), default=0.0)
        own.append((best, max((full.coverage or {}).values(), default=0.0)))
    return KeywordScale(request.phrasings, request.filters, tuple(legs), tuple(own))
