"""The documents related to a document or a chunk: its links both ways, and its vector neighbours.

Two signals, one ranking (docs/decisions/0036):

- **Vectors.** Each chunk of the subject (the one chunk, for a ``chunk_id``) is searched against the
  dense index search uses, and each of them finds its best match in each other document; a
  document's similarity is the mean of those best matches over the subject's chunks, the way late
  interaction scores a passage. A chunk that did not reach a document among its nearest
  :data:`NEIGHBOURS` counts the cosine of the last one it did reach, an upper bound on what it would
  have found. The mean, not the single best pair: with the best pair, one boilerplate passage
  (a "Pitfalls" heading, a shared code sample) that happens to match decided the ranking, where
  the mean asks how much of the subject the other document speaks to (measured in decision 0036).
  For a ``chunk_id`` the two are the same: the best cosine, as a search's ``dense_similarity``.
- **Links.** A document the subject links to, and one that links to it (a backlink), as the store
  resolves them (``store.links``). Links are a document's, so a chunk's subject has its document's.

The score is the similarity (0 for a document no vector reached) plus :data:`LINK_WEIGHT` for
each direction a link runs: a page linked both ways with no similar passage scores 1.0, and a link
lifts a page past any unlinked one less than 0.5 more similar, which in practice is every one: an
author's link is the strongest statement that two notes belong together. Each hit says why.

Every read is bounded: at most :data:`MAX_CHUNKS` chunks of the subject are searched,
:data:`NEIGHBOURS` nearest chunks each, :data:`MAX_LINKS` links read each way, within
:data:`TIME_BUDGET` seconds of vector search; a note says what was left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kbseek.errors import InvalidArgument
from kbseek.facade import shaping
from kbseek.facade.catalog import document_path
from kbseek.facade.live_config import LiveConfig
from kbseek.facade.semantic import SemanticLeg, SemanticState
from kbseek.responses import RelatedHit, RelatedResponse
from kbseek.store.base import Store
from kbseek.store.records import ChunkRow, DocumentRow
from kbseek.text.plurals import counted
from kbseek.text.quoting import ECHO_CHARS, bounded_middle

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_CHUNKS = 32
"""Chunks of the subject searched: a long document's first 32 say what it is about."""
NEIGHBOURS = 40
"""Nearest chunks read per subject chunk: enough to reach 10 other documents past the subject's own."""
MAX_LINKS = 200
"""Links read each way; a hub page's backlinks past this are not weighed."""
MAX_BACKLINKS = 50
"""Backlinks listed in an answer (their count may be larger: a note says so)."""
TIME_BUDGET = 2.0
"""Seconds of vector search; the chunks not reached in time are not searched, and a note says so."""
LINK_WEIGHT = 0.5
TITLE_CHARS = 200
"""A hit's title is cut in the middle past this: a heading can be a paragraph long."""


@dataclass
class _Candidate:
    path: str
    title: str = ""
    similarity: float | None = None
    links_to: bool = False
    linked_from: bool = False

    @property
    def score(self) -> float:
        links = LINK_WEIGHT * (self.links_to + self.linked_from)
        return (self.similarity or 0.0) + links

    def why(self) -> list[str]:
        out = [w for w, on in (("links to", self.links_to), ("linked from", self.linked_from)) if on]
        if self.similarity is not None:
            out.append(f"similar: {self.similarity:.2f}")
        return out


class Related:
    """``KnowledgeBase.related``: the store and the dense index search uses."""

    def __init__(
        self, store: Store, live: LiveConfig, semantic: SemanticLeg, clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._store = store
        self._live = live
        self._semantic = semantic
        self._clock = clock

    def related(
        self,
        *,
        path: str | None = None,
        chunk_id: str | None = None,
        limit: int | None = None,
        links: bool = True,
    ) -> RelatedResponse:
        """The documents most related to ``path`` or ``chunk_id``, best first, each saying why.

        Raises :class:`~kbseek.errors.InvalidArgument` for both or neither, a path that is not indexed,
        or a chunk id that is not (or no longer) one.
        """
        notes: list[str] = []
        limit = shaping.clamp("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT, notes)
        document, chunk = self._subject(path, chunk_id)
        found: dict[str, _Candidate] = {}
        state = self._semantic.state()
        truncated = False
        if self._semantic.ready:
            truncated |= self._similar(document, chunk, found, notes)
        else:
            notes.append(_no_vectors(state))
        backlinks: list[str] = []
        if links:
            truncated |= self._linked(document.path, found, backlinks, notes)
        if chunk is not None and links:
            notes.append("links are the document's: a chunk has its document's links")
        ranked = sorted(found.values(), key=lambda c: (-c.score, c.path))
        if len(ranked) > limit:
            truncated = True
            notes.append(f"{len(ranked) - limit} more related documents: raise limit (at most {MAX_LIMIT})")
        hits = self._hits(ranked[:limit])
        if len(backlinks) > MAX_BACKLINKS:
            truncated = True
            notes.append(f"{len(backlinks)} documents link here; the first {MAX_BACKLINKS} are listed")
        response = RelatedResponse(
            path=document.path,
            hits=hits,
            backlinks=backlinks[:MAX_BACKLINKS],
            truncated=truncated,
            notes=notes,
        )
        return _fit(response, self._live.limits.max_response_chars // 2)

    def _subject(self, path: str | None, chunk_id: str | None) -> tuple[DocumentRow, ChunkRow | None]:
        if (path is None) == (chunk_id is None):
            raise InvalidArgument("pass either path or chunk_id (from search hits), not both or neither")
        if chunk_id is not None:
            chunk = self._store.chunk(chunk_id)
            if chunk is None:
                retired = self._store.retired(chunk_id)
                where = f" (it was in {retired.path}, since edited)" if retired else ""
                raise InvalidArgument(
                    f"chunk_id {bounded_middle(chunk_id, ECHO_CHARS)!r} is not a current chunk{where}: search again"
                )
            document = self._store.document(chunk.path)
            if document is None:  # deleted between the two reads
                raise InvalidArgument("that chunk's document is no longer indexed: search again")
            return document, chunk
        assert path is not None
        document = self._store.document(document_path(path))
        if document is None:
            raise InvalidArgument(
                f"{bounded_middle(path, ECHO_CHARS)!r} is not an indexed document: pass a path as search hits give it"
            )
        return document, None

    def _similar(
        self, document: DocumentRow, chunk: ChunkRow | None, found: dict[str, _Candidate], notes: list[str]
    ) -> bool:
        """Other documents' similarity to the subject into ``found`` (the mean over the subject's
        chunks of each one's best match there); whether a cap applied."""
        dense = self._semantic.dense
        if dense is None:
            return False
        # one chunk more than the cap, to know whether it cut the document
        subject = [chunk] if chunk is not None else self._store.neighbours(document.id, 0, MAX_CHUNKS)
        capped = len(subject) > MAX_CHUNKS
        subject = subject[:MAX_CHUNKS]
        rowids, vectors = self._store.vectors_for_rowids([c.rowid for c in subject], dense.dim)
        own = {c.rowid for c in subject} if chunk is not None else None
        # per subject chunk searched: the cosine of each chunk it reached, and the lowest of them
        reached: list[tuple[dict[int, float], float]] = []
        deadline = self._clock() + TIME_BUDGET
        for vector in vectors:
            if self._clock() > deadline:
                break
            nearest = dense.search(vector, NEIGHBOURS)
            floor = min((cosine for _, cosine in nearest), default=0.0)
            reached.append(({r: c for r, c in nearest if own is None or r not in own}, floor))
        searched = len(reached)
        rows = self._store.chunks_by_rowid(list({r for cosines, _ in reached for r in cosines}))
        best: list[dict[str, float]] = []
        for cosines, _ in reached:
            by_path: dict[str, float] = {}
            for rowid, cosine in cosines.items():
                row = rows.get(rowid)
                if row is None or row.path == document.path:
                    continue
                by_path[row.path] = max(cosine, by_path.get(row.path, -1.0))
                found.setdefault(row.path, _Candidate(row.path, row.title))
            best.append(by_path)
        for path in {p for by_path in best for p in by_path}:
            mean = (
                sum(by_path.get(path, floor) for by_path, (_, floor) in zip(best, reached, strict=True))
                / searched
            )
            found[path].similarity = mean
        if capped:
            notes.append(f"only the first {MAX_CHUNKS} chunks of {document.path} were compared")
        if searched < len(vectors):
            notes.append(
                f"the time budget ({TIME_BUDGET:g} s) ran out: {searched} of {counted(len(vectors), 'chunk')} "
                "were compared"
            )
        if len(vectors) < len(subject):
            notes.append(f"{len(subject) - len(rowids)} of the chunks compared have no vector yet")
        return capped or searched < len(vectors)

    def _linked(
        self, path: str, found: dict[str, _Candidate], backlinks: list[str], notes: list[str]
    ) -> bool:
        """Links both ways into ``found`` and the backlinks' paths; whether a cap applied."""
        out = self._store.links_from(path, limit=MAX_LINKS)
        into = self._store.links_to(path, limit=MAX_LINKS)
        for link in out:
            found.setdefault(link.target, _Candidate(link.target)).links_to = True
        for link in into:
            found.setdefault(link.source, _Candidate(link.source)).linked_from = True
            backlinks.append(link.source)
        capped = len(out) >= MAX_LINKS or len(into) >= MAX_LINKS
        if capped:
            notes.append(f"at most {MAX_LINKS} links were read each way")
        return capped

    def _hits(self, ranked: list[_Candidate]) -> list[RelatedHit]:
        hits: list[RelatedHit] = []
        for c in ranked:
            title = c.title
            if not title:  # found by its links alone
                row = self._store.document(c.path)
                title = row.title if row is not None else c.path
            title = bounded_middle(title, TITLE_CHARS)
            hits.append(RelatedHit(
                path=c.path, title=title, score=round(c.score, 4), why=c.why(),
            ))  # fmt: skip
        return hits


def _fit(r: RelatedResponse, max_chars: int) -> RelatedResponse:
    """``r`` within ``max_chars`` as JSON (T3), backlinks then hits dropped from the end, said in a
    note. Half the response cap: a tool result repeats the list in its text block."""
    if len(r.model_dump_json()) <= max_chars:
        return r
    hits, backlinks = list(r.hits), list(r.backlinks)
    note = "cut to fit the response cap: ask with a smaller limit"
    while hits or backlinks:
        if backlinks:
            backlinks.pop()
        else:
            hits.pop()
        cut = r.model_copy(
            update={"hits": hits, "backlinks": backlinks, "truncated": True, "notes": [*r.notes, note]}
        )
        if len(cut.model_dump_json()) <= max_chars:
            return cut
    return r.model_copy(update={"hits": [], "backlinks": [], "truncated": True, "notes": [*r.notes, note]})


def _no_vectors(state: SemanticState) -> str:
    if state is SemanticState.LOADING:
        return "the embedding model is loading: related by links only for now"
    if state is SemanticState.OFF:
        return "semantic search is off: related by links only"
    return "semantic search is unavailable (see index_status): related by links only"
