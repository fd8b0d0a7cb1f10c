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
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector import Vector
from psycopg.rows import TupleRow

from kbseek.store.postgres.filters import fold_tag
from kbseek.store.records import ChunkInput, DocumentInput
from kbseek.store.writer import IndexWriter, Row, Statements

SQL = Statements(
    insert_document="INSERT INTO documents (path, parser, size, chars, mtime_ns, content_hash, title,"
    " frontmatter, tags, date, warnings, indexed_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
    update_document="UPDATE documents SET path=%s, parser=%s, size=%s, chars=%s, mtime_ns=%s, content_hash=%s,"
    " title=%s, frontmatter=%s, tags=%s, date=%s, warnings=%s, indexed_at=%s WHERE id=%s",
    put_text="INSERT INTO document_texts (document_id, text) VALUES (%s, %s)"
    " ON CONFLICT (document_id) DO UPDATE SET text = EXCLUDED.text",
    put_date="INSERT INTO document_dates (document_id, day, source) VALUES (%s, %s, %s)"
    " ON CONFLICT (document_id) DO UPDATE SET day = EXCLUDED.day, source = EXCLUDED.source",
    delete_fields="DELETE FROM document_fields WHERE document_id = %s",
    insert_fields="INSERT INTO document_fields (document_id, field, value)"
    " SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[])",
    delete_links="DELETE FROM links WHERE document_id = %s",
    delete_names="DELETE FROM document_names WHERE document_id = %s",
    insert_links="INSERT INTO links (document_id, position, target)"
    " SELECT * FROM unnest(%s::bigint[], %s::integer[], %s::text[])",
    insert_names="INSERT INTO document_names (name, document_id, rank)"
    " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::integer[])",
    touch_document="UPDATE documents SET size = %s, mtime_ns = %s WHERE id = %s",
    follow_mtime_date="UPDATE document_dates SET day = %s WHERE document_id = %s AND source = %s",
    delete_document="DELETE FROM documents WHERE id = %s",
    delete_skipped="DELETE FROM skipped",
    insert_skipped="INSERT INTO skipped (path, reason) SELECT * FROM unnest(%s::text[], %s::text[])",
    prune_vectors="DELETE FROM {table} e"
    " WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash)",
    prune_retired="DELETE FROM retired_chunks WHERE chunk_id IN (SELECT chunk_id FROM retired_chunks"
    " ORDER BY retired_at DESC OFFSET %s)",
    put_vector="INSERT INTO embeddings (content_hash, vector) VALUES (%s, %b)"
    " ON CONFLICT (content_hash) DO UPDATE SET vector = EXCLUDED.vector",
    put_next_vector="INSERT INTO next_embeddings (content_hash, vector) VALUES (%s, %b)"
    " ON CONFLICT (content_hash) DO UPDATE SET vector = EXCLUDED.vector",
    other_dimension="SELECT vector_dims(vector) FROM embeddings WHERE NOT (content_hash = ANY(%s::text[])) LIMIT 1",
    # DELETE, not TRUNCATE: TRUNCATE's lock would make every reader wait for this transaction.
    delete_vectors="DELETE FROM embeddings",
    delete_next_vectors="DELETE FROM next_embeddings",
    promote_vectors="INSERT INTO embeddings (content_hash, vector) SELECT content_hash, vector FROM next_embeddings",
    meta_rows="SELECT key, value FROM meta",
    meta_value="SELECT value FROM meta WHERE key = %s",
    put_meta="INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
    delete_meta="DELETE FROM meta WHERE key = %s",
)


def lexical_terms(text: str) -> list[str]:
    """The terms of analyzed text. NUL separates words, as FTS5's tokenizer treats it in SQLite."""
    return text.replace("\x00", " ").split()


def to_bytes(text: str) -> bytes:
    """Free text for a bytea column: lossless, NUL included (``surrogatepass`` as SQLite keeps any str)."""
    return text.encode("utf-8", "surrogatepass")


def from_bytes(value: Any) -> str:
    """A bytea column's text as :func:`to_bytes` wrote it (a text column cannot hold NUL)."""
    return bytes(value).decode("utf-8", "surrogatepass")


class PostgresWriter(IndexWriter):
    """Writes on the connection of one open transaction (see ``base.StoreWriter`` for the guarantees)."""

    sql = SQL

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        super().__init__()
        self._conn = conn
        self._vocabulary: Counter[str] = Counter()
        """Chunks gained (or lost, negative) per term in this transaction, not yet written."""
        self._chunks = 0
        self._terms = 0

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

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(sql, params)

    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._conn.execute(sql, params).fetchall()

    def _insert_rows(self, sql: str, rows: Sequence[Row]) -> None:
        """One statement for all the rows, each column sent as an array (``unnest``): one round trip."""
        self._conn.execute(sql, [list(column) for column in zip(*rows, strict=True)])

    def _put_rows(self, sql: str, rows: Sequence[Row]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(sql, rows)

    def _insert_returning_id(self, sql: str, params: Sequence[Any]) -> int:
        row = self._conn.execute(sql, params).fetchone()
        assert row is not None
        return int(row[0])

    def _text_value(self, text: str) -> bytes:
        return to_bytes(text)

    def _encode_vector(self, vector: npt.NDArray[np.float32]) -> Vector:
        """pgvector's float4, which holds a float32 exactly, sent in binary."""
        return Vector(vector)

    def _write_tags(self, doc_id: int, document: DocumentInput, *, replaced: bool) -> None:
        """Tags as rows of ``document_tags``, folded, so a tag filter is an index lookup."""
        if replaced:
            self._conn.execute("DELETE FROM document_tags WHERE document_id = %s", (doc_id,))
        tags = sorted({fold_tag(t) for t in document.tags})
        if tags:
            self._conn.execute(
                "INSERT INTO document_tags (document_id, tag) SELECT %s, t FROM unnest(%s::text[]) AS t",
                (doc_id, tags),
            )

    def _announce_pass(self, passes: str) -> None:
        """``NOTIFY`` the knowledge base's channel (its schema's name), which PostgreSQL delivers to every
        listening reader when, and only if, this transaction commits."""
        self._conn.execute("SELECT pg_notify(current_schema(), %s)", (passes,))

    def _insert_chunks(self, doc_id: int, chunks: Sequence[ChunkInput]) -> None:
        """The chunk rows, their postings and sections, and the collection statistics.

        The postings hold the analyzed text exactly as given, split on whitespace; the lexical
        index holds display text (docs/decisions/0009), which ingest made.
        """
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
