"""The SQLite index's table layout, its version, and opening a file under it (the meta table's keys and
their reading are ``store/meta.py``'s, shared with PostgreSQL).

The index is derived data: every row can be rebuilt from the files. So an
index written by an *older* schema is rebuilt from scratch, unless every
version since has only added tables (:data:`ADDED`), which are then created in
place; one written by a *newer* kbseek is refused (it may hold data this version
would misread).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from kbseek.errors import IndexIncompatible
from kbseek.store import meta
from kbseek.store.meta import META_SCHEMA_VERSION, index_meta
from kbseek.store.records import Counts, IndexMeta

log = logging.getLogger(__name__)

SCHEMA_VERSION = 6

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

{chunk_sections}
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

{document_texts}
{links}
{next_embeddings}
{document_facts}
"""

_DOCUMENT_TEXTS = """
-- The served text of each document, so a server without the files can serve it (decision 0031).
CREATE TABLE IF NOT EXISTS document_texts (
    document INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    text     BLOB NOT NULL          -- zlib-compressed UTF-8
);
"""

_CHUNK_SECTIONS = """
-- Sections merged into a chunk after its start, so a hit inside one names its own heading.
CREATE TABLE IF NOT EXISTS chunk_sections (
    chunk        INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,      -- characters into the chunk's text
    heading_path TEXT NOT NULL          -- JSON array of strings
);
CREATE INDEX IF NOT EXISTS chunk_sections_by_chunk ON chunk_sections(chunk, position);
"""

_LINKS = """
-- Each document's links as written, and the names a link may call a document by (store.links).
CREATE TABLE IF NOT EXISTS links (
    document INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,      -- the order written
    target   TEXT NOT NULL,         -- a key: 'p:' and a path, or 'w:' and a wiki name
    PRIMARY KEY (document, position)
);
CREATE INDEX IF NOT EXISTS links_by_target ON links(target);
CREATE TABLE IF NOT EXISTS document_names (
    name     TEXT NOT NULL,
    document INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    rank     INTEGER NOT NULL,      -- 0 the best match for the name
    PRIMARY KEY (name, document)
);
CREATE INDEX IF NOT EXISTS document_names_by_document ON document_names(document);
"""

_NEXT_EMBEDDINGS = """
-- The next generation of vectors: another model's, made while those in embeddings keep answering,
-- and moved into embeddings when every chunk has one (docs/decisions/0040).
CREATE TABLE IF NOT EXISTS next_embeddings (
    content_hash TEXT PRIMARY KEY,
    vector       BLOB NOT NULL          -- little-endian float32, dimension in meta (next_dim)
);
"""

_DOCUMENT_FACTS = """
-- Each document's date and where it came from (kbseek.dates), and its front-matter scalars folded
-- as the filters compare them (kbseek.filters.field_rows): what after/before/where/sort read.
CREATE TABLE IF NOT EXISTS document_dates (
    document INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    day      TEXT NOT NULL,         -- YYYY-MM-DD
    source   TEXT NOT NULL          -- frontmatter:<field>, properties:<field> or mtime
);
CREATE INDEX IF NOT EXISTS document_dates_by_day ON document_dates(day);
CREATE TABLE IF NOT EXISTS document_fields (
    document INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    field    TEXT NOT NULL,
    value    TEXT NOT NULL,
    PRIMARY KEY (document, field, value)
);
CREATE INDEX IF NOT EXISTS document_fields_by_value ON document_fields(field, value, document);
"""

DDL = DDL.format(
    chunk_sections=_CHUNK_SECTIONS, document_texts=_DOCUMENT_TEXTS, links=_LINKS,
    next_embeddings=_NEXT_EMBEDDINGS, document_facts=_DOCUMENT_FACTS,
)  # fmt: skip

ADDED: dict[int, str] = {
    2: _CHUNK_SECTIONS, 3: _DOCUMENT_TEXTS, 4: _LINKS, 5: _NEXT_EMBEDDINGS, 6: _DOCUMENT_FACTS,
}  # fmt: skip
"""For a schema version, the statements that bring an index of the version before it up to it, when
that change only adds tables: the index is updated in place instead of rebuilt. 2: the sections
merged into a chunk (filled by the re-parse that parse version 4 causes, with every vector kept);
3: the documents' served text (filled by the re-parse of parse version 5, vectors kept); 4: the
documents' links and names (filled by the re-parse of parse version 6, vectors kept); 5: the next
generation of vectors, empty until a model switch (docs/decisions/0040); 6: the documents' dates and
front-matter fields (filled by the re-parse of parse version 8, vectors kept)."""


def open_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Check the index's schema, and create or rebuild it under a write lock when it must change.

    The common case, an index of this schema, writes nothing, so a read-only index opens. The
    version is checked again inside ``BEGIN IMMEDIATE`` because another process may be creating
    the same file: seen from outside its transaction, a half-made index looks like an old one.
    """
    version = schema_version(conn, path)
    if version == SCHEMA_VERSION:
        return
    _refuse_newer(version, path)
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(conn, path)
        _refuse_newer(version, path)
        if version is not None and updated_in_place(version):
            log.info("index schema %s is older than %s: adding its new tables", version, SCHEMA_VERSION)
            for newer in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _statements(ADDED[newer]):
                    conn.execute(statement)
        else:
            if version is not None and version < SCHEMA_VERSION:
                log.warning("index schema %s is older than %s: rebuilding the index", version, SCHEMA_VERSION)
                _drop_all(conn)
            for statement in _statements(DDL):
                conn.execute(statement)
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            (META_SCHEMA_VERSION, str(SCHEMA_VERSION)),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def updated_in_place(version: int) -> bool:
    """Whether every schema after ``version`` only added tables (``meta.updated_in_place``)."""
    return meta.updated_in_place(version, current=SCHEMA_VERSION, added=ADDED)


def schema_version(conn: sqlite3.Connection, path: Path) -> int | None:
    """The recorded schema version; ``None`` for a new, empty file; 0 for tables with no version."""
    try:
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = conn.execute("SELECT value FROM meta WHERE key=?", (META_SCHEMA_VERSION,)).fetchone()
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise
        raise IndexIncompatible(
            f"{path} is not a kbseek index ({exc}); delete it or choose another --index-dir"
        ) from exc
    except sqlite3.DatabaseError as exc:
        raise IndexIncompatible(
            f"{path} is not a kbseek index ({exc}); delete it or choose another --index-dir"
        ) from exc
    return int(row[0]) if row else 0


def _refuse_newer(version: int | None, path: Path) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise IndexIncompatible(
            f"the index {path} was written by a newer kbseek (schema {version}, this one "
            f"reads {SCHEMA_VERSION}); upgrade kbseek, or delete the index folder to rebuild it"
        )


def _drop_all(conn: sqlite3.Connection) -> None:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for name in names:
        if not name.startswith("sqlite_") and not name.startswith("chunks_fts_") and name != "chunks_vocab":
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def _statements(script: str) -> Iterator[str]:
    """The complete SQL statements of ``script``, so they can run inside one transaction.

    ``executescript`` would commit any open transaction first, and the schema must be created
    under the same lock that checked it.
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        yield pending.strip()


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLite's "another connection holds the lock" answers, as opposed to a damaged or foreign file."""
    return "locked" in str(exc) or "busy" in str(exc)


# -- looking at a file without opening a store (``kbseek doctor``) -------------------------------------


@dataclass(frozen=True)
class IndexFacts:
    """What a read-only look at an index file finds."""

    schema_version: int
    """0 for kbseek tables that record no version."""
    meta: IndexMeta
    counts: Counts | None
    """``None`` unless the file is of this kbseek's schema, or of an older one it updates in place (an
    older or newer one may lack the tables)."""


def inspect_index(db: Path) -> IndexFacts | None:
    """Look at an index file without writing anything, not even ``-wal`` or ``-shm`` files beside it.

    ``None`` when the file holds no kbseek tables yet. Raises :class:`IndexIncompatible` when the file
    is not an SQLite database (or a damaged one), ``ValueError`` when its schema version is not a
    number, ``OSError`` when it cannot be read at all.
    A store would upgrade an old schema on opening; this is for looking without touching.
    """
    try:
        with closing(_connect_read_only(db)) as conn:
            has_meta = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            if not has_meta:
                return None
            raw = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            version = int(raw.get(META_SCHEMA_VERSION, "0"))
            counts = None
            if version == SCHEMA_VERSION or updated_in_place(version):
                docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
                counts = Counts(int(docs), int(chunks))
    except sqlite3.DatabaseError as exc:
        raise IndexIncompatible(f"{db} is not a readable kbseek index ({exc})") from exc
    return IndexFacts(version, index_meta(raw), counts)


def _connect_read_only(db: Path) -> sqlite3.Connection:
    """A read-only connection that leaves no trace beside the database file."""
    wal = db.with_name(db.name + "-wal")
    shm = db.with_name(db.name + "-shm")
    # With a live WAL, `mode=ro` reads it (a writer may be active). Without one the file is complete,
    # and `immutable=1` keeps SQLite from creating -wal and -shm files just to read it.
    flags = "mode=ro" if wal.exists() and shm.exists() else "mode=ro&immutable=1"
    return sqlite3.connect(f"{db.resolve().as_uri()}?{flags}", uri=True, timeout=2.0)


def create_private(path: Path) -> None:
    """Create the database file empty and ``0600`` (owner only) if it is missing, before SQLite opens it.

    An empty file is an empty database to SQLite, and SQLite gives the ``-wal`` and ``-shm`` files it
    creates the database file's mode, so the whole index is private whatever the umask (which a
    threaded server must not change). An existing file is left as it is; on Windows a mode means
    nothing, so SQLite creates the file itself. A folder that is missing or not writable is left
    for SQLite to report, as before.
    """
    if os.name == "nt" or path.exists():
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return
    os.close(fd)
