"""The PostgreSQL store's SQL for the reads both backends share (``store.reader``).

A list parameter is an array (``= ANY(%s::type[])``); free text (a title, a chunk) is ``bytea``,
which holds NUL, decoded by ``writer.from_bytes``.
"""

from __future__ import annotations

from kbseek.store.reader import ReadStatements

CHUNKS = (
    'SELECT c.id, c.chunk_id, c.document_id, d.path, d.title, c.ordinal, c.start, c."end",'
    " c.line_start, c.line_end, c.heading_path, c.text, c.content_hash, d.tags, d.parser, x.day"
    " FROM chunks c JOIN documents d ON d.id = c.document_id LEFT JOIN document_dates x ON x.document_id = d.id"
)
DOCUMENTS = (
    "SELECT id, path, parser, size, chars, title, tags, date, frontmatter, warnings, indexed_at, x.day, x.source,"
    " content_hash FROM documents LEFT JOIN document_dates x ON x.document_id = documents.id"
)
WITH_VECTOR = "FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
WITHOUT_VECTOR = (
    "FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM {table} e WHERE e.content_hash = c.content_hash)"
)

READS = ReadStatements(
    meta_rows="SELECT key, value FROM meta",
    document=f"{DOCUMENTS} WHERE path = %s",
    documents=f"{DOCUMENTS} ORDER BY path",
    document_text="SELECT t.text FROM documents d JOIN document_texts t ON t.document_id = d.id WHERE d.path = %s",
    skipped="SELECT path, reason FROM skipped ORDER BY path",
    chunk=f"{CHUNKS} WHERE c.chunk_id = %s",
    chunks_by_rowid=f"{CHUNKS} WHERE c.id = ANY(%s::bigint[])",
    neighbours=f"{CHUNKS} WHERE c.document_id = %s AND c.ordinal BETWEEN %s AND %s ORDER BY c.ordinal",
    section_starts="SELECT chunk, position, heading_path FROM chunk_sections WHERE chunk = ANY(%s::bigint[])"
    " ORDER BY chunk, position",
    retired="SELECT path, retired_at FROM retired_chunks WHERE chunk_id = %s",
    paths_within_size="SELECT path FROM documents WHERE size <= %s ORDER BY path",
    paths_within_size_among="SELECT path FROM documents WHERE size <= %s AND path = ANY(%s::text[]) ORDER BY path",
    has_field="SELECT 1 FROM document_fields WHERE field = %s LIMIT 1",
    date_sources="SELECT source, count(*) FROM document_dates GROUP BY source",
    link_keys="SELECT l.target FROM documents d JOIN links l ON l.document_id = d.id WHERE d.path = %s"
    " ORDER BY l.position LIMIT %s",
    linking="SELECT s.path, l.target FROM documents d JOIN document_names n ON n.document_id = d.id"
    " JOIN links l ON l.target = n.name JOIN documents s ON s.id = l.document_id"
    " WHERE d.path = %s AND s.id <> d.id ORDER BY s.path, l.position LIMIT %s",
    named="SELECT name, path, rank FROM (SELECT n.name, d.path, n.rank, row_number() OVER"
    " (PARTITION BY n.name ORDER BY n.rank, length(d.path), d.path) AS r"
    " FROM document_names n JOIN documents d ON d.id = n.document_id"
    " WHERE n.name = ANY(%s::text[])) AS c WHERE r <= %s",
    pending="SELECT DISTINCT ON (c.content_hash) c.content_hash, c.heading_path, c.text"
    f" {WITHOUT_VECTOR} AND c.content_hash > %s ORDER BY c.content_hash, c.id LIMIT %s",
    pending_in_documents=f"SELECT c.content_hash, c.heading_path, c.text {WITHOUT_VECTOR}"
    " AND c.document_id = ANY(%s::bigint[]) ORDER BY c.document_id, c.ordinal",
    pending_count=f"SELECT count(DISTINCT c.content_hash) {WITHOUT_VECTOR}",
    embedded_count="SELECT count(*) FROM chunks c JOIN {table} e ON e.content_hash = c.content_hash",
    vector_rowids=f"SELECT c.id {WITH_VECTOR} ORDER BY c.id",
    vectors=f"SELECT c.id, e.vector {WITH_VECTOR} ORDER BY c.id",
    vectors_after=f"SELECT c.id, e.vector {WITH_VECTOR} WHERE c.id > %s ORDER BY c.id LIMIT %s",
    vectors_among=f"SELECT c.id, e.vector {WITH_VECTOR} WHERE c.id = ANY(%s::bigint[]) ORDER BY c.id",
    no_limit=None,
)
