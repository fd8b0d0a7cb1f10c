"""The PostgreSQL index's layout: one schema per knowledge base, its tables, its version, and its lock key.

Every knowledge base in a database lives in its own schema, ``kbseek_<name>``, so several teams'
indexes share one server without a table of theirs ever touching another's, and dropping the schema
removes one index whole. The tables mirror the SQLite ones (``kbseek.store.sqlite.schema``) except for the
lexical index: SQLite's FTS5 is replaced by a postings table with per-chunk term frequencies, from
which ``postgres.py`` computes FTS5's own BM25 (docs/decisions/0030).

Like the SQLite index, this is derived data: an index of an older schema is dropped and rebuilt by
the next pass, and one written by a newer kbseek is refused.

The pgvector versions kbseek knows are here too (:data:`PGVECTOR_MINIMUM` and the features after
it): the store refuses an older one when it opens, ``postgres_vectors`` uses a feature only where the
installed version has it, and ``kbseek doctor`` reports the same verdicts. The installed version is
read by :func:`pgvector_version` alone.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shlex
from dataclasses import dataclass, field

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from kbseek.errors import ConfigError, IndexIncompatible
from kbseek.store import meta
from kbseek.store.meta import META_SCHEMA_VERSION

log = logging.getLogger(__name__)

SCHEMA_VERSION = 6

SCHEMA_PREFIX = "kbseek_"
"""Every knowledge base's schema starts with this: no name can collide with ``public``, ``pg_*`` or
another application's schema, and a person listing schemas sees which are kbseek's."""

KB_NAME = re.compile(r"[a-z0-9_]{1,48}")
"""What a knowledge-base name may be: a schema name that needs no quoting and fits PostgreSQL's
63-byte limit with the prefix."""

LOCK_CLASS = 0x6B627365
"""The first half of every kbseek advisory-lock key ("kbse"); the second half names the knowledge
base, so two knowledge bases never wait for each other and no other application's locks collide."""

SETUP_LOCK = 0
"""The second half of the key taken while creating any knowledge base's schema (and the ``vector``
extension, which two schemas created at once would otherwise both try to create)."""

TABLES = (
    "meta",
    "documents",
    "document_tags",
    "chunks",
    "postings",
    "lexical_stats",
    "chunk_sections",
    "embeddings",
    "retired_chunks",
    "skipped",
    "document_texts",
    "vocabulary",
    "links",
    "document_names",
    "next_embeddings",
    "document_dates",
    "document_fields",
)
"""Every table of the layout, so an older one can be dropped table by table and a schema holding
anything else is recognised as not kbseek's."""

# Texts that are sorted, compared as ranges or matched byte for byte are COLLATE "C": code-point
# order, as SQLite and Python sort, whatever locale the database was created with. Free text that may
# hold a NUL character (a chunk's text, a title) is bytea: PostgreSQL's text cannot hold NUL, and
# a Markdown file may.
DDL = """
CREATE TABLE meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE documents (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path         text COLLATE "C" NOT NULL UNIQUE,
    parser       text NOT NULL,
    size         bigint NOT NULL,          -- bytes on disk when indexed (D8)
    chars        bigint NOT NULL,          -- length of the served text
    mtime_ns     bigint NOT NULL,
    content_hash text NOT NULL,
    title        bytea NOT NULL,           -- UTF-8
    frontmatter  text NOT NULL,            -- JSON object
    tags         text NOT NULL,            -- JSON array of strings, case kept
    date         text,
    warnings     text NOT NULL,            -- JSON array of strings
    indexed_at   double precision NOT NULL
);

-- The tags again, folded (ASCII letters lower-cased), for the tag filter.
CREATE TABLE document_tags (
    document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    tag         text COLLATE "C" NOT NULL,
    PRIMARY KEY (document_id, tag)
);
CREATE INDEX document_tags_by_tag ON document_tags(tag);

CREATE TABLE chunks (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- a sequence: never reused
    chunk_id      text COLLATE "C" NOT NULL UNIQUE,
    document_id   bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal       bigint NOT NULL,
    start         bigint NOT NULL,
    "end"         bigint NOT NULL,
    line_start    bigint NOT NULL,
    line_end      bigint NOT NULL,
    heading_path  text NOT NULL,           -- JSON array of strings
    text          bytea NOT NULL,          -- UTF-8
    content_hash  text COLLATE "C" NOT NULL,
    heading_terms bigint NOT NULL,         -- BM25's document length is the two added together
    body_terms    bigint NOT NULL
);
CREATE INDEX chunks_by_document ON chunks(document_id, ordinal);
CREATE INDEX chunks_by_content ON chunks(content_hash);

-- The analyzed terms of each chunk, as ingest gave them, with how often each occurs where, and the
-- chunk's length again: BM25 then reads a term's postings from the index alone, with no chunk row.
CREATE TABLE postings (
    term        text COLLATE "C" NOT NULL,
    chunk       bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    tf_heading  integer NOT NULL,
    tf_body     integer NOT NULL,
    chunk_terms bigint NOT NULL,           -- heading_terms + body_terms of the chunk
    PRIMARY KEY (term, chunk) INCLUDE (tf_heading, tf_body, chunk_terms)
);
CREATE INDEX postings_by_chunk ON postings(chunk);

-- BM25's collection statistics, kept by the writer: one row.
CREATE TABLE lexical_stats (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    chunks bigint NOT NULL,
    terms  bigint NOT NULL
);
INSERT INTO lexical_stats (chunks, terms) VALUES (0, 0);

-- Sections merged into a chunk after its start, so a hit inside one names its own heading.
CREATE TABLE chunk_sections (
    chunk        bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    position     bigint NOT NULL,          -- characters into the chunk's text
    heading_path text NOT NULL             -- JSON array of strings
);
CREATE INDEX chunk_sections_by_chunk ON chunk_sections(chunk, position);

-- Vectors keyed by chunk content, so unchanged text is never embedded twice. No fixed dimension:
-- fixing it at the first vector would take ALTER TABLE, whose lock makes every reader wait.
CREATE TABLE embeddings (
    content_hash text COLLATE "C" PRIMARY KEY,
    vector       vector NOT NULL
);

-- Chunk ids that existed once, so a stale id gets a precise answer (T5).
CREATE TABLE retired_chunks (
    chunk_id   text COLLATE "C" PRIMARY KEY,
    path       text NOT NULL,
    retired_at double precision NOT NULL
);
CREATE INDEX retired_chunks_by_age ON retired_chunks(retired_at);

CREATE TABLE skipped (
    path   text COLLATE "C" PRIMARY KEY,
    reason text NOT NULL
);
"""

_DOCUMENT_TEXTS = """
-- The served text of each document, so a server without the files can serve it (decision 0031).
CREATE TABLE document_texts (
    document_id bigint PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    text        bytea NOT NULL        -- zlib-compressed UTF-8 (store.conventions.pack_text)
);
"""
DDL += _DOCUMENT_TEXTS

_VOCABULARY = """
-- How many chunks hold each term (heading or body), kept by the writer with the postings: a term's
-- IDF, and whether it is rare enough to bound a query by (docs/decisions/0033), is one index
-- lookup instead of a count of its whole posting list. A term no chunk holds has no row.
CREATE TABLE vocabulary (
    term   text COLLATE "C" PRIMARY KEY,
    chunks bigint NOT NULL CHECK (chunks > 0)
);
"""
DDL += _VOCABULARY

_LINKS = """
-- Each document's links as written, and the names a link may call a document by (store.links);
-- IF NOT EXISTS: adding them to a schema that already holds them changes nothing.
CREATE TABLE IF NOT EXISTS links (
    document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position    integer NOT NULL,       -- the order written
    target      text COLLATE "C" NOT NULL, -- a key: 'p:' and a path, or 'w:' and a wiki name
    PRIMARY KEY (document_id, position)
);
CREATE INDEX IF NOT EXISTS links_by_target ON links(target);
CREATE TABLE IF NOT EXISTS document_names (
    name        text COLLATE "C" NOT NULL,
    document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    rank        integer NOT NULL,       -- 0 the best match for the name
    PRIMARY KEY (name, document_id)
);
CREATE INDEX IF NOT EXISTS document_names_by_document ON document_names(document_id);
"""
DDL += _LINKS

_NEXT_EMBEDDINGS = """
-- The next generation of vectors: another model's, made while those in embeddings keep answering,
-- and moved into embeddings when every chunk has one (docs/decisions/0040). No approximate index:
-- nothing searches it before it is promoted.
CREATE TABLE IF NOT EXISTS next_embeddings (
    content_hash text COLLATE "C" PRIMARY KEY,
    vector       vector NOT NULL
);
"""
DDL += _NEXT_EMBEDDINGS

_DOCUMENT_FACTS = """
-- Each document's date and its source (kbseek.dates), and its front-matter scalars folded as the
-- filters compare them (kbseek.filters.field_rows): what after/before/where/sort read.
CREATE TABLE IF NOT EXISTS document_dates (
    document_id bigint PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    day         text COLLATE "C" NOT NULL,  -- YYYY-MM-DD
    source      text NOT NULL               -- frontmatter:<field>, properties:<field> or mtime
);
CREATE INDEX IF NOT EXISTS document_dates_by_day ON document_dates(day);
CREATE TABLE IF NOT EXISTS document_fields (
    document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    field       text COLLATE "C" NOT NULL,
    value       text COLLATE "C" NOT NULL,
    PRIMARY KEY (document_id, field, value)
);
CREATE INDEX IF NOT EXISTS document_fields_by_value ON document_fields(field, value, document_id);
"""
DDL += _DOCUMENT_FACTS

ADDED: dict[int, str] = {
    2: _DOCUMENT_TEXTS,
    # The postings' key is (term, chunk), so a term's rows count the chunks holding it.
    3: _VOCABULARY
    + "INSERT INTO vocabulary (term, chunks) SELECT term, count(*) FROM postings GROUP BY term;",
    4: _LINKS,
    5: _NEXT_EMBEDDINGS,
    6: _DOCUMENT_FACTS,
}
"""For a schema version, what brings a schema of the version before it up to it when the change only
adds tables: done in place, as the SQLite store does (``store.sqlite.schema.ADDED``). 2: the documents' served
text, filled by the re-parse that parse version 5 causes, every vector kept. 3: the vocabulary, filled
from the postings in the same transaction. 4: the documents' links and names, filled by the
re-parse that parse version 6 causes, vectors kept. 5: the next generation of vectors, empty until a
model switch (docs/decisions/0040). 6: the documents' dates and front-matter fields, filled by the
re-parse of parse version 8, vectors kept."""


def schema_name(kb_name: str) -> str:
    """The schema of knowledge base ``kb_name``; refuses a name that could not safely be one."""
    if not isinstance(kb_name, str) or not KB_NAME.fullmatch(kb_name):
        raise ConfigError(
            f"the knowledge-base name {kb_name!r} cannot name a PostgreSQL index: use 1 to 48 "
            "lower-case ASCII letters, digits or underscores (for example 'team_notes')"
        )
    return SCHEMA_PREFIX + kb_name


def lock_key(schema: str) -> int:
    """The second half of the knowledge base's advisory-lock key: the same in every process.

    Python's ``hash`` differs between processes, so the key is cut from a digest; 31 bits keep it a
    non-negative int4, which ``pg_locks`` shows as the same number. Two names sharing a key would
    only make their writers wait for each other, never mix their data.
    """
    digest = hashlib.blake2b(schema.encode("ascii"), digest_size=4).digest()
    return (int.from_bytes(digest, "big") & 0x7FFF_FFFF) or 1  # 0 is SETUP_LOCK


def display_url(url: str) -> str:
    """The connection URL as a person may see it: everything but the password (and other secrets).

    Parsed with libpq's own rules, so a password in the userinfo, in ``?password=`` or in a
    ``key=value`` string is left out alike; what remains is rebuilt, never the original string.
    """
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(an unreadable URL)"
    user = params.get("user")
    host = str(params.get("host") or "")
    port = params.get("port")
    dbname = params.get("dbname")
    out = "postgresql://"
    if user:
        out += f"{user}@"
    socket_dir = host.startswith("/")
    if host and not socket_dir:
        out += host
        if port:
            out += f":{port}"
    out += f"/{dbname or ''}"
    if socket_dir:  # a socket folder and its port name one server: a message naming it keeps both
        out += f"?host={host}" + (f"&port={port}" if port else "")
    return out


# -- pgvector versions -----------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class PgvectorVersion:
    """A pgvector version as ``pg_extension.extversion`` gives it, ordered by its numbers."""

    major: int
    minor: int
    patch: int = 0
    text: str = field(default="", compare=False)
    """The version as the server wrote it, shown in messages (``extversion`` is plain ``0.8.0``)."""

    @classmethod
    def parse(cls, text: str) -> PgvectorVersion:
        """``0.8.0`` → (0, 8, 0). A string without leading numbers reads as 0.0.0 (older than every
        feature, so refused with its own text in the message) rather than raising: it can only come
        from a build kbseek cannot vouch for."""
        found = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
        if found is None:
            return cls(0, 0, 0, text)
        major, minor, patch = found.groups()
        return cls(int(major), int(minor), int(patch or 0), text)

    def __str__(self) -> str:
        return self.text or f"{self.major}.{self.minor}.{self.patch}"


PGVECTOR_MINIMUM = PgvectorVersion(0, 5, 0)
"""The oldest pgvector an index opens with. 0.5.0 added the HNSW index type, which is what the
approximate vector index is (``postgres_vectors``, decision 0032), with its ``hnsw.ef_search``
setting, and fixed cosine distances out of range. On an older one the writer's index build fails
(``access method "hnsw" does not exist``) after a whole pass, so the store refuses it when it opens,
before anything is written, and says how to upgrade."""

PGVECTOR_VALIDATES_SETTINGS = PgvectorVersion(0, 6, 0)
"""0.6.0 builds HNSW indexes in parallel and rejects an ``hnsw.*`` setting it does not define (an
error, where 0.5 ignored it): from here on, setting a later version's parameter breaks the
statement, which is why each one is used only from its own version on."""

PGVECTOR_HALFVEC = PgvectorVersion(0, 7, 0)
"""0.7.0 added ``halfvec`` (half-precision vectors, half the index size), ``sparsevec`` and bit
vectors. kbseek stores ``vector`` (float4); from this version its approximate index is over
``vector::halfvec(d)`` (``postgres_vectors``, decision 0045), half the memory of a ``vector`` one,
and a search still scores the float4 vectors it returns."""

PGVECTOR_ITERATIVE_SCAN = PgvectorVersion(0, 8, 0)
"""0.8.0 added iterative index scans (``hnsw.iterative_scan``, ``hnsw.max_scan_tuples``): a filtered
graph search goes on past ``ef_search`` until it has the rows asked for. Before it,
``postgres_vectors`` answers a large filtered search with one wider graph search, then exactly when
that finds too few rows: slower, and as complete (``k`` allowed rows whenever there are ``k``)."""


def pgvector_version(conn: psycopg.Connection[TupleRow]) -> PgvectorVersion | None:
    """The ``vector`` extension's installed version in this database; ``None`` when it is not installed.

    The one place the version is read, once when a store opens (:func:`extension_schema`), once per
    connection by ``postgres_vectors``, and by ``kbseek doctor``; callers in other modules call it as
    ``postgres_schema.pgvector_version`` so a test can stand another version in for all of them.
    """
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return None if row is None else PgvectorVersion.parse(str(row[0]))


def pgvector_shortfalls(version: PgvectorVersion) -> list[str]:
    """What kbseek does less well with ``version`` than with the newest feature it uses: empty from
    :data:`PGVECTOR_ITERATIVE_SCAN` on (and below :data:`PGVECTOR_MINIMUM`, which is refused)."""
    if version < PGVECTOR_ITERATIVE_SCAN:
        return [
            f"it has no iterative index scans (pgvector {PGVECTOR_ITERATIVE_SCAN} added them), so a search "
            "filtered by path or tag over many chunks takes a slower path: a wider graph search, then an "
            "exact scan of the allowed chunks when that finds too few"
        ]
    return []


def pgvector_upgrade(conn: psycopg.Connection[TupleRow], wanted: PgvectorVersion) -> str:
    """How to get pgvector ``wanted`` or newer into this database: ``ALTER EXTENSION vector UPDATE``
    when the server already has such a version (extensions are installed per server, updated per
    database), else install a newer pgvector on the server first. Read-only: doctor words its fix so."""
    row = conn.execute(
        "SELECT current_database(), current_setting('server_version_num')::int / 10000,"
        " (SELECT array_agg(version) FROM pg_available_extension_versions WHERE name = 'vector')"
    ).fetchone()
    assert row is not None
    database, major = str(row[0]), int(row[1])
    versions = [PgvectorVersion.parse(str(v)) for v in row[2] or ()]
    newest = max(versions, default=None)
    update = (
        f"ALTER EXTENSION vector UPDATE; in the database {database} as the extension's owner or a superuser "
        f"(for example psql -d {shlex.quote(database)} -c 'ALTER EXTENSION vector UPDATE')"
    )
    if newest is not None and newest >= wanted:
        return f"the server has pgvector {newest}: run {update}"
    has = f"the newest it has is {newest}" if newest is not None else "it has none installed"
    return (
        f"install pgvector {wanted} or newer on the database server ({has}): from the PostgreSQL "
        f"project's apt repository (apt.postgresql.org, package postgresql-{major}-pgvector), a source "
        "build (https://github.com/pgvector/pgvector#installation) or the platform's own package; "
        f"then run {update}"
    )


def require_pgvector(conn: psycopg.Connection[TupleRow], *, location: str) -> PgvectorVersion | None:
    """The installed pgvector, refused with :class:`ConfigError` below :data:`PGVECTOR_MINIMUM`
    (naming both versions and the upgrade); ``None`` when the extension is not installed."""
    version = pgvector_version(conn)
    if version is None:
        return None
    if version < PGVECTOR_MINIMUM:
        raise ConfigError(
            f"the database {location} has pgvector {version}, and kbseek needs {PGVECTOR_MINIMUM} or newer "
            f"(its HNSW index, which pgvector {PGVECTOR_MINIMUM} added); {pgvector_upgrade(conn, PGVECTOR_MINIMUM)}"
        )
    for shortfall in pgvector_shortfalls(version):
        log.info("pgvector %s in %s: %s", version, location, shortfall)
    return version


# -- creating and checking the schema ------------------------------------------------------------------


def open_schema(conn: psycopg.Connection[TupleRow], schema: str, *, location: str) -> None:
    """Check the knowledge base's schema, and create or rebuild it when it must change.

    The common case, a schema of this version, writes nothing and takes no lock; the store's open then
    checks pgvector's version through :func:`extension_schema`, as a reader's does. Otherwise the setup
    runs in one transaction under the setup lock, and the version is checked again inside it: another
    process may be creating the same schema at the same moment. A pgvector older than
    :data:`PGVECTOR_MINIMUM` (installed, or the one ``CREATE EXTENSION`` just installed) is refused
    there before any table is written, and the transaction rolled back.
    """
    if schema_version(conn, schema, location=location) == SCHEMA_VERSION:
        return
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, SETUP_LOCK))
        version = schema_version(conn, schema, location=location)
        extension = _create_extension(conn, location) if version != SCHEMA_VERSION else None
        if version is not None and updated_in_place(version):
            log.info("index schema %s of %s is older than %s: adding its new tables", version, location,
                     SCHEMA_VERSION)  # fmt: skip
            conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
            for newer in range(version + 1, SCHEMA_VERSION + 1):
                conn.execute(ADDED[newer])
            conn.execute(
                "UPDATE meta SET value = %s WHERE key = %s", (str(SCHEMA_VERSION), META_SCHEMA_VERSION)
            )
        elif version != SCHEMA_VERSION:
            if version is not None:
                log.warning(
                    "index schema %s of %s is older than %s: rebuilding the index",
                    version,
                    location,
                    SCHEMA_VERSION,
                )
                for table in reversed(TABLES):
                    conn.execute(
                        sql.SQL("DROP TABLE IF EXISTS {}.{} CASCADE").format(
                            sql.Identifier(schema), sql.Identifier(table)
                        )
                    )
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("SET LOCAL search_path TO {}, {}").format(
                sql.Identifier(schema), sql.Identifier(extension or "public")
            ))  # fmt: skip
            conn.execute(DDL)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s)", (META_SCHEMA_VERSION, str(SCHEMA_VERSION))
            )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def updated_in_place(version: int) -> bool:
    """Whether every schema after ``version`` only added tables (``meta.updated_in_place``)."""
    return meta.updated_in_place(version, current=SCHEMA_VERSION, added=ADDED)


def schema_tables(conn: psycopg.Connection[TupleRow], schema: str) -> set[str]:
    """The names of the tables (and views) in ``schema``, whoever made them: what tells an index this
    code made from a schema that holds something else."""
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
        (schema,),
    )
    return {str(r[0]) for r in rows}


def schema_version(conn: psycopg.Connection[TupleRow], schema: str, *, location: str) -> int | None:
    """The recorded version; ``None`` when there is no schema or an empty one (nothing to keep).

    A schema holding tables that are not kbseek's, or kbseek tables without a version, is refused
    rather than dropped: only a schema this code recognises as an index is ever rebuilt.
    """
    tables = schema_tables(conn, schema)
    if not tables:
        return None
    foreign = tables - set(TABLES)
    version: int | None = None
    if "meta" in tables and not foreign:
        row = conn.execute(
            sql.SQL("SELECT value FROM {}.meta WHERE key = %s").format(sql.Identifier(schema)),
            (META_SCHEMA_VERSION,),
        ).fetchone()
        version = _int_or_none(row[0]) if row else None
    if version is None:
        raise IndexIncompatible(
            f"the schema {schema} in {location} holds tables that are not a kbseek index "
            f"({', '.join(sorted(foreign or tables))}); choose another knowledge-base name, or drop "
            "that schema if nothing else uses it"
        )
    if version > SCHEMA_VERSION:
        raise IndexIncompatible(
            f"the index {location} was written by a newer kbseek (schema {version}, this one reads "
            f"{SCHEMA_VERSION}); upgrade kbseek, or drop the schema {schema} to rebuild it"
        )
    return version


def extension_schema(conn: psycopg.Connection[TupleRow], *, location: str | None = None) -> str | None:
    """The schema holding pgvector's ``vector`` type, or ``None`` when the extension is not installed;
    raises :class:`ConfigError` when the installed pgvector is older than :data:`PGVECTOR_MINIMUM`.

    The index's connections put it on their ``search_path`` after the knowledge base's own schema:
    the extension lives wherever it was installed (``public`` by default, but not necessarily). Every
    store open asks this once, a writer's after :func:`open_schema` and a reader's once it finds its
    schema, so this is where both refuse a pgvector they could not search with, rather than failing
    at the first index build or search as a bug. ``location`` names the database in that message
    (by default, the connection's, without its password).
    """
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'vector'"
    ).fetchone()
    if row is None:
        return None
    require_pgvector(conn, location=location or display_url(conn.info.dsn))
    return str(row[0])


def _create_extension(conn: psycopg.Connection[TupleRow], location: str) -> str | None:
    """Create pgvector's extension unless it is there; the schema it is in (:func:`extension_schema`,
    which refuses it when too old, whether it was there or has just been created)."""
    found = extension_schema(conn, location=location)
    if found is not None:
        return found
    try:
        conn.execute("SAVEPOINT extension")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("RELEASE SAVEPOINT extension")
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.FeatureNotSupported) as exc:
        raise ConfigError(
            f"the database {location} has no pgvector extension and this user cannot add it "
            f"({exc.diag.message_primary or exc}); ask its administrator to run "
            "`CREATE EXTENSION vector` in it once"
        ) from exc
    except psycopg.errors.UndefinedFile as exc:
        raise ConfigError(
            f"the PostgreSQL server of {location} does not have pgvector installed "
            f"({exc.diag.message_primary or exc}); install pgvector on the server, or use another one"
        ) from exc
    return extension_schema(conn, location=location)


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None
