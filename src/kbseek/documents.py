"""Value types that flow through the pipeline: files → documents → chunks → hits.

They are frozen dataclasses so a stage can hand them on without the next
stage being able to change what the previous one measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

HEADING_SEPARATOR = " › "


@dataclass(frozen=True)
class SectionStart:
    """Where a section merged into a chunk begins, so a hit inside it can name its own heading."""

    offset: int
    """Characters from the start of the chunk's text to the section's heading."""
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage of a document.

    ``start``/``end`` are absolute character offsets into the document text
    (the whole file text, frontmatter included), so ``text == source[start:end]``
    always holds and neighbouring chunks can be joined without string matching.
    ``chunk_id`` is derived from the document path and the chunk content, so an
    id can never silently point at different text after an edit.
    """

    chunk_id: str
    ordinal: int
    start: int
    end: int
    heading_path: tuple[str, ...]
    text: str
    content_hash: str
    line_start: int
    line_end: int
    sections: tuple[SectionStart, ...] = ()
    """Sections that begin inside the chunk after its start (small sections merged into one chunk),
    in order; ``heading_path`` is the first section's."""

    @property
    def heading(self) -> str:
        return HEADING_SEPARATOR.join(self.heading_path)


class Link(NamedTuple):
    """A link written in a document, as its parser read it; the store resolves it to a document.

    ``kind`` ``"path"``: a relative (or root-absolute) Markdown link, already resolved to a
    root-relative path with its anchor dropped. ``"wiki"``: a ``[[wiki link]]``'s name as written,
    resolved by file name or title when read (``kbseek.store.links``), since the note it names
    may be indexed later, renamed, or shadowed by another of the same name.
    """

    kind: str
    target: str


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser makes of one file: its served text, metadata and chunks."""

    text: str
    title: str
    frontmatter: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    date: str | None = None
    chunks: tuple[Chunk, ...] = ()
    warnings: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    """The document's links to other notes, in order of first appearance, each once."""
