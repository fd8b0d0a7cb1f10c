"""Turning what the index found into responses: every cap applied, every cut and clamp said (T3, T4).

The reader of a response is often an agent that can only act on the words it is given, so a
clamped argument, a dropped query term, a cut passage and an empty result each come with a note
saying what happened and what to do next. All of it is decided here, from plain values, so the
wording and the caps are tested without a store, a model or a server.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kbseek.config import Limits
from kbseek.dates import DocumentDate
from kbseek.facade.response_cap import passage_cut_note
from kbseek.facade.semantic import SemanticState
from kbseek.filters import SearchFilters
from kbseek.ingest.guard import LoadedDocument
from kbseek.responses import (
    DocumentResponse,
    Explanation,
    FetchResponse,
    IndexSummary,
    Legs,
    MissingChunk,
    Passage,
    SearchHit,
    SearchResponse,
    Topic,
    TopicsResponse,
)
from kbseek.search.hits import PipelineResult, RankedHit
from kbseek.search.passages import JoinedText
from kbseek.search.request import SearchRequest
from kbseek.text.language import is_japanese
from kbseek.text.plurals import counted
from kbseek.text.quoting import bounded
from kbseek.uris import document_uri

# -- arguments -----------------------------------------------------------------------------------------


def clamp(name: str, value: int | None, default: int, low: int, high: int, notes: list[str]) -> int:
    """``value`` within ``[low, high]`` (``default`` when omitted); a moved value is said in ``notes``."""
    if value is None:
        return default
    if value < low:
        notes.append(f"{name}={value} was raised to the minimum {low}")
        return low
    if value > high:
        notes.append(f"{name}={value} was clamped to the maximum {high}")
        return high
    return value


# -- search --------------------------------------------------------------------------------------------


def search_response(
    args: SearchRequest,
    result: PipelineResult,
    *,
    limits: Limits,
    servable: Collection[str],
    semantic: SemanticState,
    semantic_error: str | None,
    summary: IndexSummary,
    extensions: Collection[str],
    holds_japanese: Callable[[], bool] | None = None,
    empty_index: str | None = None,
    unmatched: str | None = None,
) -> SearchResponse:
    """The response for one search: hits, legs, and a note (with its code) for everything not shown.

    Not yet fitted to the response cap: whoever sends it fits it once, measured as it is sent
    (``response_cap.fit_search``), since only the sender knows what goes beside it.

    ``holds_japanese`` answers whether the knowledge base has Japanese text, so an English query's
    weak hits may mean the answer is a Japanese page (an English-only knowledge base gets no such
    hint). It is asked only when that hint could be given; ``None`` takes the answer as yes.
    ``empty_index``: why an empty index is empty, where the caller knows better than a folder scan
    could (a server without the files: nothing was indexed under that name). ``unmatched``: that the
    filters themselves pass no document, naming them (``search.filtering.unmatched_note``)."""
    notes = list(args.notes)
    codes = ["clamped"] * len(notes)  # note_codes: one per note, so a surface can word it its own way
    truncated = result.more_available
    if result.compiled.dropped:
        truncated = True
        notes.append(
            f"the query had more than {limits.max_query_terms} searchable terms; these were not used: "
            + bounded(" ".join(result.compiled.dropped[:20]))
            + " — shorten the query"
        )
        codes.append("terms_dropped")
    for i, compiled in enumerate(result.compiled_also, 1):
        if compiled.dropped:
            truncated = True
            notes.append(
                f"alternative phrasing {i} (also) had more than {limits.max_query_terms} searchable terms; "
                "these were not used: " + bounded(" ".join(compiled.dropped[:20])) + " — shorten it"
            )
            codes.append("terms_dropped")
    if result.absent_names:
        notes.append(  # the answer's low_confidence says the knowledge base may not cover it
            "no note mentions "
            + bounded(", ".join(result.absent_names[:10]))
            + ": the hits match the rest of the query"
        )
        codes.append("absent_names")
    if result.low_confidence and result.hits and result.doubt:
        notes.append(f"low confidence: {result.doubt}")
        codes.append("low_confidence")
    if (
        result.low_confidence
        and result.hits
        and not args.also
        and not result.absent_names  # an absent name, not the language, is what the hits miss
        and (is_japanese(args.query) or holds_japanese is None or holds_japanese())
    ):
        notes.append(other_language_hint(args.query))
        codes.append("try_other_language")
    if result.more_available:
        notes.append("more hits exist: raise limit or add filters")
        codes.append("more_hits")
    hits = [_hit(h, servable, args.explain) for h in result.hits]
    shown, note, code = semantic_for_search(semantic, semantic_error, summary)
    if note is not None and code is not None and not args.listing:  # a listing asks no leg
        notes.append(note)
        codes.append(code)
    if result.rerank_note is not None:  # the fused order stands (docs/decisions/0038)
        notes.append(result.rerank_note)
        codes.append("rerank_skipped")
    has_terms = any(c.terms for c in (result.compiled, *result.compiled_also))
    legs = Legs(lexical="none" if args.listing else "ok" if has_terms else "no_terms", semantic=shown.value)
    if not hits:
        no_terms = not has_terms and not args.listing
        if empty_index is not None and summary.documents == 0 and not summary.indexing:
            notes.append(empty_index)
        elif unmatched is not None and summary.documents:
            notes.append(unmatched)
        else:
            filters = result.filters if result.filters is not None else args.filters
            notes.append(empty_explanation(summary, no_terms, filters, extensions))
        codes.append("empty")
    return SearchResponse(
        query=bounded(args.query), also=[bounded(a) for a in args.also], hits=hits, legs=legs, truncated=truncated, notes=notes,
        note_codes=codes, index=summary, low_confidence=result.low_confidence,
    )  # fmt: skip


def _hit(h: RankedHit, servable: Collection[str], explain: bool) -> SearchHit:
    c, f = h.chunk, h.fused
    return SearchHit(
        chunk_id=c.chunk_id, path=c.path, heading_path=list(h.heading_path),
        score=round(f.score, 6), snippet=h.snippet.text, highlights=[list(span) for span in h.snippet.highlights],
        start=c.start, end=c.end, line_start=c.line_start, line_end=c.line_end, tags=list(c.tags), date=c.date,
        uri=document_uri(c.path) if c.path in servable else None,
        explain=Explanation(
            lexical_rank=f.lexical_rank, lexical_score=f.lexical_score, dense_rank=f.dense_rank,
            dense_similarity=f.dense_similarity, phrasing=f.phrasing,
            agreement=round(f.agreement, 6), bridge=round(f.bridge, 6),
            # reranked: the chunk's own fused score, while ``score`` is that of the place it took
            fused_score=f.score if h.fused_score is None else h.fused_score,
            rerank_score=None if h.rerank_score is None else round(h.rerank_score, 6),
            learned=dict(f.learned) if f.learned else None,
        ) if explain else None,
    )  # fmt: skip


def other_language_hint(query: str) -> str:
    """What to try when the best hits are weak (``low_confidence`` says so) and the search had no
    alternative phrasing.

    The answer is often a page in the knowledge base's other language: the query's words match
    nothing there, and the default model ranks such a page first for a fifth to two thirds of
    cross-language questions, against 0.7 to 1.0 when the question in that language is sent in
    ``also`` (held-out development sets, README).
    """
    other = "English" if is_japanese(query) else "Japanese"
    return (
        f"if the answer may be in {other}, search again with also=[the question in {other}, a keyword form]"
    )


def semantic_for_search(
    state: SemanticState, error: str | None, summary: IndexSummary
) -> tuple[SemanticState, str | None, str | None]:
    """(state shown, note, note code) of the semantic leg for one search.

    While the background pass embeds, ``ok`` would claim a coverage the dense leg lacks, so a
    loaded model that does not cover every chunk yet is shown as ``partial``, with the counts.
    """
    if state is SemanticState.LOADING:
        return (
            state,
            "the embedding model is still loading: these results are lexical only",
            "semantic_loading",
        )
    if state is SemanticState.UNAVAILABLE:
        note = f"semantic search is unavailable, results are lexical only: {error}"
        return state, note, "semantic_unavailable"
    if state is SemanticState.PARTIAL:  # the leg says so itself only while a first vector index is built
        note = "the vector index is being built (index_status says how far): these results are lexical only"
        return state, note, "semantic_partial"
    if state is SemanticState.OK and summary.embedded is not None and summary.embedded < summary.chunks:
        note = (
            f"semantic search covers {summary.embedded} of {counted(summary.chunks, 'chunk')} so far"
            + (" (embedding is still running)" if summary.indexing else "")
            + ": hits from the rest were found by their words only"
        )
        return SemanticState.PARTIAL, note, "semantic_partial"
    return state, None, None


def empty_explanation(
    summary: IndexSummary, no_terms: bool, filters: SearchFilters, extensions: Collection[str]
) -> str:
    """Why a search found nothing (T4): "nothing matched" and "nothing is indexed yet" need different actions."""
    if summary.documents == 0:
        if summary.indexing:
            return "nothing is indexed yet: the first indexing pass is still running — try again in a moment"
        exts = ", ".join(sorted(extensions))
        return (
            f"the index is empty: no indexable files ({exts}) were found under the knowledge-base root; "
            "see index_status for skipped files"
        )
    scope = f" within the filters ({bounded(filters.describe())})" if filters.narrows else ""
    base = (
        f"no chunk matched{scope}; the index holds {counted(summary.documents, 'document')} and "
        f"{counted(summary.chunks, 'chunk')}"
        + (" (indexing is still running, results may be incomplete)" if summary.indexing else "")
    )
    if no_terms:
        return base + ". The query has no searchable words (only punctuation or operators) — use words"
    return base + ". Try other words, a synonym, the other language, or drop filters"


# -- fetch ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchArgs:
    """The chunk ids to fetch (de-duplicated, capped) and the neighbours, with the notes that left."""

    ids: tuple[str, ...]
    context: int
    truncated: bool
    notes: tuple[str, ...]


def fetch_args(limits: Limits, chunk_ids: Iterable[str], context: int | None) -> FetchArgs:
    notes: list[str] = []
    ctx = clamp("context", context, limits.default_context, 0, limits.max_context, notes)
    ids = list(dict.fromkeys(i.strip() for i in chunk_ids if i.strip()))
    truncated = len(ids) > limits.max_chunk_ids
    if truncated:
        notes.append(
            f"{counted(len(ids), 'chunk id')} were given; only the first {limits.max_chunk_ids} were fetched"
        )
        ids = ids[: limits.max_chunk_ids]
    return FetchArgs(tuple(ids), ctx, truncated, tuple(notes))


@dataclass(frozen=True)
class FoundRun:
    """One joined run of chunks and the requested ids it contains, in the order they were asked for."""

    run: JoinedText
    requested: list[str] = field(default_factory=list)


def fetch_response(
    args: FetchArgs, runs: Sequence[FoundRun], missing: Sequence[MissingChunk], *, servable: Collection[str],
    max_fetch_chars: int,
) -> FetchResponse:  # fmt: skip
    """Passages within the per-fetch character budget; a cut passage says where to read on (T3, D7)."""
    notes = list(args.notes)
    truncated = args.truncated
    passages: list[Passage] = []
    budget = max_fetch_chars
    for found in runs:
        run = found.run
        text, cut = run.text, False
        if len(text) > budget:
            text, cut = text[: max(budget, 0)], True
        budget -= len(text)
        head = run.chunks[0]
        passages.append(
            Passage(
                path=head.path, heading_path=list(head.heading_path),
                requested=found.requested, chunk_ids=[c.chunk_id for c in run.chunks], start=run.start,
                end=run.start + len(text) if cut else run.end, line_start=head.line_start,
                line_end=max(c.line_end for c in run.chunks), text=text, truncated=cut,
                uri=document_uri(head.path) if head.path in servable else None,
            )
        )  # fmt: skip
        if cut:
            truncated = True
            why = f"at {counted(max_fetch_chars, 'character')} per fetch"
            notes.append(passage_cut_note(head.path, why, run.start + len(text)))
    if missing:
        notes.append("some chunk ids are no longer valid; run search again to get current ids")
    return FetchResponse(passages=passages, missing=list(missing), truncated=truncated, notes=notes)


def stale_chunk(
    chunk_id: str, path: str | None, when: float | None, *, document_exists: bool
) -> MissingChunk:
    """A chunk id that resolves to nothing (T5): stale if its document changed, unknown otherwise."""
    if path is not None and when is not None:
        what = "was edited" if document_exists else "was removed or renamed"
        return MissingChunk(
            chunk_id=bounded(chunk_id), status="stale", path=path,
            message=f"stale id: {path} {what} at {iso(when)} and its chunks were replaced; "
            "search again for current ids",
        )  # fmt: skip
    return MissingChunk(
        chunk_id=bounded(chunk_id), status="unknown",
        message="unknown id: no chunk with this id exists in the index (ids come from search results); "
        "search again",
    )  # fmt: skip


# -- documents and resources -----------------------------------------------------------------------------


def document_response(
    doc: LoadedDocument, *, offset: int, max_chars: int | None, limits: Limits, indexed: bool,
    dated: DocumentDate | None = None,
) -> DocumentResponse:  # fmt: skip
    """A window of a document; a window that stops early says where the rest starts (D7)."""
    notes: list[str] = []
    n = clamp("max_chars", max_chars, limits.default_document_chars, 1, limits.max_document_chars, notes)
    total = len(doc.text)
    if offset < 0:
        notes.append(f"offset={offset} was raised to 0")
        offset = 0
    if offset > total:
        notes.append(f"offset={offset} is past the end of the document ({counted(total, 'character')})")
        offset = total
    text = doc.text[offset : offset + n]
    end = offset + len(text)
    truncated = end < total
    if truncated:
        notes.append(
            f"returned characters {offset}–{end} of {total}; call get_document again with offset={end} "
            "for the rest"
        )
    if not indexed:
        notes.append("this file is not in the search index (excluded, skipped or not yet indexed)")
    return DocumentResponse(
        path=doc.path, media_type=doc.media_type, text=text, offset=offset, returned_chars=len(text),
        total_chars=total, truncated=truncated, next_offset=end if truncated else None, indexed=indexed,
        date=dated.day if dated else None, date_source=dated.source if dated else None, notes=notes,
    )  # fmt: skip


def resource_text(rel: str, text: str, cap: int) -> str:
    """A resource's text, cut at ``cap`` with a delimited note at the end saying where the rest is (D7)."""
    if len(text) <= cap:
        return text
    return text[:cap] + (
        "\n\n---\n[kbseek: this resource was truncated at character "
        f"{cap} of {len(text)}. Call get_document(path={rel!r}, offset={cap}) for the rest.]\n"
    )


# -- topics --------------------------------------------------------------------------------------------


def topics_response(
    titles_by_prefix: dict[str, list[str]], *, limits: Limits, summary: IndexSummary
) -> TopicsResponse:
    """The topic overview within ``max_topics`` and ``max_titles_per_topic``, saying what was left out;
    each topic's titles are kept in the order given (the catalog's: newest first)."""
    notes: list[str] = []
    topics = [
        Topic(
            prefix=prefix,
            documents=len(titles),
            titles=titles[: limits.max_titles_per_topic],
            more_titles=max(0, len(titles) - limits.max_titles_per_topic),
        )
        for prefix, titles in sorted(titles_by_prefix.items())
    ]
    truncated = len(topics) > limits.max_topics
    if truncated:
        notes.append(f"{counted(len(topics), 'topic')} exist; only the first {limits.max_topics} are listed")
        topics = topics[: limits.max_topics]
    if any(t.more_titles for t in topics):
        notes.append(
            f"each topic lists at most {counted(limits.max_titles_per_topic, 'title')}; "
            "search with path_prefix to see the rest"
        )
    if not topics:
        notes.append("nothing is indexed yet" + (" (indexing is running)" if summary.indexing else ""))
    return TopicsResponse(topics=topics, truncated=truncated, notes=notes, index=summary)


def topic_body(prefix: str, documents: Sequence[tuple[str, str, str | None]]) -> str:
    """A topic resource: a Markdown list of its documents, ``(title, path, day)``, with their uris
    and dates (D2)."""
    lines = [f"# Topic {prefix or '(root)'}", "", f"{counted(len(documents), 'document')}.", ""]
    lines.extend(
        f"- [{title}]({document_uri(path)}) — `{path}`" + (f" — {day}" if day else "")
        for title, path, day in documents
    )
    return "\n".join(lines) + "\n"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")
