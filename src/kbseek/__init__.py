"""kbseek: semantic search over a Markdown knowledge base, served to AI agents over MCP.

As a library::

    from kbseek import KnowledgeBase

    with KnowledgeBase("~/notes") as kb:
        kb.index()
        for hit in kb.search("how do I roll back a release").hits:
            print(hit.path, hit.snippet)

``help(kbseek.KnowledgeBase)`` documents the rest.

The names in ``__all__`` are the stable API: everything a caller receives or may catch, from
:class:`KnowledgeBase` and :class:`Library` to the answers (pydantic models) and every
:class:`KbError`. Import them from ``kbseek``; the modules below it are internal and may change.
"""

from __future__ import annotations

from kbseek.config import Limits, Settings
from kbseek.errors import (
    BadResourceUri,
    ConfigError,
    DocumentNotFound,
    DocumentRefused,
    DocumentTooLarge,
    EmbedderUnavailable,
    IndexIncompatible,
    IndexLocked,
    IndexReadOnly,
    InvalidArgument,
    KbBug,
    KbError,
    LinkRefused,
    NotARegularFile,
    NoteConflict,
    NoteExists,
    NoteNotFound,
    NoteTooLarge,
    NotServable,
    NotText,
    PathOutsideRoot,
    ServiceError,
    StoreUnavailable,
    TopicNotFound,
    UnknownField,
    UnsupportedExtension,
    WriteNotAllowed,
    WriteRefused,
    WritesReadOnly,
    WrittenElsewhere,
)
from kbseek.filters import Filters
from kbseek.kb import KnowledgeBase
from kbseek.library import Library
from kbseek.progress import ProgressSnapshot
from kbseek.responses import (
    DocumentResponse,
    Explanation,
    FetchResponse,
    IndexProgress,
    IndexReport,
    IndexSummary,
    Legs,
    MissingChunk,
    NoteChange,
    Passage,
    RecentDocument,
    RecentDocuments,
    RelatedHit,
    RelatedResponse,
    SearchHit,
    SearchResponse,
    SkippedFile,
    StatusResponse,
    Topic,
    TopicsResponse,
)
from kbseek.search_query import SearchQuery

__version__ = "0.1.0"

__all__ = [
    "BadResourceUri",
    "ConfigError",
    "DocumentNotFound",
    "DocumentRefused",
    "DocumentResponse",
    "DocumentTooLarge",
    "EmbedderUnavailable",
    "Explanation",
    "FetchResponse",
    "Filters",
    "IndexIncompatible",
    "IndexLocked",
    "IndexProgress",
    "IndexReadOnly",
    "IndexReport",
    "IndexSummary",
    "InvalidArgument",
    "KbBug",
    "KbError",
    "KnowledgeBase",
    "Legs",
    "Library",
    "Limits",
    "LinkRefused",
    "MissingChunk",
    "NotARegularFile",
    "NotServable",
    "NotText",
    "NoteChange",
    "NoteConflict",
    "NoteExists",
    "NoteNotFound",
    "NoteTooLarge",
    "Passage",
    "PathOutsideRoot",
    "ProgressSnapshot",
    "RecentDocument",
    "RecentDocuments",
    "RelatedHit",
    "RelatedResponse",
    "SearchHit",
    "SearchQuery",
    "SearchResponse",
    "ServiceError",
    "Settings",
    "SkippedFile",
    "StatusResponse",
    "StoreUnavailable",
    "Topic",
    "TopicNotFound",
    "TopicsResponse",
    "UnknownField",
    "UnsupportedExtension",
    "WriteNotAllowed",
    "WriteRefused",
    "WritesReadOnly",
    "WrittenElsewhere",
]
