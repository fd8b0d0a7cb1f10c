"""``SearchQuery``: a search as its caller asked for it, one value from the surface to the knowledge base.

Every surface (the MCP tools, the command line, the web API, ``Library``, ``KnowledgeBase`` called
with keywords) fills one of these from its own arguments and hands it on whole, so that what a
search asks is written once: a new option is a field here, not a parameter repeated in each layer
between the surface and the pipeline.

Nothing is checked here, as :class:`~kbseek.filters.Filters` checks nothing: the knowledge base reads
the value once (``facade/request.py``) against the limits in force at that moment, clamping what is
out of range and refusing what it cannot use, so every surface is answered alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from kbseek.filters import Filters


@dataclass(frozen=True)
class SearchQuery:
    """What a caller asks a search for, as given.

    ``query``: words or a question (empty only with ``sort="newest"``: a listing of what changed).
    ``also``: other phrasings of it. ``limit``/``snippet_chars``: ``None`` takes the default
    configured now. ``explain``: each leg's rank and score on every hit.
    """

    query: str
    _: KW_ONLY
    also: Sequence[str] = ()
    filters: Filters = field(default_factory=Filters)
    sort: str = "relevance"
    limit: int | None = None
    snippet_chars: int | None = None
    explain: bool = False

    @property
    def blank(self) -> bool:
        """No words to search for: a listing, or a refusal (``facade/request.py`` says which)."""
        return not self.query.strip()

    @classmethod
    def of(cls, query: str | SearchQuery, *, filters: Filters | None = None, **given: Any) -> SearchQuery:
        """``query`` as one value: text with ``given`` as its other fields, or a ``SearchQuery`` as it is,
        beside which a field given too would be ambiguous (a ``TypeError`` names it)."""
        if not isinstance(query, SearchQuery):
            return cls(query, filters=filters or Filters(), **given)
        defaults = cls("")
        clashing = [k for k, v in given.items() if v != getattr(defaults, k)]
        if filters is not None or clashing:
            named = ", ".join(["filters"] * (filters is not None) + clashing)
            raise TypeError(f"a SearchQuery already holds {named}: set it there, not beside it")
        return query
