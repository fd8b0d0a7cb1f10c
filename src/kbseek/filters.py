"""``SearchFilters``: what a search is narrowed to, as one value from the surface to the store.

A search's narrowing used to travel as loose arguments (``path_prefix, tags``) through every layer,
the MCP tool, ``KnowledgeBase.search``, the request, each leg and each store method, so adding one
filter touched a dozen files. It is one value now: built and validated once where the request
arrives (``facade/shaping.py``), read by both legs of the pipeline, and translated by each store to
its own SQL (``store/sqlite.py``, ``store/postgres.py``). A filter added later is a field here, its
parsing there, and one clause per store.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchFilters:
    """The conditions a hit's document must meet, AND-ed; the default narrows nothing.

    ``path_prefix`` is root-relative, compared literally with ASCII letters folded, as given (the
    facade has cleaned it); ``tags`` must all be on the document, compared folded.
    """

    path_prefix: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether any condition is set (no filter: the store reads no document table)."""
        return bool(self.path_prefix) or bool(self.tags)


NO_FILTERS = SearchFilters()
"""The search over the whole knowledge base."""
