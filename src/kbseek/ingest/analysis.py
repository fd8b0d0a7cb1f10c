"""A parsed file becomes what the store keeps: the document's facts and each chunk's analyzed lexical text.

The analysis happens here, on the ingest side, and not in the store, for two reasons. The query is
analyzed by search with the same analyzer (T7), so the index side belongs with the
code that owns the pipeline, not with whichever backend stores the result; and it runs before the
write transaction opens, so a slow tokenizer never holds the index's write lock.

The lexical index holds *display* text (markup removed: a URL or an HTML attribute is noise, and the
snippet's highlights are found in display text, docs/decisions/0009), analyzed into space-separated
terms. The heading path is analyzed on its own, as the FTS table's second column.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbseek.dates import DATE_FIELDS, document_date
from kbseek.documents import Chunk, ParsedDocument
from kbseek.ingest.parsers import has_markup
from kbseek.store.records import ChunkInput, DocumentInput
from kbseek.text.analyzer import index_text
from kbseek.text.display import display_text

FRONTMATTER_PARSERS = frozenset({"md", "txt"})
"""Parsers whose front matter is the author's; the others' is written by their converter from the
file's document properties (an Office file's created and modified dates), and is named so."""


def document_input(
    *, path: str, parser: str, size: int, mtime_ns: int, content_hash: str, parsed: ParsedDocument,
    date_fields: Sequence[str] = DATE_FIELDS,
) -> DocumentInput:  # fmt: skip
    """The record the store writes for one file, its chunks analyzed for the lexical index and its
    date read from the first of ``date_fields`` it has, else its modification time."""
    markup = has_markup(parser)
    origin = "frontmatter" if parser in FRONTMATTER_PARSERS else "properties"
    dated = document_date(parsed.frontmatter, mtime_ns, fields=date_fields, origin=origin)
    return DocumentInput(
        path=path, parser=parser, size=size, mtime_ns=mtime_ns, content_hash=content_hash,
        chars=len(parsed.text), text=parsed.text, title=parsed.title, frontmatter=parsed.frontmatter, tags=parsed.tags,
        date=parsed.date, warnings=parsed.warnings,
        chunks=tuple(chunk_input(c, markup=markup) for c in parsed.chunks), links=parsed.links, dated=dated,
    )  # fmt: skip


def chunk_input(chunk: Chunk, *, markup: bool) -> ChunkInput:
    """One chunk with its heading path and its display text analyzed into index terms."""
    return ChunkInput(
        chunk=chunk,
        lexical_heading=index_text(" ".join(chunk.heading_path)),
        lexical_body=index_text(display_text(chunk.text, markup=markup).text),
    )
