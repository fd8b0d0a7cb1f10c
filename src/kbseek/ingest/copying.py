"""Copy an index from one store to another without reading the files or embedding again.

A team moving a knowledge base's index into PostgreSQL (or a person taking one back into a SQLite
file) has the documents, chunks and vectors already: embedding them again costs the model's time
on every chunk (most of a pass). Everything goes through the :class:`~kbseek.store.base.Store`
protocol, so any two backends copy both ways. The chunks' lexical text is rebuilt with the one
analyzer (T7) rather than read back: it is derived from the text, the same way ingest derives it,
so the copy indexes exactly what a pass over the files would have.

What is not copied: the retired chunk ids of edited documents (T5's history), which only answer a
stale id with "this chunk no longer exists"; the copy starts that history afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbseek.documents import Chunk
from kbseek.errors import ConfigError
from kbseek.ingest.analysis import chunk_input
from kbseek.ingest.parsers import has_markup
from kbseek.ingest.parsers.markdown import MarkdownParser
from kbseek.store.base import Store
from kbseek.store.records import DocumentInput

__all__ = ["CopyReport", "copy_index"]


@dataclass(frozen=True)
class CopyReport:
    documents: int
    chunks: int
    vectors: int
    location: str
    """Where the copy went, as the target store names it (a URL without its password)."""
    vector_index: bool = False
    """Whether the target's own approximate vector index was built after the copy (PostgreSQL past
    ``[index].approximate_above``), so its readers search a graph from the start."""
    warmed: str | None = None
    """What was read into the target's memory after the copy (``store.warming``), so a reader started
    on it is warm from its first search; ``None`` where the target has nothing to warm."""


def copy_index(source: Store, target: Store) -> CopyReport:
    """Every document, chunk, vector and fact of ``source`` into ``target``, in one transaction:
    a copy that fails midway leaves ``target`` as it was.

    ``target`` must hold no document: copying over an index would mix two histories.
    """
    if target.counts().documents:
        raise ConfigError(
            f"the index at {target.location} already holds documents; copy into an empty one "
            "(another --to-name, or a new file)"
        )
    states = source.document_states()
    rows = source.documents()
    meta = source.meta()
    dim = meta.embedding.dim if meta.embedding is not None else None
    chunks = vectors = 0
    with target.transaction() as tx:
        for row in rows:
            state = states[row.path]
            stored = source.neighbours(row.id, 0, 2**31 - 1)
            sections = source.section_starts([c.rowid for c in stored])
            markup = has_markup(row.parser)
            inputs = tuple(
                chunk_input(
                    Chunk(
                        chunk_id=c.chunk_id, ordinal=c.ordinal, start=c.start, end=c.end,
                        heading_path=c.heading_path, text=c.text, content_hash=c.content_hash,
                        line_start=c.line_start, line_end=c.line_end, sections=sections.get(c.rowid, ()),
                    ),
                    markup=markup,
                )
                for c in stored
            )  # fmt: skip
            text = source.document_text(row.path)
            if text is None:
                raise ConfigError(
                    f"the index at {source.location} does not hold the text of {row.path} (it was "
                    "written by an older kbseek); run `kbseek index` once, then copy again"
                )
            tx.write_document(
                DocumentInput(
                    path=row.path, parser=row.parser, size=row.size, mtime_ns=state.mtime_ns,
                    content_hash=state.content_hash, chars=row.chars, text=text, title=row.title,
                    frontmatter=row.frontmatter, tags=row.tags, date=row.date, warnings=row.warnings,
                    chunks=inputs, links=MarkdownParser.links(row.path, text) if row.parser == "md" else (),
                    dated=row.dated,
                ),
                replaces=None,
            )  # fmt: skip
            chunks += len(inputs)
            if dim is not None and stored:
                ids, matrix = source.vectors_for_rowids([c.rowid for c in stored], dim)
                hashes = {c.rowid: c.content_hash for c in stored}
                found = {hashes[int(rowid)]: vector for rowid, vector in zip(ids, matrix, strict=True)}
                tx.put_vectors(found)
                vectors += len(found)
        tx.replace_skipped([(s.path, s.reason) for s in source.skipped()])
        if meta.embedding is not None:
            tx.record_embedding(meta.embedding)
        if meta.last_pass_at is not None and meta.parse_version is not None:
            tx.record_pass(
                finished_at=meta.last_pass_at, parse_version=meta.parse_version, date_fields=meta.date_fields,
                chunking=meta.chunking,
            )  # fmt: skip
    return CopyReport(len(rows), chunks, vectors, target.location)
