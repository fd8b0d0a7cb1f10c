"""The shapes of what kbseek answers, shared by every surface.

They are pydantic models so the MCP surface can advertise them as output
schemas and the CLI can print them as JSON; they carry no behaviour. Every
response that can be cut or clamped has ``truncated`` and ``notes`` (T3), so a
reader always knows whether it saw everything.

Field descriptions are the output schemas an agent reads in its tool list, so they are
short and leave out what a field's name says (decision 0035).

:class:`IndexReport`, what an indexing pass did, is defined beside the indexer that fills it in
and shown here with the other answers.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    computed_field,
    model_serializer,
)
from pydantic.json_schema import SkipJsonSchema

from kbseek.ingest.indexer import IndexReport as IndexReport


class IndexSummary(BaseModel):
    documents: int
    chunks: int
    indexing: bool
    embedded: int | None = None
    """Chunks with a vector; null without a model."""


class Legs(BaseModel):
    lexical: str
    """``ok``, ``no_terms`` (the query has no searchable words) or ``none`` (no query: a listing)."""
    semantic: str  # the states index_status describes


class Explanation(BaseModel):
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_similarity: float | None = None
    fused_score: float
    phrasing: int = 0
    """The phrasing that scored the hit: 0 the query, 1 the first of ``also``, and so on."""
    agreement: float = 0.0
    """The part of ``fused_score`` the other phrasings added because they found the hit too."""
    bridge: float = 0.0
    """The part of ``fused_score`` the query's words in the other language added (decision 0027)."""
    rerank_score: float | None = None
    """The reranker's score, when ``[rerank]`` ordered the hit: the hit's place follows it, and its
    ``score`` is the fused score of that place (decision 0038)."""
    learned: dict[str, float] | None = None
    """With the learned ranking (``fusion = "learned"``): the features that moved the hit's score
    most, each with its part of the model's sum; ``fused_score`` is then the model's (decision 0044)."""


WRITING_FIELDS = ("hash", "last_writes")
"""Fields an answer carries only on a server that lets agents write (docs/decisions/0058)."""


class _SaidWhenWriting(BaseModel):
    """An answer that carries a field of :data:`WRITING_FIELDS` when the server lets agents write,
    and is otherwise exactly what it was before writing existed: such a field left ``None`` is left
    out wherever the answer is serialised (MCP, ``/api``, ``--json``), and out of its schema."""

    @model_serializer(mode="wrap")
    def _only_when_writing(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        # Unannotated on purpose: an annotated return type would replace the model's serialisation
        # schema (the tools' output schemas) with that type's.
        data = handler(self)
        if isinstance(data, dict):
            for name in WRITING_FIELDS:
                if name in data and data[name] is None:
                    del data[name]
        return data


class SearchHit(_SaidWhenWriting):
    chunk_id: str
    """Pass it to fetch."""
    path: str
    heading_path: list[str]
    """The document title, then the headings down to the section the snippet shows."""
    score: float = Field(description="Compare within one answer.")
    snippet: str
    """Display text (markup left out) centred on the matches; fetch returns the text as written."""
    highlights: list[list[int]] = Field(default_factory=list, description="[start, end) of snippet.")
    start: int
    """The chunk's character offsets in the document, ``start`` and ``end``."""
    end: int
    line_start: int
    line_end: int
    tags: list[str] = Field(default_factory=list)
    date: str | None = None
    """The document's date, YYYY-MM-DD (``kbseek.dates``: front matter, properties, else mtime)."""
    uri: str | None = None
    """The document's ``kb://doc/`` uri, when it is servable (D4)."""
    explain: Annotated[Explanation | None, WithJsonSchema({"type": ["object", "null"]})] = None
    """Each leg's rank and score, with ``explain=true``. Its schema says only "an object": its
    fields are diagnostics, spelled out in the text, and not worth their room in every tool list."""
    kb: SkipJsonSchema[str | None] = None
    """The collection the hit is from, when the server holds several (``kbseek.library``). Out of
    the schema: a one-KB server never sends it, and its tool list stays as it was; the several
    collections' ``search`` declares it (``server/library_tools.py``)."""
    hash: SkipJsonSchema[str | None] = None
    """The document's content hash, to send back as ``expected_hash`` when editing it; only on a
    server that lets agents write (docs/decisions/0058)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def title(self) -> str:
        """The document's title: the first entry of ``heading_path``, so it is stored once. The MCP
        answer leaves it out (the heading path says it); the CLI's JSON and the web page show it."""
        return self.heading_path[0] if self.heading_path else ""


class SearchResponse(BaseModel):
    query: str
    also: list[str] = Field(default_factory=list)
    """The alternative phrasings searched with the query (blank and repeated ones left out, capped);
    ``explain.phrasing`` 1 is the first."""
    hits: list[SearchHit]
    legs: Legs
    low_confidence: bool = False
    """Even the best hit is weak: the knowledge base may not cover this."""
    truncated: bool
    notes: list[str]
    """What was clamped or cut, and why a result is empty."""
    note_codes: list[str] = Field(default_factory=list)
    """A code per note, in order, so a surface can word each its own way (the README lists them)."""
    index: IndexSummary


class Passage(_SaidWhenWriting):
    path: str
    heading_path: list[str]
    requested: list[str]
    """The chunk ids asked for that the passage holds."""
    chunk_ids: list[str]
    """Every chunk joined into the passage, in order."""
    start: int
    end: int
    line_start: int
    line_end: int
    text: str
    truncated: bool
    uri: str | None = None
    hash: SkipJsonSchema[str | None] = None
    """The document's content hash, to send back as ``expected_hash`` when editing it; only on a
    server that lets agents write (docs/decisions/0058)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def title(self) -> str:
        """The document's title, the first entry of ``heading_path``, as on a search hit."""
        return self.heading_path[0] if self.heading_path else ""


class MissingChunk(BaseModel):
    chunk_id: str
    status: str = Field(description="'stale' or 'unknown'.")
    path: str | None = None
    """For a stale id, the document it came from."""
    message: str


class FetchResponse(BaseModel):
    passages: list[Passage]
    missing: list[MissingChunk]
    truncated: bool
    notes: list[str]


class DocumentResponse(_SaidWhenWriting):
    path: str
    media_type: str
    text: str
    offset: int
    returned_chars: int
    total_chars: int
    truncated: bool
    next_offset: int | None
    """The offset to read on from, when ``truncated``."""
    indexed: bool
    date: str | None = None
    """The document's date (YYYY-MM-DD) as the filters see it, when it is indexed."""
    date_source: str | None = None
    """Where the date came from: ``frontmatter:<field>``, ``properties:<field>`` or ``mtime``."""
    notes: list[str]
    hash: SkipJsonSchema[str | None] = None
    """The document's content hash, to send back as ``expected_hash`` when editing it; only on a
    server that lets agents write (docs/decisions/0058)."""


class Topic(BaseModel):
    prefix: str
    """Pass it to search(path_prefix=...)."""
    documents: int
    titles: list[str]
    """Newest first, each with its document's date: ``Title (2026-03-01)``."""
    more_titles: int
    uri: str | None = None


class TopicsResponse(BaseModel):
    topics: list[Topic]
    truncated: bool
    notes: list[str]
    index: IndexSummary


class SkippedFile(BaseModel):
    path: str
    reason: str


class IndexProgress(BaseModel):
    """How far the running pass is, in the phase it is in.

    A pass runs ``scan`` → ``parse`` → ``embed``; a phase with nothing to do is skipped. ``rate``
    and ``eta`` are measured within the phase (files/s while parsing, chunks/s while embedding),
    as of the latest count; both are null until something is done in measurable time.
    """

    phase: str = Field(description="scan, parse, embed or graph.")
    done: int
    total: int | None
    """Null while the scan is still counting."""
    unit: str
    """``files`` or ``chunks``."""
    rate: float | None
    """Items per second in this phase so far."""
    eta: float | None = Field(description="Seconds.")


class StatusResponse(_SaidWhenWriting):
    root: str | None
    """Null on a server that reads a shared index without the files."""
    index_path: str
    documents: int
    chunks: int
    indexing: bool
    progress: IndexProgress | None = None
    """How far the running pass is, or the approximate vector index being built after it (phase
    ``graph``); its shape is in the tool's output schema (decision 0008)."""
    last_index_at: str | None
    last_pass_seconds: float | None
    semantic: str
    """``ok``, ``partial``, ``loading``, ``off`` or ``unavailable``."""
    """'partial': only ``embedded`` of ``chunks`` have a vector so far."""
    embedded: int | None = None
    """Chunks with a vector; null when semantic search is off or unavailable."""
    watcher: str = "off"
    """``running``, ``starting``, ``off`` or ``unavailable: …``."""
    freshness: str = "stat scan before each call"
    """How edits reach the index: the watcher with a periodic stat scan in the background, a stat scan
    before each call (the watcher is off, starting or unavailable), or 'none: …' (a reader only)."""
    model: str | None
    parsers: list[str]
    skipped: list[SkippedFile]
    skipped_total: int
    warnings: list[SkippedFile]
    last_error: str | None = None
    fields: Annotated[dict[str, dict[str, int]], WithJsonSchema({"type": "object"})] = Field(
        default_factory=dict, description="For where: {field: {value: documents}}."
    )
    """Front-matter fields, those most documents have first, each with its commonest values (as
    ``where`` compares them: folded) and how many documents hold each. Its schema says only "an
    object", as ``explain``'s: the tool list is bounded, and the shape is in the text and here."""
    date_sources: Annotated[dict[str, int], WithJsonSchema({"type": "object"})] = Field(default_factory=dict)
    """Documents per date source: ``frontmatter:<field>``, ``properties:<field>``, ``mtime``."""
    notes: list[str]
    last_writes: SkipJsonSchema[list[dict[str, object]] | None] = None
    """The last writes agents made (newest first: time, operation, path, client, hashes), on a server
    that lets them write."""


class RecentDocument(BaseModel):
    path: str
    title: str
    date: str | None = Field(description="The frontmatter date as written, if any.")
    indexed_at: str = Field(description="When this content was last indexed (ISO 8601, UTC).")
    tags: list[str] = Field(default_factory=list)
    uri: str | None = None


class RecentDocuments(BaseModel):
    """Servable documents new or changed since a moment, by two separate criteria."""

    since_date: str = Field(
        description="YYYY-MM-DD; by_date holds documents whose frontmatter date is on or after it."
    )
    since: str = Field(description="ISO 8601 UTC; by_index_time holds documents indexed at or after it.")
    by_date: list[RecentDocument] = Field(description="Newest frontmatter date first.")
    by_date_total: int = Field(description="Matches before the cap; more than len(by_date) when cut.")
    by_index_time: list[RecentDocument] = Field(description="Most recently indexed first.")
    by_index_time_total: int
    unparsed_dates: int = Field(
        description="Documents whose frontmatter date does not start with YYYY-MM-DD."
    )
    truncated: bool
    index: IndexSummary


class RelatedHit(BaseModel):
    path: str
    title: str
    score: float
    """The best cosine of a passage of it with one of the subject's, plus 0.5 per link direction."""
    why: list[str]
    """Why it is related: ``links to``, ``linked from``, ``similar: 0.71``."""


class RelatedResponse(BaseModel):
    path: str
    hits: list[RelatedHit]
    backlinks: list[str]
    """Paths of the documents that link to this one."""
    truncated: bool
    notes: list[str]
    """What was capped, and whether it is by links only (no model)."""


class NoteChange(BaseModel):
    """What a write did to a note, or with ``dry_run`` would do (docs/decisions/0058)."""

    path: str
    operation: str
    """``create``, ``replace``, ``append``, ``prepend``, ``replace_section``, ``insert_before_section``,
    ``insert_after_section``, ``find_replace``, ``set_frontmatter``, ``move``, ``delete`` or ``restore``."""
    hash: str | None
    """The note's hash now (send it with the next edit); null once deleted, or for a dry run the hash
    it would have."""
    previous_hash: str | None
    """Its hash before; null for a note created."""
    diff: str
    """The unified diff of the change."""
    diff_truncated: bool = False
    dry_run: bool = False
    """True: nothing was written; the diff and hash are what the write would do."""
    new_path: str | None = None
    """Where a moved or restored note is now."""
    trash: str | None = None
    """A deleted note's trash entry: ``kbseek notes restore ENTRY`` brings it back."""
    links_rewritten: list[str] = Field(default_factory=list)
    """Notes whose links to a moved note were rewritten, each by a guarded edit of its own."""
    searchable: bool = False
    """Whether the index already holds the change (search finds it now)."""
    notes: list[str] = Field(default_factory=list)
