"""What a search's filters and sort order need from the index beyond the two legs.

The filters themselves narrow both legs inside the store (``kbseek.filters``); this module holds the
parts of the pipeline that ask the index a question of their own: taking a prefix literally when a
path starts with it that way, refusing a ``where`` on a field no document has (a misspelling would
otherwise match nothing, silently), saying which filter left a search empty (T4), ordering hits
newest first, and listing the newest documents when there is no query.
"""

from __future__ import annotations

from dataclasses import fields, replace

from kbseek.errors import UnknownField
from kbseek.filters import SearchFilters
from kbseek.ingest.parsers import has_markup
from kbseek.search.fts_query import CompiledQuery
from kbseek.search.hits import PipelineResult, RankedHit
from kbseek.search.request import SearchRequest
from kbseek.store.base import Store
from kbseek.text.quoting import bounded
from kbseek.text.snippets import make_snippet

FIELDS_LISTED = 30
"""Fields named in the refusal of an unknown one: enough to spot the intended spelling."""
NEWEST_POOL = 4
"""``sort=newest`` orders the best ``limit × NEWEST_POOL`` matches (within ``max_limit``) by date, so
the newest relevant document is found even when it ranked below the first page."""


def literal_prefix(store: Store, request: SearchRequest) -> SearchRequest:
    """``request`` with its prefix read literally when a document's path starts with it that way (a
    folder named with a blank or a ``\\``, as ``list_topics`` gives it); else ``request`` itself."""
    literal = request.literal_prefix
    if literal is None or not store.filtered_rowids(SearchFilters(path_prefix=literal)):
        return request
    return replace(request, filters=replace(request.filters, path_prefix=literal))


def check_fields(store: Store, filters: SearchFilters) -> None:
    """Refuse a ``where`` naming a field no document has, listing the fields there are."""
    unknown = [c.field for c in filters.where if not store.has_field(c.field)]
    if not unknown:
        return
    known = [name for name, _, _ in store.field_facets(fields=FIELDS_LISTED, values=0)]
    listed = ", ".join(known) if known else "none (no document has front matter)"
    raise UnknownField(
        f"where: no document has the front-matter field {bounded(unknown[0])!r}; fields in this "
        f"knowledge base: {listed} (index_status lists each with its common values)"
    )


def unmatched_note(store: Store, filters: SearchFilters) -> str | None:
    """When the filters pass no document at all: a note naming them, and each one that alone passes
    none; ``None`` when some document passes (the query, not the filters, found nothing)."""
    if not filters.narrows or store.filtered_rowids(filters):
        return None
    alone = [one for one in _each(filters) if not store.filtered_rowids(one)]
    culprits = "; ".join(one.describe() for one in alone)
    why = (
        f"{culprits} alone matches no document"
        if alone
        else "each passes some documents, but none passes all"
    )
    return (
        f"no document matches the filters ({bounded(filters.describe())}): {why}. Widen or drop a "
        "filter; index_status lists the front-matter fields and their common values"
    )


def _each(filters: SearchFilters) -> list[SearchFilters]:
    """The filters one condition at a time, so the one that excludes everything can be named: each
    field alone, in the order ``SearchFilters`` declares them, except that the two dates are one
    range and each ``where`` condition is one of its own."""
    empty = SearchFilters()
    out: list[SearchFilters] = []
    for field in fields(filters):
        value = getattr(filters, field.name)
        if field.name == "where":
            out += [replace(empty, where=(c,)) for c in filters.where]
        elif field.name in ("after", "before"):
            if field.name == "after" and (filters.after or filters.before):
                out.append(replace(empty, after=filters.after, before=filters.before))
        elif value:
            out.append(replace(empty, **{field.name: value}))
    return out


def pool_limit(limit: int, max_limit: int) -> int:
    """How many hits a ``sort=newest`` search ranks before ordering them by date."""
    return max(limit, min(limit * NEWEST_POOL, max_limit))


def newest_first(result: PipelineResult, limit: int) -> PipelineResult:
    """The ranked hits newest day first (rank order within a day), cut to ``limit``."""
    ordered = sorted(result.hits, key=lambda h: h.chunk.date or "", reverse=True)
    more = result.more_available or len(ordered) > limit
    return replace(result, hits=ordered[:limit], more_available=more)


def listing(store: Store, filters: SearchFilters, *, limit: int, snippet_chars: int) -> PipelineResult:
    """The newest documents passing ``filters``, each as its first chunk: a search without a query."""
    rowids = store.newest_chunks(filters, limit=limit + 1)
    rows = store.chunks_by_rowid(rowids[:limit])
    hits: list[RankedHit] = []
    for rowid in rowids[:limit]:
        chunk = rows.get(rowid)
        if chunk is None:  # deleted between the two reads
            continue
        snippet = make_snippet(chunk.text, (), snippet_chars, markup=has_markup(chunk.parser))
        hits.append(RankedHit.listed(chunk, snippet))
    none = CompiledQuery((), ())
    return PipelineResult(
        hits, none, semantic_used=False, more_available=len(rowids) > limit, low_confidence=False
    )
