"""The index's table layout and its version.

The index is derived data: every row can be rebuilt from the files. So an
index written by an *older* schema is rebuilt from scratch, and one written by
a *newer* kbseek is refused (it may hold data this version would misread).
"""

from __future__ import annotations

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS documents (
    id           INTEGER PRIMARY KEY,
    path         TEXT NOT NULL UNIQUE,
    parser       TEXT NOT NULL,
    size         INTEGER NOT NULL,      -- bytes on disk when indexed (D8)
    chars        INTEGER NOT NULL,      -- length of the served text
    mtime_ns     INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    title        TEXT NOT NULL,
    frontmatter  TEXT NOT NULL,         -- JSON object
    tags         TEXT NOT NULL,         -- JSON array of strings, case kept
    date         TEXT,
    warnings     TEXT NOT NULL,         -- JSON array of strings
    indexed_at   REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_by_hash ON documents(content_hash);

CREATE TABLE IF NOT EXISTS chunks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: the dense snapshot relies on it
    chunk_id     TEXT NOT NULL UNIQUE,
    document_id  INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    start        INTEGER NOT NULL,
    end          INTEGER NOT NULL,
    line_start   INTEGER NOT NULL,
    line_end     INTEGER NOT NULL,
    heading_path TEXT NOT NULL,         -- JSON array of strings
    text         TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks(document_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_by_content ON chunks(content_hash);

-- Pre-analyzed tokens: our analyzer does the real work, unicode61 only splits on spaces.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    heading, body, tokenize = 'unicode61 remove_diacritics 0'
);

-- Document frequency per term, for weighting how much of a query a hit covers.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, row);

-- Vectors keyed by chunk content, so unchanged text is never embedded twice.
CREATE TABLE IF NOT EXISTS embeddings (
    content_hash TEXT PRIMARY KEY,
    vector       BLOB NOT NULL          -- little-endian float32, dimension in meta
);

-- Chunk ids that existed once, so a stale id gets a precise answer (T5).
CREATE TABLE IF NOT EXISTS retired_chunks (
    chunk_id   TEXT PRIMARY KEY,
    path       TEXT NOT NULL,
    retired_at REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS skipped (
    path   TEXT PRIMARY KEY,
    reason TEXT NOT NULL
);
"""

# BM25 column weights for (heading, body): a match in the heading path says
# more about what a chunk is about than one in passing.
BM25_WEIGHTS = (2.0, 1.0)

RETIRED_CHUNKS_KEPT = 50_000
