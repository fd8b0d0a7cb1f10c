"""What the knowledge base offers a reader: documents, passages, topics, resources, recent documents.

Two sets decide what a reader sees, and they differ on purpose:

- every **indexed** document is findable: search hits, fetched passages and the ``list_topics``
  overview (a person narrows a search by the folders it lists) cover all of them;
- the **servable** set (D3, D4) is what the server *offers* as a resource: indexed, opened by a parser
  enabled now, and recorded no larger than the resource cap. The resource listing, topic bodies and
  the ``uri`` on hits and passages all come from :meth:`Catalog.servable_document_paths`, so what the
  listing offers is exactly what a resource read accepts.

Both are grouped into topics by one rule, :func:`topic_prefix`. ``get_document`` is bounded by neither:
it reads any file under the root that an enabled parser opens, through the one guard (D1, D5). On a
server without the files (no root: it reads a database index, docs/decisions/0031) the index is the
only source, so ``get_document`` there serves the indexed documents' stored text and nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kbseek.errors import DocumentNotFound, NotServable
from kbseek.facade import response_cap, shaping
from kbseek.facade.hashes import document_with_hash
from kbseek.facade.live_config import LiveConfig
from kbseek.ingest.guard import LoadedDocument, literal_path, load_document, relative_path
from kbseek.ingest.parsers import media_type_of
from kbseek.responses import (
    DocumentResponse,
    FetchResponse,
    IndexSummary,
    MissingChunk,
    RecentDocument,
    RecentDocuments,
    TopicsResponse,
)
from kbseek.search.passages import join_by_offsets
from kbseek.store.base import Store
from kbseek.store.records import DocumentRow
from kbseek.text.quoting import ECHO_CHARS, bounded_middle
from kbseek.uris import document_uri
from kbseek.write.hashes import shown_hash


def document_path(path: str) -> str:
    """A path as the index and every response name a document: root-relative POSIX (``./a.md``,
    ``/a.md`` and ``a\\b.md`` normalised). Raises :class:`~kbseek.errors.PathOutsideRoot` for one that
    climbs out of the root."""
    return relative_path(path)


def topic_prefix(path: str) -> str:
    """``a.md`` → ``""``, ``a/b.md`` → ``"a/"``, ``a/b/c/d.md`` → ``"a/b/"``.

    Two levels keep a large tree's listing short while still separating,
    say, ``runbooks/database/`` from ``runbooks/network/``.
    """
    folders = path.split("/")[:-1]
    return "".join(f + "/" for f in folders[:2])


def group_by_topic(documents: Iterable[DocumentRow]) -> dict[str, list[DocumentRow]]:
    """Documents by topic prefix, prefixes sorted, documents in the order given (the store's: by path)."""
    groups: dict[str, list[DocumentRow]] = {}
    for d in documents:
        groups.setdefault(topic_prefix(d.path), []).append(d)
    return dict(sorted(groups.items()))


@dataclass(frozen=True)
class ResourceText:
    """A document as a resource read serves it: its text (cut at the cap, with a note) and media type."""

    path: str
    text: str
    media_type: str
    hash: str | None = None
    """The note's hash, on a knowledge base that lets agents write (docs/decisions/0058)."""


class Catalog:
    """Reads of one knowledge base's index and files, within the caps the configuration sets now."""

    def __init__(self, store: Store, live: LiveConfig) -> None:
        self._store = store
        self._live = live

    # -- the servable set (D3, D4) -----------------------------------------------------------------

    def servable_document_paths(self, among: Collection[str] | None = None) -> list[str]:
        """Indexed paths that a resource read serves: active parser, recorded size within the read cap.

        The one servable predicate (D4): the resource listing, topic bodies and the ``uri`` on hits
        all come from here. ``among`` restricts the answer to some paths (a page of hits) without
        changing the rule.
        """
        active = self._live.active
        max_bytes = active.settings.limits.max_resource_bytes
        return [p for p in self._store.paths_within_size(max_bytes, among) if active.registry.for_path(p)]

    def _servable_documents(self) -> list[DocumentRow]:
        servable = set(self.servable_document_paths())
        return [d for d in self._store.documents() if d.path in servable]

    # -- documents ---------------------------------------------------------------------------------

    def load_document(self, path: str, *, exact: bool = False) -> LoadedDocument:
        """The one guarded document load (D5), shared by ``get_document`` and resource reads.

        ``exact``: ``path`` is an indexed path, read as it is (see :func:`kbseek.ingest.guard.load_document`).
        """
        active = self._live.active
        root = active.settings.root
        if root is None:
            return self._stored_document(path, exact=exact)
        return load_document(
            root, path, active.registry, max_bytes=active.settings.max_file_bytes, exact=exact
        )

    def _stored_document(self, path: str, *, exact: bool) -> LoadedDocument:
        """A document as the index holds it, named as search returned it or as an agent typed it."""
        candidates = (
            [literal_path(path)] if exact else list(dict.fromkeys([literal_path(path), relative_path(path)]))
        )
        for rel in candidates:
            row = self._store.document(rel)
            text = self._store.document_text(rel) if row is not None else None
            if row is not None and text is not None:
                return LoadedDocument(
                    rel, text, media_type_of(row.parser), row.size, row.parser, row.content_hash
                )
        raise DocumentNotFound(
            f"{bounded_middle(candidates[-1], ECHO_CHARS)} is not in the index this server reads: a server "
            "without the files serves indexed documents only; search or list_topics give their paths",
            path,
        )

    def read_document(self, path: str, *, offset: int, max_chars: int | None) -> DocumentResponse:
        """Any file under the root an enabled parser opens, indexed or not (D1), a window at a time."""
        doc = self.load_document(path)
        row = self._store.document(doc.path)
        r = shaping.document_response(
            doc, offset=offset, max_chars=max_chars, limits=self._live.limits, indexed=row is not None,
            dated=row.dated if row is not None else None,
        )  # fmt: skip
        return document_with_hash(r, doc) if self._live.settings.write.enabled else r

    def read_resource_document(self, path: str) -> ResourceText:
        """A document as a resource: only if the server offers it (D3), through the one guard (D5).

        ``get_document`` reads any registered file under the root (D1); a resource is
        something this server listed, so it must also be in the servable set.
        """
        rel = self._servable_path(path)
        doc = self.load_document(rel, exact=True)
        text = shaping.resource_text(rel, doc.text, self._live.limits.max_resource_chars)
        writing = self._live.settings.write.enabled and doc.digest
        return ResourceText(rel, text, doc.media_type, shown_hash(doc.digest) if writing else None)

    def _servable_path(self, path: str) -> str:
        """The servable path ``path`` names: as the index lists it (a name may start with a blank or
        hold a backslash), else as typed (``a\\b.md`` for ``a/b.md``); refused if neither is offered."""
        literal = literal_path(path)
        if self.servable_document_paths(among=[literal]):
            return literal
        rel = relative_path(path)
        if rel != literal and self.servable_document_paths(among=[rel]):
            return rel
        raise NotServable(
            f"{bounded_middle('kb://doc/' + rel, ECHO_CHARS)} is not offered as a resource: it is not in "
            "the search index (excluded, "
            "skipped, not indexed yet, or its format is no longer enabled) or it is over the resource "
            "size cap; get_document(path) reads files by path",
            path,
        )

    # -- passages (T5, T6) -------------------------------------------------------------------------

    def fetch(self, args: shaping.FetchArgs) -> FetchResponse:
        """The passages around the requested chunks, neighbours joined by offset; stale ids said as such."""
        missing: list[MissingChunk] = []
        windows: dict[int, list[tuple[int, int, str]]] = {}
        for cid in args.ids:
            row = self._store.chunk(cid)
            if row is None:
                missing.append(self._missing(cid))
                continue
            windows.setdefault(row.document_id, []).append(
                (row.ordinal - args.context, row.ordinal + args.context, cid)
            )
        runs: list[shaping.FoundRun] = []
        for doc_id, wins in windows.items():
            first, last = min(w[0] for w in wins), max(w[1] for w in wins)
            wanted = {w[2] for w in wins}
            for run in join_by_offsets(self._store.neighbours(doc_id, first, last)):
                in_run = {c.chunk_id for c in run.chunks}
                requested = [cid for cid in args.ids if cid in wanted and cid in in_run]
                if requested:  # else a neighbour-only run between two separate windows
                    runs.append(shaping.FoundRun(run, requested))
        servable = self.servable_document_paths(among={r.run.chunks[0].path for r in runs})
        limits = self._live.limits
        response = shaping.fetch_response(
            args, runs, missing, servable=set(servable), max_fetch_chars=limits.max_fetch_chars
        )
        return response_cap.fit_fetch(response, limits.max_response_chars)

    def _missing(self, chunk_id: str) -> MissingChunk:
        retired = self._store.retired(chunk_id)
        if retired is None:
            return shaping.stale_chunk(chunk_id, None, None, document_exists=False)
        path, when = retired
        exists = self._store.document(path) is not None
        return shaping.stale_chunk(chunk_id, path, when, document_exists=exists)

    # -- topics (D2) -------------------------------------------------------------------------------

    def topics(self, summary: IndexSummary) -> TopicsResponse:
        """The overview of everything indexed, by topic: what search can find and where to narrow it."""
        titles = {p: dated_titles(docs) for p, docs in group_by_topic(self._store.documents()).items()}
        return shaping.topics_response(titles, limits=self._live.limits, summary=summary)

    def topic_groups(self) -> list[tuple[str, int]]:
        """(prefix, servable document count) for every topic that has a servable document."""
        return [(p, len(docs)) for p, docs in group_by_topic(self._servable_documents()).items()]

    def topic_body(self, prefix: str) -> str | None:
        """A Markdown list of a topic's servable documents with their uris; ``None`` for no such topic."""
        docs = group_by_topic(self._servable_documents()).get(prefix)
        if not docs:
            return None
        return shaping.topic_body(prefix, [(d.title, d.path, d.dated.day if d.dated else None) for d in docs])

    # -- recent documents --------------------------------------------------------------------------

    def recent_documents(
        self, since_ts: float, since_date: str, *, limit: int, summary: IndexSummary
    ) -> RecentDocuments:
        """Servable documents new since a moment, by frontmatter date and by index time, kept apart.

        The two answer different questions: a frontmatter date is the author's claim about the
        content, the index time is when kbseek last saw the content change (a rebuilt index resets
        it). ``since_date`` is YYYY-MM-DD; a frontmatter date is compared on its leading
        YYYY-MM-DD, so a date with a time of day still counts for its day.
        """
        docs = self._servable_documents()
        dated: list[tuple[str, DocumentRow]] = []
        unparsed = 0
        for d in docs:
            if d.date is None:
                continue
            day = _leading_day(d.date)
            if day is None:
                unparsed += 1
            elif day >= since_date:
                dated.append((day, d))
        dated.sort(key=lambda item: item[0], reverse=True)  # stable: paths stay in order within a day
        indexed = sorted((d for d in docs if d.indexed_at >= since_ts), key=lambda d: (-d.indexed_at, d.path))
        return RecentDocuments(
            since_date=since_date, since=shaping.iso(since_ts),
            by_date=_entries(d for _, d in dated[:limit]), by_date_total=len(dated),
            by_index_time=_entries(indexed[:limit]), by_index_time_total=len(indexed),
            unparsed_dates=unparsed, truncated=len(dated) > limit or len(indexed) > limit, index=summary,
        )  # fmt: skip


def _entries(docs: Iterable[DocumentRow]) -> list[RecentDocument]:
    return [
        RecentDocument(
            path=d.path,
            title=d.title,
            date=d.date,
            indexed_at=shaping.iso(d.indexed_at),
            tags=list(d.tags),
            uri=document_uri(d.path),
        )
        for d in docs
    ]


def _leading_day(value: str) -> str | None:
    """The YYYY-MM-DD a frontmatter date starts with, if it is a real calendar day."""
    try:
        return datetime.strptime(value.strip()[:10], "%Y-%m-%d").date().isoformat()
    except ValueError:
        return None


def dated_titles(documents: Sequence[DocumentRow]) -> list[str]:
    """A topic's titles newest first, each with its day (``Title (2026-03-01)``): a capped list of
    titles then shows what is recent, and an agent sees how old a folder's notes are."""
    by_title = sorted(documents, key=lambda d: d.title)  # then newest first, titles in order within a day
    ordered = sorted(by_title, key=lambda d: d.dated.day if d.dated else "", reverse=True)
    return [f"{d.title} ({d.dated.day})" if d.dated else d.title for d in ordered]
