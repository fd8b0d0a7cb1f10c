"""How a page for people lists a search: where the list stops, and each hit's relevance in a word.

An agent reads every hit and compares the scores itself; a person scans a list top down and stops
reading well before twenty passages. So the web page lists a search down to where the ranking's
confidence falls away (the rest behind a button) and shows each result's relevance as a grade,
both decided here by ``search.confidence`` rather than by the page's script, so the rule is written
once and measured (``benchmarks/page_cut.py``).
"""

from __future__ import annotations

from kbseek.responses import SearchResponse
from kbseek.search.confidence import confident_count, relevance


class PageSearchResponse(SearchResponse):
    """A search as every surface answers it, and how a page lists it."""

    confident: int
    """How many of ``hits`` to list before the ranking's confidence falls away; the rest are weaker."""
    relevance: list[str]
    """Per hit: ``strong``, ``fair`` or ``weak``, relative to the best hit; empty for a listing."""


def for_the_page(answer: SearchResponse, *, ranked: bool) -> PageSearchResponse:
    """``answer`` with where a person's list stops and each hit's relevance in a word.

    ``ranked``: the hits are in relevance order. In date order (``sort="newest"``) every hit is listed,
    since the caller asked for what changed, and still graded; a listing (no query) is neither cut
    nor graded: no hit was ranked.
    """
    fields = {name: getattr(answer, name) for name in SearchResponse.model_fields}
    if answer.legs.lexical == "none":
        return PageSearchResponse(**fields, confident=len(answer.hits), relevance=[])
    best = max((h.score for h in answer.hits), default=0.0)
    grades = [relevance(h.score, best, low_confidence=answer.low_confidence) for h in answer.hits]
    documents = [(f"{h.kb or ''}\0{h.path}", h.score) for h in answer.hits]
    listed = confident_count(documents, low_confidence=answer.low_confidence) if ranked else len(answer.hits)
    return PageSearchResponse(**fields, confident=listed, relevance=grades)
