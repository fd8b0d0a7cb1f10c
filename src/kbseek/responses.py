"""The shapes of what kbseek answers, shared by every surface.

They are pydantic models so the MCP surface can advertise them as output
schemas and the CLI can print them as JSON; they carry no behaviour. Every
response that can be cut or clamped has ``truncated`` and ``notes`` (T3), so a
reader always knows whether it saw everything.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class IndexSummary(BaseModel):
    documents: int = Field(description="Documents in the index.")
    chunks: int = Field(description="Chunks in the index.")
    indexing: bool = Field(description="True while an indexing pass is running; results may be incomplete.")
    embedded: int | None = Field(
        default=None,
        description="Chunks semantic search covers now (they have a vector); fewer than chunks while "
        "embedding runs. Null when no embedding model is loaded.",
    )


class Legs(BaseModel):
    lexical: str = Field(description="'ok', or 'no_terms' when the query has no searchable words.")
    semantic: str = Field(
        description="'ok', 'partial' (only index.embedded of index.chunks have a vector yet: hits from the "
        "rest were found by their words only), 'loading', 'off' or 'unavailable' (see notes)."
    )


class Explanation(BaseModel):
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_similarity: float | None = None
    fused_score: float
    phrasing: int = Field(
        default=0,
        description="Which phrasing gave this hit its score, and so its ranks: 0 the query, 1 the first "
        "of also, and so on.",
    )
    agreement: float = Field(
        default=0.0,
        description="The part of fused_score the other phrasings added because they found this hit too.",
    )
    bridge: float = Field(
        default=0.0,
        description="The part of fused_score the query's words in the other language added (the "
        "bilingual lexicon's translations the index holds).",
    )


class SearchHit(BaseModel):
    chunk_id: str = Field(description="Pass to fetch() to read the whole passage.")
    path: str = Field(description="Document path relative to the knowledge-base root; cite it.")
    title: str
    heading_path: list[str] = Field(
        description="Document title, then the section headings down to the section the snippet shows; "
        "cite it with the path."
    )
    score: float = Field(description="Higher is better; comparable only within one response.")
    snippet: str = Field(
        description="A window of the chunk centred on the query's matches, as display text: Markdown "
        "markup (anchors, HTML tags and comments, link URLs) left out; fetch() returns the text as written."
    )
    highlights: list[list[int]] = Field(
        default_factory=list,
        description="[start, end) character spans of the snippet that match the query, to emphasise.",
    )
    start: int = Field(description="Character offset where the chunk starts in the document.")
    end: int = Field(description="Character offset where the chunk ends in the document.")
    line_start: int
    line_end: int
    tags: list[str] = Field(default_factory=list)
    uri: str | None = Field(
        default=None, description="kb://doc/ resource uri, when the document is servable."
    )
    explain: Explanation | None = None


class SearchResponse(BaseModel):
    query: str
    also: list[str] = Field(
        default_factory=list,
        description="The alternative phrasings searched with the query (blank and repeated ones left out, "
        "capped); explain.phrasing 1 is the first.",
    )
    hits: list[SearchHit]
    legs: Legs
    low_confidence: bool = Field(
        default=False, description="True when even the best hit is a weak match: the KB may not cover this."
    )
    truncated: bool = Field(description="True when results or snippets were cut to fit the caps.")
    notes: list[str] = Field(description="What was clamped or cut, and why a result is empty.")
    note_codes: list[str] = Field(
        default_factory=list,
        description="One machine-readable kind per entry of notes, in the same order: 'clamped', "
        "'terms_dropped', 'absent_names', 'try_other_language', 'more_hits', 'semantic_loading', 'semantic_partial', "
        "'semantic_unavailable', "
        "'empty', 'cut_to_fit'. A surface that words notes its own way (the web page) maps these.",
    )
    index: IndexSummary


class Passage(BaseModel):
    path: str
    title: str
    heading_path: list[str]
    requested: list[str] = Field(description="The chunk ids you asked for that this passage contains.")
    chunk_ids: list[str] = Field(description="Every chunk joined into this passage, in order.")
    start: int
    end: int
    line_start: int
    line_end: int
    text: str
    truncated: bool
    uri: str | None = None


class MissingChunk(BaseModel):
    chunk_id: str
    status: str = Field(description="'stale' (the document changed or was removed) or 'unknown'.")
    path: str | None = Field(default=None, description="For a stale id: the document it came from.")
    message: str


class FetchResponse(BaseModel):
    passages: list[Passage]
    missing: list[MissingChunk]
    truncated: bool
    notes: list[str]


class DocumentResponse(BaseModel):
    path: str
    media_type: str
    text: str
    offset: int
    returned_chars: int
    total_chars: int
    truncated: bool = Field(description="True when text stops before the end of the document.")
    next_offset: int | None = Field(description="Pass as offset to read on, when truncated.")
    indexed: bool = Field(description="Whether the document is in the search index.")
    notes: list[str]


class Topic(BaseModel):
    prefix: str = Field(description="Path prefix; pass it to search(path_prefix=...).")
    documents: int
    titles: list[str]
    more_titles: int = Field(description="Titles not listed here.")
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

    phase: str = Field(
        description="'scan' (listing files), 'parse' (reading, parsing and chunking changed files) "
        "or 'embed' (computing vectors for new chunks)."
    )
    done: int = Field(description="Items finished in this phase.")
    total: int | None = Field(description="Items this phase handles; null while the scan is still counting.")
    unit: str = Field(description="What done and total count: 'files' or 'chunks'.")
    rate: float | None = Field(description="Items per second in this phase so far.")
    eta: float | None = Field(description="Seconds this phase still needs at that rate.")


class StatusResponse(BaseModel):
    root: str | None = Field(
        description="The folder of notes; null on a server that reads a shared index without the files."
    )
    index_path: str
    documents: int
    chunks: int
    indexing: bool
    progress: IndexProgress | None = Field(default=None, description="How far the running pass is.")
    last_index_at: str | None
    last_pass_seconds: float | None
    semantic: str = Field(
        description="'ok' (every chunk has a vector of the configured model), 'partial' (embedded of "
        "chunks have one so far), 'loading' (this server is loading the model), 'off', or 'unavailable' "
        "(see notes)."
    )
    embedded: int | None = Field(
        default=None,
        description="Chunks semantic search covers now, out of chunks; null when semantic search is off "
        "or unavailable.",
    )
    watcher: str = Field(
        default="off", description="'running', 'starting', 'off', or 'unavailable: <why>' (stat scan then)."
    )
    freshness: str = Field(
        default="stat scan before each call",
        description="How edits reach the index: 'watcher, and a full stat scan every N s' (file events; "
        "the periodic scan runs in the background, never before a call), 'stat scan before each call, "
        "at most every N s' (the watcher is off, starting or unavailable), or 'none: …' (a process that "
        "only reads the index).",
    )
    model: str | None
    parsers: list[str]
    skipped: list[SkippedFile]
    skipped_total: int
    warnings: list[SkippedFile]
    last_error: str | None = None
    notes: list[str]


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
