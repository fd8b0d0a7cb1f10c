"""The checks of an index kept in PostgreSQL: the database, pgvector, the knowledge base's schema, and
the advisory lock its writers take.

Doctor looks the way a person would with ``psql``, on one connection of its own whose transactions
are all read-only: it never opens a ``PostgresStore`` (whose setup creates the extension and the
schema), and every query here only reads the catalogs and the schema's tables. A person sees the
database only by :func:`~kbseek.store.postgres.schema.display_url`, never with its password, wherever
that comes from (the URL, ``PGPASSWORD``, ``~/.pgpass``). The queries have short timeouts, because a
server that hangs, or a writer rebuilding the schema, must become a check's answer, not a doctor that
never finishes.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from kbseek.cli.doctor.result import CheckResult, guarded, index_verdict
from kbseek.cli.doctor.system import human_bytes
from kbseek.errors import ConfigError
from kbseek.store.meta import META_SCHEMA_VERSION, index_meta
from kbseek.store.postgres import schema as postgres_schema
from kbseek.store.postgres.lock import PASS_KEY_SUFFIX
from kbseek.store.postgres.schema import (
    LOCK_CLASS,
    PGVECTOR_ITERATIVE_SCAN,
    PGVECTOR_MINIMUM,
    SCHEMA_PREFIX,
    SCHEMA_VERSION,
    TABLES,
    display_url,
    lock_key,
    pgvector_shortfalls,
    pgvector_upgrade,
    schema_name,
)

Conn = psycopg.Connection[TupleRow]

CONNECT_TIMEOUT_S = 5
"""How long doctor waits for the server: long enough for a distant one, short enough that a wrong host
or a firewall that drops packets is reported while the person is still looking."""
STATEMENT_TIMEOUT = "5s"
LOCK_TIMEOUT = "2s"
"""A writer rebuilding the schema holds its tables' locks for the whole rebuild: reading them waits
this long at most, then says the index is busy."""
MIN_SERVER = 12
"""The search statement materialises its CTEs (``WITH … AS MATERIALIZED``), which PostgreSQL 12 added."""

PERMISSIONS_ELSEWHERE = CheckResult(
    "permissions", "skip", "the index is in PostgreSQL: the database's roles and grants decide who reads "
    "it, not file modes (the index folder's modes apply only to a SQLite index)",
)  # fmt: skip


FOLDER = "<folder>"
"""Where the notes' folder goes in a suggested command when doctor was not given one: a placeholder
the person must replace (the shell refuses it as it stands), never a guess that would index the
wrong folder."""

LISTED_KBS = 20
"""At most this many of the knowledge bases a database holds are named when the one asked for is not
there: enough to see a typo, short enough to read."""


@dataclass(frozen=True)
class IndexCommand:
    """The ``kbseek index`` line to suggest, and what to say beside it when it cannot carry the password.

    Every command doctor suggests runs as printed, except for :data:`FOLDER`: without ``--kb`` (a
    reader's machine, which has only the database) the index cannot be built here, so the line is
    for the machine that has the notes, and the words around it say so.
    """

    line: str
    note: str = ""
    has_folder: bool = True

    @property
    def serve_line(self) -> str:
        """The ``kbseek serve`` line with the same options: a writer that indexes in the background."""
        return self.line.replace("kbseek index", "kbseek serve", 1)

    def run(self, extra: str = "") -> str:
        if self.has_folder:
            return f"run `{self.line}{extra}`{self.note}"
        return (
            "the index is built on the machine that has the notes' folder (doctor was given no --kb): "
            f"there, run `{self.line}{extra}` with {FOLDER} replaced by that folder{self.note}"
        )


def index_command(parts: list[str], url: str, kb_name: str, *, url_given: bool) -> IndexCommand:
    """``parts`` (``kbseek index --kb …``) with the database and the knowledge base's name.

    A URL given on the command line is repeated without its password, and the note says so; one from
    the config is left to the config, which the command reads again. ``parts`` without ``--kb`` (no
    folder here) get ``--kb`` and :data:`FOLDER` after ``kbseek index``: ``kbseek index`` refuses to
    run without a folder, so a line without one could never run as printed.
    """
    extra = ["--kb-name", kb_name]
    note = ""
    if url_given:
        extra = ["--store", display_url(url), *extra]
        if _password_of(url):
            note = " (with the password put back into the --store URL, or set in PGPASSWORD)"
    if "--kb" in parts:
        return IndexCommand(shlex.join([*parts, *extra]), note)
    head, rest = parts[:2], [*parts[2:], *extra]
    return IndexCommand(f"{shlex.join(head)} --kb {FOLDER} {shlex.join(rest)}", note, has_folder=False)


def postgres_checks(
    url: str,
    kb_name: str | None,
    model_id: str | None,
    command: IndexCommand,
    *,
    timeout: float = CONNECT_TIMEOUT_S,
) -> list[CheckResult]:
    """The database, pgvector, the index, the index folder's permissions (not applicable) and the
    writer lock, in that order, on one connection that is closed before returning."""
    database, conn = check_database(url, timeout=timeout)
    results = [database]
    if conn is None:
        results += [
            CheckResult(name, "skip", "needs a database doctor can reach", "fix the database check first")
            for name in ("pgvector", "index")
        ]
        return [*results, PERMISSIONS_ELSEWHERE, CheckResult(
            "writer lock", "skip", "needs a database doctor can reach", "fix the database check first"
        )]  # fmt: skip
    with conn:
        location = display_url(url)
        results.append(guarded("pgvector", lambda: check_pgvector(conn, command)))
        try:
            if kb_name is None:
                raise ConfigError("no knowledge-base name given, and no folder to take one from")
            schema = schema_name(kb_name)
        except ConfigError as exc:
            fix = 'pass --kb-name NAME (or set KBSEEK_KB_NAME, or name = "NAME" in [store] of the config)'
            return [*results, CheckResult("index", "fail", str(exc), fix), PERMISSIONS_ELSEWHERE,
                    CheckResult("writer lock", "skip", "needs a valid knowledge-base name", fix)]  # fmt: skip
        results.append(guarded("index", lambda: check_schema(conn, schema, location, model_id, command)))
        results.append(PERMISSIONS_ELSEWHERE)
        results.append(guarded("writer lock", lambda: check_advisory_lock(conn, schema)))
    return results


def check_database(url: str, *, timeout: float = CONNECT_TIMEOUT_S) -> tuple[CheckResult, Conn | None]:
    """Reach the server within ``timeout`` seconds and name it: version, database, user.

    The connection is returned for the checks that follow; every transaction on it is read-only.
    """
    location = display_url(url)
    seconds = max(2, round(timeout))  # libpq waits at least 2 s, whatever it is given
    started = time.perf_counter()
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=seconds, application_name=_application())
    except psycopg.OperationalError as exc:
        message = " ".join(_without_password(str(exc), url).split())  # libpq's lines, as one
        return CheckResult(
            "database", "fail", f"cannot reach the index database {location} within {seconds} s: {message}",
            "check the URL (host, port, database, user) given with --store, KBSEEK_STORE_URL or [store] url, "
            "that the server is running and accepts connections from this machine, and the password "
            "(in the URL, PGPASSWORD or ~/.pgpass)",
        ), None  # fmt: skip
    except psycopg.ProgrammingError:
        # libpq's complaint about a malformed string quotes a piece of it, which may be the password.
        return CheckResult(
            "database", "fail", "the index database URL is not a PostgreSQL connection string",
            "write it as postgresql://user@host:port/database (the password in PGPASSWORD or ~/.pgpass)",
        ), None  # fmt: skip
    try:
        conn.execute("SET default_transaction_read_only = on")
        conn.execute("SELECT set_config('statement_timeout', %s, false)", (STATEMENT_TIMEOUT,))
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (LOCK_TIMEOUT,))
        row = conn.execute(
            "SELECT current_setting('server_version'), current_setting('server_version_num')::int,"
            " current_database(), current_user"
        ).fetchone()
    except psycopg.Error as exc:
        conn.close()
        return CheckResult(
            "database", "fail", f"connected to {location}, but it did not answer: "
            f"{' '.join(_without_password(str(exc), url).split())}",
            "check the server's log; a server that is starting up or shutting down answers in a moment",
        ), None  # fmt: skip
    assert row is not None
    version, number, database, user = str(row[0]), int(row[1]), str(row[2]), str(row[3])
    took = time.perf_counter() - started
    detail = f"PostgreSQL {version} at {location}, database {database} as {user} (connected in {took:.2f} s)"
    if number < MIN_SERVER * 10_000:
        return CheckResult(
            "database", "fail", f"{detail}: kbseek needs PostgreSQL {MIN_SERVER} or newer",
            f"upgrade the server, or point --store at a PostgreSQL {MIN_SERVER}+ server",
        ), conn  # fmt: skip
    return CheckResult("database", "ok", detail), conn


def check_pgvector(conn: Conn, command: IndexCommand | None = None) -> CheckResult:
    """Is pgvector's ``vector`` extension in this database, is it new enough, and if not, who can add
    or update it and how.

    The first ``kbseek index`` creates it when its user may (``command``, when given, is that line);
    otherwise a person with the right has to, once per database (extensions are per database, not per
    server). Installed, its version is judged as the store judges it when it opens: below
    ``PGVECTOR_MINIMUM`` fails (the store refuses it), short of a feature kbseek uses warns, else ok.
    """
    version = postgres_schema.pgvector_version(conn)  # the module's, so a test's stand-in is seen here
    if version is not None:
        where = _one(conn, (
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'vector'"
        ))  # fmt: skip
        found = f"extension vector {version} installed (in schema {where})"
        if version < PGVECTOR_MINIMUM:
            return CheckResult(
                "pgvector", "fail", f"{found}: kbseek needs pgvector {PGVECTOR_MINIMUM} or newer (its HNSW "
                "index), and refuses to index or serve with this one", pgvector_upgrade(conn, PGVECTOR_MINIMUM),
            )  # fmt: skip
        shortfalls = pgvector_shortfalls(version)
        if shortfalls:
            return CheckResult(
                "pgvector", "warn", f"{found}; {'; '.join(shortfalls)}",
                f"for the faster path, {pgvector_upgrade(conn, PGVECTOR_ITERATIVE_SCAN)}",
            )  # fmt: skip
        return CheckResult("pgvector", "ok", found)
    database = str(_one(conn, "SELECT current_database()"))
    create = f"CREATE EXTENSION vector; in the database {database} (for example psql -d {shlex.quote(database)} " \
        "-c 'CREATE EXTENSION vector')"  # fmt: skip
    available = conn.execute(
        "SELECT a.default_version, v.trusted FROM pg_available_extensions a"
        " JOIN pg_available_extension_versions v ON v.name = a.name AND v.version = a.default_version"
        " WHERE a.name = 'vector'"
    ).fetchone()
    if available is None:
        return CheckResult(
            "pgvector", "fail", f"the server has no pgvector: the extension vector cannot be created in {database}",
            "install pgvector on the database server (https://github.com/pgvector/pgvector#installation), "
            f"then have a superuser run {create}",
        )  # fmt: skip
    offered, trusted = str(available[0]), bool(available[1])
    superuser = _one(conn, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    may_create = _one(conn, "SELECT has_database_privilege(current_database(), 'CREATE')")
    who = "a superuser or, as it is trusted here, a user with CREATE on the database such as its owner" \
        if trusted else "a superuser (pgvector is not a trusted extension)"  # fmt: skip
    if superuser or (trusted and may_create):
        return CheckResult(
            "pgvector", "warn",
            f"the extension vector {offered} is available but not installed in {database}; the first "
            "`kbseek index` creates it, as this user may",
            f"{command.run() if command is not None else 'the first kbseek index creates it'}, or create it "
            f"now: {create}",
        )  # fmt: skip
    return CheckResult(
        "pgvector", "fail",
        f"the extension vector {offered} is available but not installed in {database}, and this user "
        "cannot create it",
        f"creating it needs {who}: have one run {create}",
    )  # fmt: skip


def check_schema(
    conn: Conn, schema: str, location: str, model_id: str | None, command: IndexCommand
) -> CheckResult:
    """Does the knowledge base's schema exist, is it this kbseek's, and do its vectors fit the model?

    The same questions ``check_index`` asks of a SQLite file, read from the catalogs and the schema's
    own tables without opening a store (which would create or rebuild the schema).
    """
    where = f"{location} (schema {schema})"
    exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    tables = postgres_schema.schema_tables(conn, schema)
    if not exists or not tables:
        found = "no schema" if not exists else "an empty schema"
        held = kb_names(conn)
        there = "" if command.has_folder else " there"
        meant = "; if you meant one the database holds, pass its name with --kb-name" if held else ""
        return CheckResult(
            "index", "warn", f"the knowledge base was never indexed in this database ({found} {schema} in "
            f"{location}); {_held(held)}",
            f"{command.run()}; or start `{command.serve_line}`{there}, which indexes in the background{meant}",
        )  # fmt: skip
    drop = f"choose another --kb-name, or drop the schema {schema} if nothing else uses it"
    foreign = tables - set(TABLES)
    if foreign or "meta" not in tables:
        return CheckResult(
            "index", "fail", f"the schema {schema} in {location} holds tables that are not a kbseek index "
            f"({', '.join(sorted(foreign or tables))})", drop,
        )  # fmt: skip
    try:
        raw = _read(conn, schema, "SELECT key, value FROM {}.meta")
    except psycopg.errors.InsufficientPrivilege as exc:
        return _no_privilege(schema, exc)
    except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled):
        return _busy(where)
    meta = {str(k): str(v) for k, v in raw}
    try:
        version = int(meta.get(META_SCHEMA_VERSION, ""))
    except ValueError:
        return CheckResult(
            "index", "fail", f"the schema {schema} in {location} records no kbseek schema version", drop
        )
    if version > SCHEMA_VERSION:
        return CheckResult(
            "index", "fail", f"{where} was written by a newer kbseek (schema {version}; this one reads {SCHEMA_VERSION})",
            "upgrade kbseek (pip install -U 'kbseek[postgres]') on this machine too; servers sharing an "
            f"index run the same kbseek, or {drop}",
        )  # fmt: skip
    if version < SCHEMA_VERSION:
        return CheckResult(
            "index", "warn", f"{where} was written by an older kbseek (schema {version}; this one writes {SCHEMA_VERSION})",
            f"{command.run()}: it brings the schema up to date, rebuilding the index from the files where "
            "the layout changed",
        )  # fmt: skip
    try:
        counted = _read(conn, schema, (
            "SELECT (SELECT count(*) FROM {0}.documents), (SELECT count(*) FROM {0}.chunks),"
            " (SELECT count(*) FROM {0}.chunks c WHERE EXISTS"
            "  (SELECT 1 FROM {0}.embeddings e WHERE e.content_hash = c.content_hash)),"
            " (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            "  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r')"
        ), (schema,))[0]  # fmt: skip
    except psycopg.errors.InsufficientPrivilege as exc:
        return _no_privilege(schema, exc)
    except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled):
        return _busy(where)
    documents, chunks, embedded, size = (int(v) for v in counted)
    facts = index_meta(meta)
    summary = (
        f"{where}: schema {version}, {documents} documents, {chunks} chunks, {embedded} with a vector, "
        f"{human_bytes(size)}"
    )
    if facts.last_pass_at is not None:
        with contextlib.suppress(ValueError, OverflowError, OSError):  # a time no calendar holds
            summary += f", last indexed {datetime.fromtimestamp(facts.last_pass_at, UTC):%Y-%m-%d %H:%M UTC}"
    return index_verdict(
        summary, recorded=facts.embedding.model if facts.embedding is not None else None,
        model_id=model_id, vectorless=not embedded and chunks > 0, documents=documents, run=command.run,
        one_model=" (every server sharing this index uses one model)",
    )  # fmt: skip


def check_advisory_lock(conn: Conn, schema: str) -> CheckResult:
    """Who holds the knowledge base's writer locks now: a writer holds one for its whole pass (a
    session lock, ``store.postgres.lock``) and another for each transaction.

    ``pg_locks`` shows a two-number advisory key as ``classid``/``objid`` with ``objsubid`` 2; the
    holder is named as its connection named itself (``kbseek pid N on HOST``), which
    ``pg_stat_activity`` shows to every user.
    """
    rows = conn.execute(
        "SELECT l.granted, l.pid, a.application_name, a.usename, extract(epoch FROM now() - a.xact_start)"
        " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid = %s::oid"
        " AND l.objid = ANY(%s::oid[])"
        " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " ORDER BY l.granted DESC, l.pid",
        (LOCK_CLASS, [lock_key(schema), lock_key(schema + PASS_KEY_SUFFIX)]),
    ).fetchall()
    holders = [r for r in rows if r[0]]
    waiting = len(rows) - len(holders)
    if not holders:
        return CheckResult("writer lock", "ok", f"free (no transaction is writing to {schema} right now)")
    _, pid, application, user, seconds = holders[0]
    who = str(application) if application else f"a connection of user {user or 'unknown'}"
    held = f"held by {who} (server process {pid}"
    held += f", transaction open {float(seconds):.1f} s)" if seconds is not None else ")"
    if waiting:
        held += f", {waiting} more waiting"
    return CheckResult(
        "writer lock", "warn",
        f"{held}: an indexing pass is writing {schema}, and another writer waits for it, then stops",
        "wait for that pass to finish; if it never does, stop that process, or end its transaction with "
        f"SELECT pg_terminate_backend({pid}) (the locks end with the writer's session, so none is ever "
        "left behind)",
    )  # fmt: skip


# -- helpers -----------------------------------------------------------------------------------------


def kb_names(conn: Conn) -> list[str]:
    """The knowledge bases this database holds, by name: the schemas kbseek created (its prefix and
    a ``meta`` table, which it creates with every schema), read from the catalogs alone."""
    rows = conn.execute(
        "SELECT n.nspname FROM pg_namespace n WHERE starts_with(n.nspname, %s) AND EXISTS"
        " (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = 'meta' AND c.relkind = 'r')"
        ' ORDER BY n.nspname COLLATE "C"',
        (SCHEMA_PREFIX,),
    ).fetchall()
    return [str(r[0])[len(SCHEMA_PREFIX) :] for r in rows]


def _held(names: list[str]) -> str:
    """The knowledge bases a database holds (:func:`kb_names`), in words, so that a misspelt
    --kb-name shows beside the right one."""
    if not names:
        return "the database holds no kbseek knowledge base yet"
    shown = ", ".join(names[:LISTED_KBS])
    more = f" and {len(names) - LISTED_KBS} more" if len(names) > LISTED_KBS else ""
    return f"the database holds {len(names)} knowledge base{'s' if len(names) != 1 else ''}: {shown}{more}"


def _application() -> str:
    """How doctor's connection shows in ``pg_stat_activity``: like a kbseek writer's, with ``doctor``."""
    return f"kbseek doctor pid {os.getpid()} on {socket.gethostname()}"[:63]


def _read(conn: Conn, schema: str, query: str, params: tuple[object, ...] = ()) -> list[TupleRow]:
    return conn.execute(sql.SQL(query).format(sql.Identifier(schema)), params).fetchall()


def _one(conn: Conn, query: str) -> object:
    row = conn.execute(query).fetchone()
    return row[0] if row else None


def _password_of(url: str) -> str:
    try:
        return str(conninfo_to_dict(url).get("password") or "")
    except psycopg.ProgrammingError:
        return ""


def _without_password(message: str, url: str) -> str:
    """libpq's messages do not quote the password; this makes sure, wherever the password came from."""
    for secret in (_password_of(url), os.environ.get("PGPASSWORD", "")):
        if len(secret) >= 3:
            message = message.replace(secret, "***")
    return message


def _no_privilege(schema: str, exc: psycopg.Error) -> CheckResult:
    return CheckResult(
        "index", "fail", f"this user cannot read the schema {schema} ({exc.diag.message_primary or exc})",
        f"connect as the role that indexes it, or have its owner run GRANT USAGE ON SCHEMA {schema} TO "
        f"<role>; GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO <role>",
    )  # fmt: skip


def _busy(where: str) -> CheckResult:
    return CheckResult(
        "index", "warn", f"{where} is busy: a writer holds its tables (a rebuild or an upgrade in progress?)",
        "run the same kbseek doctor command again in a minute; the writer lock check names the writer",
    )  # fmt: skip
