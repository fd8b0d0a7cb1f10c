"""The writes of one PostgreSQL transaction: :class:`PostgresWriter`, the ``StoreWriter`` of ``PostgresStore``.

A writer exists only inside ``PostgresStore.transaction()``, on the connection that holds the
transaction and the knowledge base's advisory lock, so every statement here runs inside it. Rows go
in as arrays, one statement per table per document, so a document costs a handful of round trips
to a server across the network rather than one per chunk or per term.

The lexical text arrives analyzed (``ChunkInput``): it is only split on whitespace here, into the
postings and the per-chunk lengths that BM25 needs, and the collection statistics move with them:
the totals in ``lexical_stats`` and each term's count of chunks in ``vocabulary``, added up over the
transaction and written once, just before it commits (:meth:`PostgresWriter.finish`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector import Vector
from psycopg.rows import TupleRow

from kbseek.dates import MTIME_SOURCE, mtime_day
from kbseek.errors import KbBug
from kbseek.store.conventions import RETIRED_CHUNKS_KEPT, pack_text
from kbseek.store.facts import document_facts
from kbseek.store.links import document_names, link_keys
from kbseek.store.meta import (
    META_EMBEDDING,
    META_NEXT_EMBEDDING,
    META_PASSES,
    NEXT_PREFIX,
    embedding_meta,
    index_meta,
    pass_meta,
    same_generation,
)
from kbseek.store.postgres_filters import fold_tag
from kbseek.store.records import ChunkInput, DocumentInput, EmbeddingRecord


def lexical_terms(text: str) -> list[str]:
    """The terms of analyzed text. NUL separates words, as FTS5's tokenizer treats it in SQLite."""
    return text.replace("\x00", " ").split()


def to_bytes(text: str) -> bytes:
    """Free text for a bytea column: lossless, NUL included (``surrogatepass`` as SQLite keeps any str)."""
    return text.encode("utf-8", "surrogatepass")


def from_bytes(value: Any) -> str:
    """A bytea column's text as :func:`to_bytes` wrote it (a text column cannot hold NUL)."""
    return bytes(value).decode("utf-8", "surrogatepass")


class PostgresWriter:
    """Writes on the connection of one open transaction (see ``base.StoreWriter`` for the guarantees)."""

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._conn = conn
        self._vocabulary: Counter[str] = Counter()
        """Chunks gained (or lost, negative) per term in this transaction, not yet written."""
        self._chunks = 0
        self._terms = 0
        self.documents_changed = 0
        """Documents written or deleted in this transaction (what makes statistics stale)."""
        self.pass_recorded = False
        """This transaction records a finished pass: the moment to bring statistics up to date."""

    def finish(self) -> None:
        """Write the collection statistics this transaction moved; called once, just before COMMIT.

        Written once per transaction rather than once per document: every row version a
        transaction writes stays in the table until it commits, so a transaction of many documents
        (``kbseek store copy`` writes a whole index in one) updating a common term's row per
        document would leave a chain of versions that each later update walks, a cost quadratic in
        the documents. One statement: terms losing their last chunk leave the vocabulary, the
        others move, new ones come in (all read the same snapshot, so no row is touched twice).
        """
        changed = sorted((t, n) for t, n in self._vocabulary.items() if n)
        if not changed and not self._chunks and not self._terms:
            return
        self._conn.execute(
            "WITH d AS (SELECT * FROM unnest(%s::text[], %s::bigint[]) AS d(term, n)),"
            " emptied AS (DELETE FROM vocabulary v USING d WHERE v.term = d.term AND v.chunks + d.n <= 0),"
            " moved AS (UPDATE vocabulary v SET chunks = v.chunks + d.n FROM d"
            " WHERE v.term = d.term AND v.chunks + d.n > 0),"
            " totals AS (UPDATE lexical_stats SET chunks = chunks + %s, terms = terms + %s)"
            " INSERT INTO vocabulary (term, chunks) SELECT d.term, d.n FROM d"
            " WHERE d.n > 0 AND NOT EXISTS (SELECT 1 FROM vocabulary v WHERE v.term = d.term)",
            ([t for t, _ in changed], [n for _, n in changed], self._chunks, self._terms),
        )
        self._vocabulary.clear()
        self._chunks = self._terms = 0

    # -- documents and chunks ----------------------------------------------------------------------

    def write_document(self, document: DocumentInput, *, replaces: int | None) -> int:
        conn = self._conn
        now = time.time()
        self.documents_changed += 1
        values = (
            document.path, document.parser, document.size, document.chars, document.mtime_ns,
            document.content_hash, to_bytes(document.title),
            json.dumps(dict(document.frontmatter), ensure_ascii=False, default=str),
            json.dumps(list(document.tags), ensure_ascii=False), document.date,
            json.dumps(list(document.warnings), ensure_ascii=False), now,
        )  # fmt: skip
        if replaces is None:
            row = conn.execute(
                "INSERT INTO documents (path, parser, size, chars, mtime_ns, content_hash, title,"
                " frontmatter, tags, date, warnings, indexed_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                values,
            ).fetchone()
            assert row is not None
            doc_id = int(row[0])
        else:
            doc_id = replaces
            self._retire_chunks(doc_id, now)
            conn.execute(
                "UPDATE documents SET path=%s, parser=%s, size=%s, chars=%s, mtime_ns=%s, content_hash=%s,"
                " title=%s, frontmatter=%s, tags=%s, date=%s, warnings=%s, indexed_at=%s WHERE id=%s",
                (*values, doc_id),
            )
            conn.execute("DELETE FROM document_tags WHERE document_id = %s", (doc_id,))
        tags = sorted({fold_tag(t) for t in document.tags})
        if tags:
            conn.execute(
                "INSERT INTO document_tags (document_id, tag) SELECT %s, t FROM unnest(%s::text[]) AS t",
                (doc_id, tags),
            )
        conn.execute(
            "INSERT INTO document_texts (document_id, text) VALUES (%s, %s)"
            " ON CONFLICT (document_id) DO UPDATE SET text = EXCLUDED.text",
            (doc_id, pack_text(document.text)),
        )
        self._insert_chunks(doc_id, document.chunks)
        self._write_links(doc_id, document)
        self._write_facts(doc_id, document)
        return doc_id

    def _write_facts(self, doc_id: int, document: DocumentInput) -> None:
        """The document's date and front-matter fields (``store.facts``), replacing any it had."""
        dated, fields = document_facts(document)
        conn = self._conn
        conn.execute(
            "INSERT INTO document_dates (document_id, day, source) VALUES (%s, %s, %s)"
            " ON CONFLICT (document_id) DO UPDATE SET day = EXCLUDED.day, source = EXCLUDED.source",
            (doc_id, dated.day, dated.source),
        )
        conn.execute("DELETE FROM document_fields WHERE document_id = %s", (doc_id,))
        if fields:
            conn.execute(
                "INSERT INTO document_fields (document_id, field, value)"
                " SELECT %s, f, v FROM unnest(%s::text[], %s::text[]) AS u(f, v)",
                (doc_id, [f for f, _ in fields], [v for _, v in fields]),
            )

    def _write_links(self, doc_id: int, document: DocumentInput) -> None:
        """The document's links as keys and its names (``store.links``), replacing any it had."""
        conn = self._conn
        conn.execute("DELETE FROM links WHERE document_id = %s", (doc_id,))
        conn.execute("DELETE FROM document_names WHERE document_id = %s", (doc_id,))
        keys = link_keys(document.links)
        if keys:
            conn.execute(
                "INSERT INTO links (document_id, position, target)"
                " SELECT %s, p - 1, t FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, p)",
                (doc_id, keys),
            )
        names = document_names(document.path, document.title)
        conn.execute(
            "INSERT INTO document_names (name, document_id, rank)"
            " SELECT n, %s, r FROM unnest(%s::text[], %s::integer[]) AS u(n, r)",
            (doc_id, list(names), list(names.values())),
        )

    def _insert_chunks(self, doc_id: int, chunks: Sequence[ChunkInput]) -> None:
        """The chunk rows, their postings and sections, and the collection statistics.

        The postings hold the analyzed text exactly as given, split on whitespace; the lexical
        index holds display text (docs/decisions/0009), which ingest made.
        """
        if not chunks:
            return
        conn = self._conn
        heading_terms = [lexical_terms(e.lexical_heading) for e in chunks]
        body_terms = [lexical_terms(e.lexical_body) for e in chunks]
        cs = [e.chunk for e in chunks]
        rows = conn.execute(
            "INSERT INTO chunks (chunk_id, document_id, ordinal, start, \"end\", line_start, line_end,"
            " heading_path, text, content_hash, heading_terms, body_terms)"
            " SELECT c, %s, o, s, e, ls, le, h, t, ch, ht, bt FROM unnest("
            "%s::text[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[],"
            " %s::text[], %s::bytea[], %s::text[], %s::bigint[], %s::bigint[])"
            " AS u(c, o, s, e, ls, le, h, t, ch, ht, bt) RETURNING id, chunk_id",
            (
                doc_id, [c.chunk_id for c in cs], [c.ordinal for c in cs], [c.start for c in cs],
                [c.end for c in cs], [c.line_start for c in cs], [c.line_end for c in cs],
                [json.dumps(list(c.heading_path), ensure_ascii=False) for c in cs],
                [to_bytes(c.text) for c in cs], [c.content_hash for c in cs],
                [len(h) for h in heading_terms], [len(b) for b in body_terms],
            ),
        ).fetchall()  # fmt: skip
        rowid_of = {str(r[1]): int(r[0]) for r in rows}
        rowids = [rowid_of[c.chunk_id] for c in cs]

        terms: list[str] = []
        owners: list[int] = []
        in_heading: list[int] = []
        in_body: list[int] = []
        lengths: list[int] = []
        for rowid, heading, body in zip(rowids, heading_terms, body_terms, strict=True):
            h, b = Counter(heading), Counter(body)
            for term in h.keys() | b.keys():
                terms.append(term)
                owners.append(rowid)
                in_heading.append(h[term])
                in_body.append(b[term])
                lengths.append(len(heading) + len(body))
        if terms:
            conn.execute(
                "INSERT INTO postings (term, chunk, tf_heading, tf_body, chunk_terms) SELECT * FROM"
                " unnest(%s::text[], %s::bigint[], %s::integer[], %s::integer[], %s::bigint[])",
                (terms, owners, in_heading, in_body, lengths),
            )
        self._vocabulary.update(terms)  # a posting is one chunk holding its term
        self._chunks += len(cs)
        self._terms += sum(map(len, heading_terms)) + sum(map(len, body_terms))

        sections = [(rowid, s) for rowid, c in zip(rowids, cs, strict=True) for s in c.sections]
        if sections:
            conn.execute(
                "INSERT INTO chunk_sections (chunk, position, heading_path)"
                " SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[])",
                (
                    [r for r, _ in sections],
                    [s.offset for _, s in sections],
                    [json.dumps(list(s.heading_path), ensure_ascii=False) for _, s in sections],
                ),
            )
        conn.execute(
            "DELETE FROM retired_chunks WHERE chunk_id = ANY(%s::text[])", ([c.chunk_id for c in cs],)
        )

    def _retire_chunks(self, doc_id: int, now: float) -> None:
        """Retire the document's chunk ids and delete its chunks (postings and sections go with them).

        The terms the chunks held are read first, while their postings still say: the vocabulary
        loses them at :meth:`finish`, and a term no chunk holds any more leaves it, so its absence
        means what FTS5's does.
        """
        conn = self._conn
        for term, n in conn.execute(
            "SELECT p.term, count(*) FROM chunks c JOIN postings p ON p.chunk = c.id"
            " WHERE c.document_id = %s GROUP BY p.term",
            (doc_id,),
        ):
            self._vocabulary[str(term)] -= int(n)
        conn.execute(
            "INSERT INTO retired_chunks (chunk_id, path, retired_at)"
            " SELECT c.chunk_id, d.path, %s FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.document_id = %s"
            " ON CONFLICT (chunk_id) DO UPDATE SET path = EXCLUDED.path, retired_at = EXCLUDED.retired_at",
            (now, doc_id),
        )
        row = conn.execute(
            "WITH gone AS (DELETE FROM chunks WHERE document_id = %s RETURNING heading_terms + body_terms AS n)"
            " SELECT count(*), coalesce(sum(n), 0) FROM gone",
            (doc_id,),
        ).fetchone()
        assert row is not None
        self._chunks -= int(row[0])
        self._terms -= int(row[1])

    def touch_document(self, document_id: int, size: int, mtime_ns: int) -> None:
        self._conn.execute(
            "UPDATE documents SET size = %s, mtime_ns = %s WHERE id = %s", (size, mtime_ns, document_id)
        )
        self._conn.execute(  # a date read from the modification time follows it
            "UPDATE document_dates SET day = %s WHERE document_id = %s AND source = %s",
            (mtime_day(mtime_ns), document_id, MTIME_SOURCE),
        )

    def delete_document(self, document_id: int) -> None:
        self.documents_changed += 1
        self._retire_chunks(document_id, time.time())
        self._conn.execute("DELETE FROM documents WHERE id = %s", (document_id,))

    def replace_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        last = dict(skipped)  # a repeated path keeps its last reason
        self._conn.execute("DELETE FROM skipped")
        if last:
            self._conn.execute(
                "INSERT INTO skipped (path, reason) SELECT * FROM unnest(%s::text[], %s::text[])",
                (list(last), list(last.values())),
            )

    def prune(self) -> None:
        for table in ("embeddings", "next_embeddings"):
            self._conn.execute(
                f"DELETE FROM {table} e"
                " WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash)"
            )
        self._conn.execute(
            "DELETE FROM retired_chunks WHERE chunk_id IN (SELECT chunk_id FROM retired_chunks"
            " ORDER BY retired_at DESC OFFSET %s)",
            (RETIRED_CHUNKS_KEPT,),
        )

    # -- vectors -----------------------------------------------------------------------------------

    def put_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        """Kept as pgvector's float4, which holds a float32 exactly, sent in binary.

        One index holds one dimension: vectors of two models are never mixed (``records.EmbeddingRecord``),
        and a matrix of the index's vectors could not be built otherwise, so a vector of another
        dimension is refused here rather than found by the next search.
        """
        if not vectors:
            return
        rows = [(h, Vector(np.asarray(v, dtype=np.float32))) for h, v in vectors.items()]
        dims = {v.dimensions() for _, v in rows}
        row = self._conn.execute(
            "SELECT vector_dims(vector) FROM embeddings WHERE NOT (content_hash = ANY(%s::text[])) LIMIT 1",
            ([h for h, _ in rows],),
        ).fetchone()
        if row is not None:
            dims.add(int(row[0]))
        if len(dims) > 1:
            raise KbBug(
                f"vectors of dimensions {sorted(dims)} were written into one index; "
                "vectors of two models are never mixed (clear_vectors first)"
            )
        with self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings (content_hash, vector) VALUES (%s, %b)"
                " ON CONFLICT (content_hash) DO UPDATE SET vector = EXCLUDED.vector",
                rows,
            )

    def clear_vectors(self) -> None:
        # DELETE, not TRUNCATE: TRUNCATE's lock would make every reader wait for this transaction.
        self._conn.execute("DELETE FROM embeddings")
        self._conn.execute("DELETE FROM next_embeddings")
        keys = list(META_EMBEDDING + META_NEXT_EMBEDDING)
        self._conn.execute("DELETE FROM meta WHERE key = ANY(%s::text[])", (keys,))

    # -- the next generation (a model switch, docs/decisions/0040) ---------------------------------

    def _next_record(self) -> EmbeddingRecord | None:
        rows = self._conn.execute("SELECT key, value FROM meta").fetchall()
        return index_meta({str(k): str(v) for k, v in rows}).next_embedding

    def start_next_generation(self, embedding: EmbeddingRecord) -> None:
        if not same_generation(self._next_record(), embedding):
            self._conn.execute("DELETE FROM next_embeddings")
        for key, value in embedding_meta(embedding, prefix=NEXT_PREFIX).items():
            self._set_meta(key, value)

    def put_next_vectors(self, vectors: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        """As :meth:`put_vectors`, without its check of one dimension: the switch writes every vector
        of the generation with one model, and :meth:`start_next_generation` empties it for another."""
        if self._next_record() is None:
            raise KbBug("next-generation vectors were written before the generation was started")
        if not vectors:
            return
        rows = [(h, Vector(np.asarray(v, dtype=np.float32))) for h, v in vectors.items()]
        with self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO next_embeddings (content_hash, vector) VALUES (%s, %b)"
                " ON CONFLICT (content_hash) DO UPDATE SET vector = EXCLUDED.vector",
                rows,
            )

    def drop_next_generation(self) -> None:
        self._conn.execute("DELETE FROM next_embeddings")
        self._conn.execute("DELETE FROM meta WHERE key = ANY(%s::text[])", (list(META_NEXT_EMBEDDING),))

    def promote_next_generation(self) -> None:
        """DELETE and INSERT in this transaction, not a table rename: a rename's lock would make every
        reader wait, and the approximate index (on ``embeddings``) is then rebuilt for the new
        dimension by ``build_vector_index``, outside any transaction."""
        record = self._next_record()
        if record is None:
            raise KbBug("no next generation of vectors to promote")
        self._conn.execute("DELETE FROM embeddings")
        self._conn.execute(
            "INSERT INTO embeddings (content_hash, vector) SELECT content_hash, vector FROM next_embeddings"
        )
        self._conn.execute("DELETE FROM next_embeddings")
        self.record_embedding(record)
        for key in META_NEXT_EMBEDDING:
            self._set_meta(key, None)

    # -- meta --------------------------------------------------------------------------------------

    def record_pass(
        self, *, finished_at: float, parse_version: int, listing_changed: bool = True,
        date_fields: Sequence[str] | None = None, chunking: str | None = None,
    ) -> None:  # fmt: skip
        """Also ``NOTIFY`` the knowledge base's channel (its schema's name), which PostgreSQL delivers
        to every listening reader when, and only if, this transaction commits."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = %s", (META_PASSES,)).fetchone()
        rows = pass_meta(
            finished_at=finished_at, parse_version=parse_version, passes_before=row[0] if row else None,
            listing_changed=listing_changed, date_fields=date_fields, chunking=chunking,
        )  # fmt: skip
        for key, value in rows.items():
            self._set_meta(key, value)
        self._conn.execute("SELECT pg_notify(current_schema(), %s)", (rows[META_PASSES],))
        self.pass_recorded = True

    def record_embedding(self, embedding: EmbeddingRecord) -> None:
        for key, value in embedding_meta(embedding).items():
            self._set_meta(key, value)

    def _set_meta(self, key: str, value: str | None) -> None:
        """``None`` removes the key, so that reading it back gives ``None`` again."""
        if value is None:
            self._conn.execute("DELETE FROM meta WHERE key = %s", (key,))
        else:
            self._conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value),
            )
