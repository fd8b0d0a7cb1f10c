"""What one search asks (:class:`SearchRequest`) and the settings that shape every search (:class:`SearchPolicy`).

The two change at different times and come from different places: a request from each caller, read
once from its :class:`~kbseek.search_query.SearchQuery` (``facade/request.py``); a policy from the
configuration, one per settings snapshot (``[search]``, ``[limits]``). Kept apart, a request says only
what was asked, and a benchmark compares two fusions by running the same request under two policies.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbseek.filters import NO_FILTERS, SearchFilters
from kbseek.search.ranker import Ranking


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """A search's arguments once read: caps applied, phrasings cleaned, filters checked.

    The caps carry no defaults here: their one source is the configuration (``[limits]``), and a
    default written again here would drift from it unnoticed.
    """

    query: str
    limit: int
    snippet_chars: int
    """``0`` skips snippets, for callers that only need the ranking (eval, benchmarks)."""
    filters: SearchFilters = NO_FILTERS
    """What hits must meet, in both legs (``kbseek.filters``)."""
    also: tuple[str, ...] = ()
    """Alternative phrasings of the query, blank and repeated ones removed and capped at
    ``[limits].max_also``. Each is ranked like the query and every chunk keeps its best score over
    them (docs/decisions/0011); ``Fused.phrasing`` indexes :attr:`phrasings`."""
    sort: str = "relevance"
    """``newest``: the matching hits newest first; with no query, a listing (``search.filtering``)."""
    explain: bool = False
    """Each hit says how each leg ranked it (read by the response, not by the ranking)."""
    literal_prefix: str | None = None
    """The prefix read literally, when that differs from ``filters.path_prefix``: the search takes
    it instead if a document's path starts with it that way (a folder named with a blank or a ``\\``)."""
    notes: tuple[str, ...] = ()
    """What reading the request changed (a clamped limit, dropped phrasings), for the response to say."""

    @property
    def phrasings(self) -> tuple[str, ...]:
        """The query, then its alternatives: ``Fused.phrasing`` indexes this."""
        return (self.query, *self.also)

    @property
    def listing(self) -> bool:
        """A search without a query, newest first: what changed, narrowed by the filters."""
        return self.sort == "newest" and not self.query.strip()


@dataclass(frozen=True, kw_only=True)
class SearchPolicy:
    """How every search of one settings snapshot is ranked and bounded.

    Every field is required: each comes from the configuration, so no second, stale default can
    decide a ranking. Which model answers (its vectors' floor and parts) is the dense leg's, not
    the policy's: it changes with the model, not with the settings.
    """

    fusion: str
    """``"blend"``, ``"rrf"`` or ``"learned"`` (``[search].fusion``)."""
    dense_weight: float
    """The dense share of a blended score when no lexical candidate covers the query."""
    matched_weight: float | None
    """The dense weight when a lexical candidate covers the whole query (``fusion.adaptive_weight``);
    ``None`` keeps ``dense_weight`` for every query."""
    rrf_k: int
    far_ahead: float
    """``[search].far_ahead``: when a second chunk of a document may keep its rank (``search.diversity``)."""
    also_agreement: float
    """``[search].also_agreement``: how much the other phrasings' scores add to a chunk's best (``fusion.best_of``)."""
    bridge_weight: float
    """``[search].bridge_weight``: the weight of the query's words in the other language
    (``search.bridge``); 0 turns the bridge off."""
    max_terms: int
    """``[limits].max_query_terms``."""
    max_hits_per_document: int
    """``[limits].max_hits_per_document``."""
    max_limit: int
    """``[limits].max_limit``: also how deep a ``sort=newest`` search ranks before ordering by date."""
    ranker: Ranking | None = None
    """The learned ranking that reorders the fused one (``fusion = "learned"``, ``search.ranker``);
    it reads the dense leg's scores, so a search without one keeps the fused order."""
