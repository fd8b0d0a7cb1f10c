"""Reading what a caller asked into what a search runs: a ``SearchQuery`` into a ``SearchRequest``.

A query is read here once, whichever surface sent it, against the limits in force at that moment:
an out-of-range size is clamped with a note, blank and repeated phrasings are dropped, the path
prefix is read as a path under the root, and the filters are checked (``Filters.read``). What
cannot be searched is refused in one sentence saying what is accepted.
"""

from __future__ import annotations

from collections.abc import Iterable

from kbseek.config import Limits
from kbseek.errors import InvalidArgument
from kbseek.facade.shaping import clamp
from kbseek.filters import SORTS
from kbseek.ingest.guard import literal_path, relative_path
from kbseek.ingest.parsers import AVAILABLE_PARSERS
from kbseek.search.request import SearchRequest
from kbseek.search_query import SearchQuery
from kbseek.text.plurals import counted
from kbseek.text.quoting import bounded


def search_request(limits: Limits, asked: SearchQuery) -> SearchRequest:
    """``asked`` with the caps the configuration sets now; an omitted size takes today's default.
    The filters are read and checked here, once (``kbseek.filters.Filters.read``)."""
    query, also, sort = asked.query, asked.also or (), asked.sort
    if sort not in SORTS:
        raise InvalidArgument(
            f"sort={bounded(str(sort))!r} is not a sort order; accepted: {', '.join(SORTS)}"
        )
    if not query.strip() and sort != "newest":
        raise InvalidArgument(
            "query is empty: pass the words or question to search for, or sort='newest' to list the "
            "newest documents matching the filters"
        )
    for i, text in enumerate((query, *also)):
        if isinstance(text, str) and len(text) > limits.max_query_chars:
            name = "query" if i == 0 else f"also[{i - 1}]"
            raise InvalidArgument(
                f"{name} is {len(text):,} characters long; at most {limits.max_query_chars:,} are searched: "
                "ask the question in a sentence or a paragraph, and pass a document's path to fetch it"
            )
    notes: list[str] = []
    limit = clamp("limit", asked.limit, limits.default_limit, 1, limits.max_limit, notes)
    snippet_chars = clamp(
        "snippet_chars",
        asked.snippet_chars,
        limits.default_snippet_chars,
        40,
        limits.max_snippet_chars,
        notes,
    )
    alternatives = clean_also(query, also, limits.max_also, notes)
    prefix = clean_prefix(asked.filters.path_prefix)
    literal = clean_prefix(asked.filters.path_prefix, literal=True)
    return SearchRequest(
        query=query, limit=limit, snippet_chars=snippet_chars,
        filters=asked.filters.read(path_prefix=prefix, known_types=AVAILABLE_PARSERS), also=alternatives,
        sort=sort, explain=asked.explain, literal_prefix=literal if literal != prefix else None,
        notes=tuple(notes),
    )  # fmt: skip


MAX_PREFIX_CHARS = 4096
"""The longest ``path_prefix`` accepted: the longest path a file system names (``PATH_MAX``)."""


def clean_prefix(prefix: str | None, *, literal: bool = False) -> str | None:
    """A ``path_prefix`` as a root-relative path (``None`` for the whole tree); a trailing ``/`` is kept.

    Read as people type paths (blanks trimmed, ``\\`` a separator), or with ``literal`` as the scan
    names files (``guard.literal_path``), so that a folder whose name starts or ends with a blank, or
    holds a backslash, can still be searched by the prefix ``list_topics`` gave for it. Only ``/``,
    ``.`` and ``./`` mean the whole tree; ``..`` in any position is refused (``PathOutsideRoot``),
    as every path argument's is, and ``...`` is a name like any other.
    """
    if prefix is None or not prefix.strip():
        return None
    if len(prefix) > MAX_PREFIX_CHARS:
        raise InvalidArgument(
            f"path_prefix {bounded(prefix)!r} is {len(prefix)} characters long; no path is longer than "
            f"{MAX_PREFIX_CHARS}: give the folder the documents are under, e.g. runbooks/"
        )
    if all(part in ("", ".") for part in prefix.strip().replace("\\", "/").split("/")):
        return None
    trailing = (prefix if literal else prefix.strip()).endswith("/")
    rel = literal_path(prefix) if literal else relative_path(prefix)
    return rel + "/" if trailing and rel else rel or None


def clean_also(query: str, also: Iterable[str], most: int, notes: list[str]) -> tuple[str, ...]:
    """The alternative phrasings worth a search: blank ones and repeats (of the query or of each other,
    ignoring case and spacing) are left out silently, since they could only cost time; beyond ``most``
    the rest are dropped and a note says so.

    The query stays required: alternatives add to it and never stand in for it, so that every
    surface keeps one phrasing the response (``query``, ``low_confidence``) is about.
    """
    if isinstance(also, str):  # a lone string would be read as its characters
        also = (also,)
    if not query.strip() and any(a.strip() for a in also):
        raise InvalidArgument("query is empty: put the question in query; also only adds phrasings to it")
    seen = {" ".join(query.split()).casefold()}
    kept: list[str] = []
    for text in also:
        key = " ".join(text.split()).casefold()
        if key and key not in seen:
            seen.add(key)
            kept.append(text.strip())
    if len(kept) > most:
        dropped = "; ".join(kept[most:])[:200]
        if most == 0:
            notes.append(f"alternative phrasings (also) are turned off here; these were not used: {dropped}")
        else:
            notes.append(
                f"also had {counted(len(kept), 'alternative phrasing')}; only the first {most} were used "
                f"(the maximum), these were dropped: {dropped}"
            )
        kept = kept[:most]
    return tuple(kept)
