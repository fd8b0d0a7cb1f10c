"""The one SQLite file that holds the index.

WAL mode lets searches read while an indexing pass writes; each thread gets
its own connection because ``sqlite3`` connections must not be shared across
threads. Writes go through :meth:`Store.transaction`, one per document, so a
crash mid-pass never leaves half a document behind.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbseek.errors import IndexIncompatible, IndexLocked, KbError
from kbseek.ingest.parsers import has_markup
from kbseek.models import Chunk, ParsedDocument
from kbseek.store.schema import BM25_WEIGHTS, DDL, RETIRED_CHUNKS_KEPT, SCHEMA_VERSION
from kbseek.text.analyzer import index_text
from kbseek.text.display import display_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DocumentState:
    """What the index remembers about a file, enough to decide whether to re-read it."""

    id: int
    path: str
    size: int
    mtime_ns: int
    content_hash: str
    parser: str


@dataclass(frozen=True)
class DocumentRow:
    id: int
    path: str
    parser: str
    size: int
    chars: int
    title: str
    tags: tuple[str, ...]
    date: str | None
    frontmatter: dict[str, object]
    warnings: tuple[str, ...]
    indexed_at: float


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as read back for answering: its own fields plus its document's."""

    rowid: int
    chunk_id: str
    document_id: int
    path: str
    title: str
    ordinal: int
    start: int
    end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]
    text: str
    content_hash: str
    tags: tuple[str, ...] = ()
    parser: str = ""
    """The document's parser: whether ``text`` is markup, for display text (``has_markup``)."""


_CHUNK_COLUMNS = (
    "c.id, c.chunk_id, c.document_id, d.path, d.title, c.ordinal, c.start, c.end, "
    "c.line_start, c.line_end, c.heading_path, c.text, c.content_hash, d.tags, d.parser"
)


def _chunk_row(r: sqlite3.Row | tuple) -> ChunkRow:
    return ChunkRow(
        rowid=r[0], chunk_id=r[1], document_id=r[2], path=r[3], title=r[4], ordinal=r[5],
        start=r[6], end=r[7], line_start=r[8], line_end=r[9],
        heading_path=tuple(json.loads(r[10])), text=r[11], content_hash=r[12], tags=tuple(json.loads(r[13])),
        parser=r[14],
    )  # fmt: skip


class Store:
    """Open (creating if needed) the index at ``path``.

    With ``create=False`` a missing index is opened as an empty one held in memory, so a command
    that only reads (``kbseek status``) can say "nothing indexed yet" without leaving an index
    folder behind in the user's notes.
    """

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self._memory = (
            None if create or path.exists() else f"file:kbseek-empty-{id(self)}?mode=memory&cache=shared"
        )
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._open_schema_waiting()

    # -- connections -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._memory or self.path, timeout=10.0, isolation_level=None, check_same_thread=False,
            uri=self._memory is not None,
        )  # fmt: skip
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolled back on any exception (``BaseException`` included)."""
        conn = self.conn
        with self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise IndexLocked(
                        f"the index {self.path} is being written by another kbseek process; "
                        "wait for it to finish or stop it"
                    ) from exc
                raise
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    # -- schema ------------------------------------------------------------------------------------

    def _open_schema_waiting(self, patience: float = 10.0) -> None:
        """Open the schema, waiting out another process that is creating the same index file.

        Two processes that open a new index at once race on switching it to WAL and creating the
        tables; SQLite answers the loser "database is locked" at once, without its busy handler,
        to avoid a deadlock. That loser is not looking at a foreign file, so it waits and tries again.
        """
        deadline = time.monotonic() + patience
        while True:
            try:
                self._open_schema()
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise IndexLocked(
                        f"the index {self.path} is being set up by another kbseek process ({exc}); "
                        "wait for it to finish or stop it"
                    ) from exc
                self.close()
                time.sleep(0.05)

    def _open_schema(self) -> None:
        """Check the index's schema, and create or rebuild it under a write lock when it must change.

        The common case, an index of this schema, writes nothing, so a read-only index opens. The
        version is checked again inside ``BEGIN IMMEDIATE`` because another process may be creating
        the same file: seen from outside its transaction, a half-made index looks like an old one.
        """
        conn = self.conn
        version = self._schema_version(conn)
        if version == SCHEMA_VERSION:
            return
        self._refuse_newer(version)
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._schema_version(conn)
            self._refuse_newer(version)
            if version is not None and version < SCHEMA_VERSION:
                log.warning("index schema %s is older than %s: rebuilding the index", version, SCHEMA_VERSION)
                self._drop_all(conn)
            for statement in _statements(DDL):
                conn.execute(statement)
            conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _schema_version(self, conn: sqlite3.Connection) -> int | None:
        """The recorded schema version; ``None`` for a new, empty file; 0 for tables with no version."""
        try:
            has_meta = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            if not has_meta:
                return None
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise
            raise IndexIncompatible(
                f"{self.path} is not a kbseek index ({exc}); delete it or choose another --index-dir"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise IndexIncompatible(
                f"{self.path} is not a kbseek index ({exc}); delete it or choose another --index-dir"
            ) from exc
        return int(row[0]) if row else 0

    def _refuse_newer(self, version: int | None) -> None:
        if version is not None and version > SCHEMA_VERSION:
            raise IndexIncompatible(
                f"the index {self.path} was written by a newer kbseek (schema {version}, this one "
                f"reads {SCHEMA_VERSION}); upgrade kbseek, or delete the index folder to rebuild it"
            )

    @staticmethod
    def _drop_all(conn: sqlite3.Connection) -> None:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            if (
                not name.startswith("sqlite_")
                and not name.startswith("chunks_fts_")
                and name != "chunks_vocab"
            ):
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                     (key, value))  # fmt: skip

    # -- documents ---------------------------------------------------------------------------------

    def document_states(self) -> dict[str, DocumentState]:
        rows = self.conn.execute("SELECT id, path, size, mtime_ns, content_hash, parser FROM documents")
        return {r[1]: DocumentState(*r) for r in rows}

    def write_document(
        self,
        conn: sqlite3.Connection,
        *,
        path: str,
        parser: str,
        size: int,
        mtime_ns: int,
        content_hash: str,
        parsed: ParsedDocument,
        replaces: int | None,
        vectors: dict[str, np.ndarray] | None = None,
    ) -> int:
        """Insert or replace one document with its chunks, FTS rows and new vectors; returns its id."""
        now = time.time()
        values = (
            path, parser, size, len(parsed.text), mtime_ns, content_hash, parsed.title,
            json.dumps(parsed.frontmatter, ensure_ascii=False, default=str),
            json.dumps(list(parsed.tags), ensure_ascii=False), parsed.date,
            json.dumps(list(parsed.warnings), ensure_ascii=False), now,
        )  # fmt: skip
        if replaces is None:
            cur = conn.execute(
                "INSERT INTO documents(path, parser, size, chars, mtime_ns, content_hash, title, frontmatter,"
                " tags, date, warnings, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                values,
            )
            doc_id = int(cur.lastrowid or 0)
        else:
            doc_id = replaces
            self._retire_chunks(conn, doc_id, now)
            conn.execute(
                "UPDATE documents SET path=?, parser=?, size=?, chars=?, mtime_ns=?, content_hash=?, title=?,"
                " frontmatter=?, tags=?, date=?, warnings=?, indexed_at=? WHERE id=?",
                (*values, doc_id),
            )
        self._insert_chunks(conn, doc_id, parsed.chunks)
        if vectors:
            self.put_vectors(conn, vectors)
        return doc_id

    def _insert_chunks(self, conn: sqlite3.Connection, doc_id: int, chunks: Sequence[Chunk]) -> None:
        # The lexical index holds display text: a URL or an HTML attribute in it is noise, and the
        # snippet's highlights are found in display text (docs/decisions/0009).
        parser = conn.execute("SELECT parser FROM documents WHERE id=?", (doc_id,)).fetchone()
        markup = parser is not None and has_markup(parser[0])
        for c in chunks:
            cur = conn.execute(
                "INSERT INTO chunks(chunk_id, document_id, ordinal, start, end, line_start, line_end,"
                " heading_path, text, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (c.chunk_id, doc_id, c.ordinal, c.start, c.end, c.line_start, c.line_end,
                 json.dumps(list(c.heading_path), ensure_ascii=False), c.text, c.content_hash),
            )  # fmt: skip
            conn.execute(
                "INSERT INTO chunks_fts(rowid, heading, body) VALUES (?, ?, ?)",
                (cur.lastrowid, index_text(" ".join(c.heading_path)),
                 index_text(display_text(c.text, markup=markup).text)),
            )  # fmt: skip
            conn.execute("DELETE FROM retired_chunks WHERE chunk_id=?", (c.chunk_id,))

    def _retire_chunks(self, conn: sqlite3.Connection, doc_id: int, now: float) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO retired_chunks(chunk_id, path, retired_at) "
            "SELECT c.chunk_id, d.path, ? FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.document_id=?",
            (now, doc_id),
        )
        conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE document_id=?)", (doc_id,)
        )
        conn.execute("DELETE FROM chunks WHERE document_id=?", (doc_id,))

    def touch_document(self, conn: sqlite3.Connection, doc_id: int, size: int, mtime_ns: int) -> None:
        """Record a new mtime for a file whose content hash did not change."""
        conn.execute("UPDATE documents SET size=?, mtime_ns=? WHERE id=?", (size, mtime_ns, doc_id))

    def delete_document(self, conn: sqlite3.Connection, doc_id: int) -> None:
        self._retire_chunks(conn, doc_id, time.time())
        conn.execute("DELETE FROM documents WHERE id=?", (doc_id,))

    def prune(self, conn: sqlite3.Connection) -> None:
        """Drop vectors no chunk uses and the oldest retired ids beyond the kept number."""
        conn.execute("DELETE FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)")
        conn.execute(
            "DELETE FROM retired_chunks WHERE chunk_id IN (SELECT chunk_id FROM retired_chunks "
            "ORDER BY retired_at DESC LIMIT -1 OFFSET ?)",
            (RETIRED_CHUNKS_KEPT,),
        )

    def replace_skipped(self, conn: sqlite3.Connection, skipped: Iterable[tuple[str, str]]) -> None:
        conn.execute("DELETE FROM skipped")
        conn.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", list(skipped))

    def skipped(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.conn.execute("SELECT path, reason FROM skipped ORDER BY path")]

    # -- reading -----------------------------------------------------------------------------------

    def counts(self) -> tuple[int, int]:
        docs = self.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        chunks = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return int(docs), int(chunks)

    def embedded_count(self) -> int:
        """Chunks whose content has a vector: what semantic search would cover with the model loaded."""
        row = self.conn.execute(
            "SELECT count(*) FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
        ).fetchone()
        return int(row[0])

    def document(self, path: str) -> DocumentRow | None:
        r = self.conn.execute(
            "SELECT id, path, parser, size, chars, title, tags, date, frontmatter, warnings, indexed_at"
            " FROM documents WHERE path=?",
            (path,),
        ).fetchone()
        return _document_row(r) if r else None

    def documents(self) -> list[DocumentRow]:
        rows = self.conn.execute(
            "SELECT id, path, parser, size, chars, title, tags, date, frontmatter, warnings, indexed_at"
            " FROM documents ORDER BY path"
        )
        return [_document_row(r) for r in rows]

    def paths_within_size(self, max_bytes: int, among: Collection[str] | None = None) -> list[str]:
        """Indexed paths whose recorded size is at most ``max_bytes`` (D8: no filesystem probe)."""
        if among is None:
            rows = self.conn.execute("SELECT path FROM documents WHERE size <= ? ORDER BY path", (max_bytes,))
            return [r[0] for r in rows]
        wanted = list(among)
        out: list[str] = []
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT path FROM documents WHERE size <= ? AND path IN ({marks})", (max_bytes, *part)
            )
            out.extend(r[0] for r in rows)
        return sorted(out)

    def lexical(
        self,
        expression: str,
        *,
        limit: int,
        path_prefix: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[tuple[int, float]]:
        """(chunk rowid, BM25 score, higher is better) for an already compiled FTS5 expression."""
        sql = [
            f"SELECT chunks_fts.rowid, -bm25(chunks_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]}) AS score"
            " FROM chunks_fts"
        ]
        params: list[object] = [expression]
        filters = _filter_sql(path_prefix, tags, params)
        if filters:
            sql.append("JOIN chunks c ON c.id = chunks_fts.rowid JOIN documents d ON d.id = c.document_id")
        sql.append("WHERE chunks_fts MATCH ?")
        sql.extend(f"AND {f}" for f in filters)
        sql.append("ORDER BY score DESC LIMIT ?")
        params.append(limit)
        try:
            rows = self.conn.execute(" ".join(sql), params).fetchall()
        except sqlite3.OperationalError as exc:
            raise KbError(f"the lexical engine rejected a compiled query ({exc}); this is a bug") from exc
        return [(int(r[0]), float(r[1])) for r in rows]

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each term (absent terms are missing from the result)."""
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        rows = self.conn.execute(f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", list(terms))
        return {r[0]: int(r[1]) for r in rows}

    def rows_matching_each_term(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
        """Which of ``terms`` each of ``rowids`` contains, read from the stored analyzed tokens.

        The FTS table keeps the analyzer's output as space-separated terms, so this is
        the index's own view of the chunk, without re-analyzing its text.
        """
        wanted = set(terms)
        out: dict[int, set[str]] = {r: set() for r in rowids}
        for i in range(0, len(rowids), 500):
            part = list(rowids[i : i + 500])
            marks = ",".join("?" * len(part))
            sql = f"SELECT rowid, heading, body FROM chunks_fts WHERE rowid IN ({marks})"
            for rowid, heading, body in self.conn.execute(sql, part):
                out[int(rowid)] = wanted.intersection([*heading.split(), *body.split()])
        return out

    def filtered_rowids(self, path_prefix: str | None, tags: Sequence[str]) -> set[int] | None:
        """Chunk rowids passing the filters, or ``None`` when there are no filters."""
        params: list[object] = []
        filters = _filter_sql(path_prefix, tags, params)
        if not filters:
            return None
        where = "WHERE " + " AND ".join(filters)
        sql = f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id {where}"
        return {int(r[0]) for r in self.conn.execute(sql, params)}

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for i in range(0, len(rowids), 500):
            part = list(rowids[i : i + 500])
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id"
                f" WHERE c.id IN ({marks})",
                part,
            )
            out.update((r[0], _chunk_row(r)) for r in rows)
        return out

    def chunk(self, chunk_id: str) -> ChunkRow | None:
        r = self.conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.chunk_id=?",
            (chunk_id,),
        ).fetchone()
        return _chunk_row(r) if r else None

    def neighbours(self, document_id: int, first: int, last: int) -> list[ChunkRow]:
        rows = self.conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.document_id=? AND c.ordinal BETWEEN ? AND ? ORDER BY c.ordinal",
            (document_id, first, last),
        )
        return [_chunk_row(r) for r in rows]

    def retired(self, chunk_id: str) -> tuple[str, float] | None:
        r = self.conn.execute(
            "SELECT path, retired_at FROM retired_chunks WHERE chunk_id=?", (chunk_id,)
        ).fetchone()
        return (r[0], float(r[1])) if r else None

    # -- vectors -----------------------------------------------------------------------------------

    def known_vectors(self, hashes: Iterable[str]) -> set[str]:
        """Which of these content hashes already have a vector."""
        found: set[str] = set()
        hs = list(dict.fromkeys(hashes))
        for i in range(0, len(hs), 500):
            part = hs[i : i + 500]
            marks = ",".join("?" * len(part))
            found.update(
                r[0] for r in self.conn.execute(f"SELECT content_hash FROM embeddings WHERE content_hash IN ({marks})",
                                                part)
            )  # fmt: skip
        return found

    def chunk_vectors(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(chunk rowids, float32 matrix) for every chunk that has a vector."""
        rows = self.conn.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash ORDER BY c.id"
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.empty((len(rows), dim), dtype=np.float32)
        for i, r in enumerate(rows):
            matrix[i] = np.frombuffer(r[1], dtype="<f4")
        return ids, matrix

    def vector_rowids(self) -> np.ndarray:
        """Rowids of every chunk that has a vector, sorted."""
        rows = self.conn.execute(
            "SELECT c.id FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash ORDER BY c.id"
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors_for_rowids(self, rowids: Sequence[int], dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, float32 matrix) for the given chunk rowids that have a vector."""
        ids: list[int] = []
        vectors: list[np.ndarray] = []
        for i in range(0, len(rowids), 500):
            part = list(rowids[i : i + 500])
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(
                f"SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
                f" WHERE c.id IN ({marks})",
                part,
            ):
                ids.append(int(r[0]))
                vectors.append(np.frombuffer(r[1], dtype="<f4"))
        matrix = np.vstack(vectors).astype(np.float32) if vectors else np.empty((0, dim), dtype=np.float32)
        return np.asarray(ids, dtype=np.int64), matrix

    def chunks_without_vectors(self) -> list[tuple[str, tuple[str, ...], str]]:
        """(content hash, heading path, text) for chunks whose content has no vector yet."""
        rows = self.conn.execute(
            "SELECT c.content_hash, c.heading_path, c.text FROM chunks c"
            " LEFT JOIN embeddings e ON e.content_hash = c.content_hash WHERE e.content_hash IS NULL"
            " GROUP BY c.content_hash"
        )
        return [(r[0], tuple(json.loads(r[1])), r[2]) for r in rows]

    def put_vectors(self, conn: sqlite3.Connection, vectors: dict[str, np.ndarray]) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO embeddings(content_hash, vector) VALUES (?, ?)",
            [(h, np.asarray(v, dtype="<f4").tobytes()) for h, v in vectors.items()],
        )

    def clear_vectors(self, conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM embeddings")


def _document_row(r: tuple) -> DocumentRow:
    return DocumentRow(
        id=r[0], path=r[1], parser=r[2], size=r[3], chars=r[4], title=r[5], tags=tuple(json.loads(r[6])),
        date=r[7], frontmatter=json.loads(r[8]), warnings=tuple(json.loads(r[9])), indexed_at=r[10],
    )  # fmt: skip


def _filter_sql(path_prefix: str | None, tags: Sequence[str], params: list[object]) -> list[str]:
    """SQL conditions (to be AND-ed) on ``d`` for the search filters; appends their parameters."""
    clauses: list[str] = []
    if path_prefix:
        escaped = path_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        clauses.append("d.path LIKE ? ESCAPE '\\'")
        params.append(escaped + "%")
    for tag in tags:
        clauses.append("EXISTS (SELECT 1 FROM json_each(d.tags) WHERE lower(json_each.value) = lower(?))")
        params.append(tag)
    return clauses


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


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """SQLite's "another connection holds the lock" answers, as opposed to a damaged or foreign file."""
    return "locked" in str(exc) or "busy" in str(exc)
