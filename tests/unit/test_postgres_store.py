"""What is particular to the PostgreSQL store, on a real server (``tests/postgres_server.py``).

The protocol's guarantees are pinned for both backends by ``test_store_contract.py``; these tests pin
what only a shared database raises: that its lexical ranking is SQLite's own BM25, that two
knowledge bases in one database stay apart, that two processes' writers are kept from each other by
an advisory lock, that a password never reaches a message, and that a knowledge-base name which
could not safely name a schema is refused before anything is sent to the server.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbseek.errors import ConfigError, IndexIncompatible, IndexLocked, IndexReadOnly
from kbseek.filters import SearchFilters
from kbseek.store import lexical_bound
from kbseek.store.base import Store
from kbseek.store.records import Counts, IndexMeta
from kbseek.store.sqlite.store import SqliteStore
from tests import postgres_server
from tests.unit.test_store_contract import chunk, document, rowids_of, write

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from kbseek.store.postgres import lexical as postgres_lexical  # noqa: E402
from kbseek.store.postgres.schema import SCHEMA_PREFIX, SCHEMA_VERSION, display_url  # noqa: E402
from kbseek.store.postgres.store import PostgresStore  # noqa: E402


@pytest.fixture
def url() -> str:
    return postgres_server.url()


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(url, postgres_server.kb_name())
    yield s
    s.close()


def _sql(url: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def _schemas(url: str) -> set[str]:
    return {str(r[0]) for r in _sql(url, "SELECT nspname FROM pg_namespace")}


# -- BM25 as the SQLite store computes it ----------------------------------------------------------

_WORDS = [f"w{i}" for i in range(40)] + ["障害", "対応", "手順", "猫"]


def _words(rng: random.Random, n: int) -> str:
    """Zipf-like: a few words in most chunks (IDF clamped to 1e-6), many rare ones."""
    return " ".join(rng.choices(_WORDS, weights=[1 / (i + 1) for i in range(len(_WORDS))], k=n))


def _corpus(seed: int) -> list:
    rng = random.Random(seed)
    docs = []
    for d in range(60):
        path = f"{rng.choice(['notes', 'Runbooks', 'a_b'])}/{d}.md"
        chunks = [
            chunk(path, i, f"chunk {d} {i}", lexical=_words(rng, rng.randint(0, 40)),
                  lexical_heading=_words(rng, rng.randint(0, 4)))
            for i in range(rng.randint(1, 3))
        ]  # fmt: skip
        docs.append(
            document(path, *chunks, tags=tuple(rng.sample(["Ops", "deploy", "db"], rng.randint(0, 2))))
        )
    return docs


@pytest.fixture
def both(url: str, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """The same documents in an SQLite store and a PostgreSQL one."""
    lite, pg = SqliteStore(tmp_path / "index.sqlite"), PostgresStore(url, postgres_server.kb_name())
    docs = _corpus(7)
    write(lite, *docs)
    write(pg, *docs)
    path = docs[0].path
    edited = document(path, chunk(path, 0, "edited", lexical="w1 w2 w3 障害 w1", lexical_heading="w5"))
    with lite.transaction() as tx, pg.transaction() as ptx:  # a replaced and a deleted document too
        for writer, store in ((tx, lite), (ptx, pg)):
            states = store.document_states()
            writer.write_document(edited, replaces=states[path].id)
            writer.delete_document(states[docs[2].path].id)
    yield lite, pg
    lite.close()
    pg.close()


def _scored(store: Store, terms: list[str], **filters: object) -> list[tuple[str, float]]:
    hits = store.lexical_candidates(terms, **filters)  # type: ignore[arg-type]
    rows = store.chunks_by_rowid([r for r, _ in hits])
    return [(rows[r].chunk_id, s) for r, s in hits]


def test_lexical_scores_are_the_sqlite_stores_bm25(both: tuple[Store, Store]) -> None:
    """Every candidate with the same score, to rounding, and the same best ten: the two backends rank
    a knowledge base alike (ties may come in another order, so the top ten compare by score)."""
    lite, pg = both
    rng = random.Random(11)
    filters: list[dict[str, object]] = [
        {},
        {"filters": SearchFilters(path_prefix="notes/")},
        {"filters": SearchFilters(path_prefix="RUNBOOKS")},
        {"filters": SearchFilters(tags=("ops",))},
    ]
    for n in range(150):
        terms = rng.choices([*_WORDS, "absent", "w1"], k=rng.randint(1, 6))  # duplicates included
        chosen = filters[n % len(filters)]
        full_lite = dict(_scored(lite, terms, limit=1000, **chosen))
        full_pg = _scored(pg, terms, limit=1000, **chosen)
        assert dict(full_pg).keys() == full_lite.keys(), terms
        for chunk_id, score in full_pg:
            assert math.isclose(score, full_lite[chunk_id], rel_tol=1e-9), (terms, chunk_id)
        assert [s for _, s in full_pg] == sorted((s for _, s in full_pg), reverse=True)
        top_lite = [s for _, s in _scored(lite, terms, limit=10, **chosen)]
        top_pg = [s for _, s in _scored(pg, terms, limit=10, **chosen)]
        assert len(top_pg) == len(top_lite) and all(map(math.isclose, top_pg, top_lite)), terms


def test_term_statistics_agree_with_the_sqlite_store(both: tuple[Store, Store]) -> None:
    lite, pg = both
    terms = [*_WORDS, "absent"]
    assert pg.document_frequencies(terms) == lite.document_frequencies(terms)
    assert pg.holds_japanese() and lite.holds_japanese()
    assert pg.counts() == lite.counts()
    ids = [c.chunk_id for c in lite.chunks_by_rowid(list(range(1, 300))).values()]
    lite_rows, pg_rows = rowids_of(lite, *ids), rowids_of(pg, *ids)
    by_id_lite = dict(zip(ids, lite_rows, strict=True))
    by_id_pg = dict(zip(ids, pg_rows, strict=True))
    matched_lite = lite.rows_matching_each_term(terms, lite_rows)
    matched_pg = pg.rows_matching_each_term(terms, pg_rows)
    assert {i: matched_pg[by_id_pg[i]] for i in ids} == {i: matched_lite[by_id_lite[i]] for i in ids}


def _bound_low(monkeypatch: pytest.MonkeyPatch, share: float | None = None) -> None:
    """Thresholds small enough for the test corpus to take the bounded path (docs/decisions/0016)."""
    monkeypatch.setattr(lexical_bound, "FULL_QUERY_POSTINGS", 40)
    monkeypatch.setattr(lexical_bound, "LEXICAL_POSTINGS_BUDGET", 12)
    if share is not None:
        monkeypatch.setattr(lexical_bound, "NEGLIGIBLE_SHARE", share)


def _queries(seed: int, n: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.choices([*_WORDS, "absent", "w1"], k=rng.randint(2, 7)) for _ in range(n)]


def test_the_bounded_query_is_the_sqlite_stores_on_both_backends(
    both: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the bound engaged on both stores, the same chunks with the same scores: the rare terms
    are chosen by one rule, the candidates are the chunks holding them, and terms most chunks hold
    are left out of the score alike. Bounded answers differ from the full query's, so a backend
    that did not bound, or chose other terms, fails here."""
    lite, pg = both
    full = {tuple(terms): dict(_scored(pg, terms, limit=10)) for terms in _queries(5, 120)}
    _bound_low(monkeypatch)
    ran: list[str] = []
    run = postgres_lexical._run
    monkeypatch.setattr(postgres_lexical, "_run", lambda conn, q, p: ran.append(q) or run(conn, q, p))
    filters: list[dict[str, object]] = [
        {},
        {"filters": SearchFilters(path_prefix="notes/")},
        {"filters": SearchFilters(tags=("ops",))},
    ]
    differs = 0
    for n, terms in enumerate(_queries(5, 120)):
        chosen = filters[n % len(filters)]
        for limit in (3, 10):
            bounded_lite = dict(_scored(lite, terms, limit=limit, **chosen))
            bounded_pg = _scored(pg, terms, limit=limit, **chosen)
            assert [s for _, s in bounded_pg] == sorted((s for _, s in bounded_pg), reverse=True)
            assert len(bounded_pg) == len(bounded_lite), (terms, chosen, limit)
            for chunk_id, score in bounded_pg:  # a tie at the cut may keep another chunk of equal score
                other = bounded_lite.get(chunk_id, min(bounded_lite.values()))
                assert math.isclose(score, other, rel_tol=1e-9, abs_tol=1e-9), (terms, chunk_id)
            differs += limit == 10 and not chosen and dict(bounded_pg) != full[tuple(terms)]
    assert any(q.startswith(postgres_lexical.AMONG_QUERY[:200]) for q in ran)
    assert any("among AS" in q for q in ran) and any("among AS" not in q for q in ran)  # both paths
    assert differs > 10  # the bound changed answers, so agreeing above was not agreeing by default


def test_a_bounded_query_scores_its_chunks_on_every_term_of_the_full_query(
    both: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no term left out for being common, each chunk the bounded query returns carries exactly
    the score the full query gives it, IDF from the vocabulary included."""
    _, pg = both
    queries = _queries(9, 80)
    full = [dict(pg.lexical_candidates(terms, limit=-1)) for terms in queries]
    _bound_low(monkeypatch, share=1.0)
    bounded_runs = 0
    for terms, everything in zip(queries, full, strict=True):
        bounded = pg.lexical_candidates(terms, limit=5)
        bounded_runs += [r for r, _ in bounded] != sorted(everything, key=lambda r: (-everything[r], r))[:5]
        for rowid, score in bounded:
            assert math.isclose(score, everything[rowid], rel_tol=1e-12), (terms, rowid)
    assert bounded_runs > 5


def _vocabulary(url: str, schema: str) -> tuple[dict[str, int], dict[str, int]]:
    """The vocabulary as kept, and as counted from the postings."""
    kept = _sql(url, f'SELECT term, chunks FROM "{schema}".vocabulary')
    counted = _sql(url, f'SELECT term, count(*) FROM "{schema}".postings GROUP BY term')
    return {str(t): int(n) for t, n in kept}, {str(t): int(n) for t, n in counted}  # type: ignore[call-overload]


def test_the_vocabulary_follows_inserts_replacements_and_deletions(store: PostgresStore, url: str) -> None:
    """Every write moves it with the postings, in the same transaction; a term no chunk holds any
    more leaves it, and a rolled-back write moves nothing."""
    a = document(
        "a.md",
        chunk("a.md", 0, "x", lexical="gone shared shared", lexical_heading=""),
        chunk("a.md", 1, "y", lexical="shared", lexical_heading=""),
    )
    b = document("b.md", chunk("b.md", 0, "z", lexical="shared kept", lexical_heading="kept"))
    write(store, a, b)
    kept, counted = _vocabulary(url, store.schema)
    assert kept == counted == {"gone": 1, "shared": 3, "kept": 1}
    ids = {p: s.id for p, s in store.document_states().items()}
    with store.transaction() as tx:
        tx.write_document(
            document("a.md", chunk("a.md", 0, "x2", lexical="new shared", lexical_heading="")),
            replaces=ids["a.md"],
        )
    assert _vocabulary(url, store.schema)[0] == {"new": 1, "shared": 2, "kept": 1}
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.delete_document(ids["b.md"])
        raise RuntimeError("interrupted")
    assert _vocabulary(url, store.schema)[0] == {"new": 1, "shared": 2, "kept": 1}
    with store.transaction() as tx:
        tx.delete_document(ids["b.md"])
    kept, counted = _vocabulary(url, store.schema)
    assert kept == counted == {"new": 1, "shared": 1}
    assert store.document_frequencies(["shared", "kept", "new"]) == {"shared": 1, "new": 1}


def test_the_statistics_of_a_transaction_of_many_documents_are_its_net_change(
    both: tuple[Store, Store], url: str
) -> None:
    """One transaction (as ``kbseek store copy`` writes a whole index) that writes, replaces and
    deletes documents, some of them twice, leaves the vocabulary and the totals as counting the
    rows afresh gives them, and the same as the SQLite store's."""
    lite, pg = both
    assert isinstance(pg, PostgresStore)
    rng = random.Random(3)
    texts = [(_words(rng, 8) + f" only{d}", _words(rng, 5)) for d in range(30)]
    for store in (lite, pg):
        with store.transaction() as tx:
            states = store.document_states()
            for d, (text, edited) in enumerate(texts):
                path = f"many/{d}.md"
                doc_id = tx.write_document(
                    document(path, chunk(path, 0, f"m{d}", lexical=text)), replaces=None
                )
                if d % 3:
                    again = document(path, chunk(path, 0, f"n{d}", lexical=edited))
                    tx.write_document(again, replaces=doc_id)
                if d % 5 == 0:
                    tx.delete_document(doc_id)
            for path in sorted(states)[:10]:
                tx.delete_document(states[path].id)
    kept, counted = _vocabulary(url, pg.schema)
    assert kept == counted
    # A document's own term stays only while the document keeps its first text.
    assert {t for t in kept if t.startswith("only")} == {
        f"only{d}" for d in range(30) if d % 3 == 0 and d % 5
    }
    assert pg.document_frequencies([*_WORDS, *kept]) == lite.document_frequencies([*_WORDS, *kept])
    ((chunks, terms),) = _sql(url, f'SELECT chunks, terms FROM "{pg.schema}".lexical_stats')
    ((n, length),) = _sql(url, f'SELECT count(*), sum(heading_terms + body_terms) FROM "{pg.schema}".chunks')
    assert (chunks, terms) == (n, length) and chunks == pg.counts().chunks == lite.counts().chunks


def test_an_index_without_a_vocabulary_gains_one_in_place(both: tuple[Store, Store], url: str) -> None:
    """An index of schema 2 is upgraded, not rebuilt: its vocabulary is counted from its postings,
    and it ranks as before."""
    _, pg = both
    assert isinstance(pg, PostgresStore)
    before = pg.lexical_candidates(["w1", "w7", "障害"], limit=20)
    frequencies = pg.document_frequencies(_WORDS)
    _sql(url, f'DROP TABLE "{pg.schema}".vocabulary')
    _sql(url, f"UPDATE \"{pg.schema}\".meta SET value = '2' WHERE key = 'schema_version'")
    again = PostgresStore(url, pg.schema.removeprefix(SCHEMA_PREFIX))
    try:
        kept, counted = _vocabulary(url, pg.schema)
        assert kept == counted and kept
        assert again.counts() == pg.counts()  # nothing was rebuilt
        assert again.document_frequencies(_WORDS) == frequencies
        assert again.lexical_candidates(["w1", "w7", "障害"], limit=20) == before
    finally:
        again.close()


def test_an_index_without_links_gains_their_tables_in_place(store: PostgresStore, url: str) -> None:
    """Schema 4 only added the links and names: a schema-3 index keeps its documents, and the
    re-parse of parse version 6 fills the new tables."""
    write(store, document("a.md", "alpha"))
    _sql(url, f'DROP TABLE "{store.schema}".links, "{store.schema}".document_names')
    _sql(url, f"UPDATE \"{store.schema}\".meta SET value = '3' WHERE key = 'schema_version'")
    again = PostgresStore(url, store.schema.removeprefix(SCHEMA_PREFIX))
    try:
        assert again.counts() == (1, 1)  # nothing was rebuilt
        assert again.links_from("a.md", limit=10) == again.links_to("a.md", limit=10) == []
        ((version,),) = _sql(url, f"SELECT value FROM \"{store.schema}\".meta WHERE key = 'schema_version'")
        assert version == str(SCHEMA_VERSION)
    finally:
        again.close()


# -- knowledge bases and writers -------------------------------------------------------------------


def test_two_knowledge_bases_in_one_database_stay_apart(url: str) -> None:
    one, two = PostgresStore(url, postgres_server.kb_name()), PostgresStore(url, postgres_server.kb_name())
    try:
        write(one, document("a.md", "alpha shared"))
        write(two, document("b.md", "beta shared"), document("c.md", "gamma"))
        with one.transaction() as tx:
            tx.record_pass(finished_at=1.0, parse_version=1)
            tx.replace_skipped([("x.bin", "binary")])
        assert one.counts() == (1, 1) and two.counts() == (2, 2)
        assert [d.path for d in two.documents()] == ["b.md", "c.md"]
        assert len(one.lexical_candidates(["shared"], limit=10)) == 1
        assert two.document_frequencies(["shared", "alpha"]) == {"shared": 1}
        assert two.meta() == IndexMeta() and two.skipped() == []
        with one.transaction():  # one's writer does not hold two's back
            write(two, document("d.md", "delta"))
        assert two.counts() == (3, 3) and one.counts() == (1, 1)
        assert one.location != two.location
    finally:
        one.close()
        two.close()


def test_a_second_writer_of_the_same_knowledge_base_is_told_the_index_is_locked(url: str) -> None:
    name = postgres_server.kb_name()
    first, second = PostgresStore(url, name), PostgresStore(url, name, lock_wait=0.2)
    try:
        with first.transaction() as tx:
            tx.write_document(document("a.md", "alpha"), replaces=None)
            started = time.monotonic()
            with pytest.raises(IndexLocked) as refused, second.transaction():
                pytest.fail("the second writer got in")
            assert time.monotonic() - started < 5
            assert second.counts() == (0, 0)  # its reads still answer, from the last commit
        message = str(refused.value)
        assert second.location in message and "being written by another kbseek process" in message
        assert "kbseek pid" in message  # the holder, as its connection named itself
        write(second, document("b.md", "beta"))  # the lock went with the first transaction
        assert first.counts() == (2, 2)
    finally:
        first.close()
        second.close()


def test_a_writer_waits_for_a_short_transaction_of_another_process(url: str) -> None:
    name = postgres_server.kb_name()
    first, second = PostgresStore(url, name), PostgresStore(url, name, lock_wait=10.0)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with first.transaction() as tx:
            tx.write_document(document("a.md", "alpha"), replaces=None)
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(10)
        threading.Timer(0.3, release.set).start()
        write(second, document("b.md", "beta"))  # waits for the first to commit, then writes
        assert second.counts() == (2, 2)
    finally:
        release.set()
        holder.join(10)
        first.close()
        second.close()


def test_an_interrupted_transaction_leaves_the_index_unlocked(store: PostgresStore, url: str) -> None:
    with pytest.raises(KeyboardInterrupt), store.transaction() as tx:
        tx.write_document(document("a.md", "alpha"), replaces=None)
        raise KeyboardInterrupt
    other = PostgresStore(url, store.schema.removeprefix(SCHEMA_PREFIX), lock_wait=0)
    try:
        write(other, document("b.md", "beta"))
        assert store.counts() == (1, 1)
    finally:
        other.close()


# -- names, URLs and opening ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "Team", "team-notes", "a b", "x" * 49, "notes;drop", "ü", "a\n", "a.b"])
def test_a_name_that_cannot_name_a_schema_is_refused_before_connecting(name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        PostgresStore("postgresql://nobody@/nowhere?host=/nonexistent", name)
    message = str(refused.value)
    assert repr(name) in message and "lower-case ASCII letters, digits or underscores" in message


def test_the_password_never_appears_in_the_location_or_a_message(url: str) -> None:
    params = psycopg.conninfo.conninfo_to_dict(url)
    with_password = psycopg.conninfo.make_conninfo(url, password="s3cret-pw")
    as_url = f"postgresql://{params['user']}:s3cret-pw@/{params['dbname']}?host={params['host']}"
    for given in (with_password, as_url):
        store = PostgresStore(given, postgres_server.kb_name())  # trust auth: the password is not needed
        try:
            assert "s3cret-pw" not in store.location and store.schema in store.location
            assert str(params["host"]) in store.location
        finally:
            store.close()
    for form in (
        "postgresql://alice:s3cret-pw@db.example:5433/kb",
        "postgresql://alice@db.example/kb?password=s3cret-pw&sslmode=require",
        "host=db.example user=alice password=s3cret-pw dbname=kb",
    ):
        shown = display_url(form)
        assert "s3cret-pw" not in shown and "alice@db.example" in shown and shown.endswith("/kb")
    with pytest.raises(ConfigError) as refused:
        PostgresStore("postgresql://alice:s3cret-pw@/kb?host=/nonexistent-socket-dir", "notes")
    assert "s3cret-pw" not in str(refused.value) and "cannot connect" in str(refused.value)
    with pytest.raises(ConfigError) as refused:  # libpq would quote the piece it cannot read
        PostgresStore("host=db.example password s3cret-pw", "notes")
    assert "s3cret-pw" not in str(refused.value) and refused.value.__cause__ is None
    assert "s3cret-pw" not in display_url("host=db.example password s3cret-pw")


def test_a_socket_url_is_shown_with_its_port() -> None:
    """Two servers share a socket folder on different ports (Debian's clusters): the port named the
    server, and a message that dropped it pointed at the wrong one."""
    shown = display_url("postgresql://kb@/kbseek?host=/var/run/postgresql&port=5499")
    assert shown == "postgresql://kb@/kbseek?host=/var/run/postgresql&port=5499"
    assert display_url("postgresql://kb@/kbseek?host=/var/run/postgresql") == (
        "postgresql://kb@/kbseek?host=/var/run/postgresql"
    )


def test_a_missing_index_opened_to_read_reads_empty_and_leaves_nothing_behind(url: str) -> None:
    name = postgres_server.kb_name()
    store = PostgresStore(url, name, create=False)
    try:
        assert store.counts() == Counts(0, 0) and store.meta() == IndexMeta() and store.documents() == []
        assert store.lexical_candidates(["alpha"], limit=5) == [] and store.chunk_vectors(3)[1].shape == (
            0,
            3,
        )
        with pytest.raises(IndexReadOnly), store.transaction():
            pass
    finally:
        store.close()
    assert SCHEMA_PREFIX + name not in _schemas(url)
    write(writer := PostgresStore(url, name), document("a.md", "alpha"))
    writer.close()
    reader = PostgresStore(url, name, create=False)
    try:
        assert reader.counts() == (1, 1)
    finally:
        reader.close()


def test_a_schema_that_is_not_a_kbseek_index_is_refused_and_left_alone(url: str) -> None:
    name = postgres_server.kb_name()
    schema = SCHEMA_PREFIX + name
    _sql(url, f'CREATE SCHEMA "{schema}"')
    _sql(url, f'CREATE TABLE "{schema}".invoices (id int)')
    with pytest.raises(IndexIncompatible, match="not a kbseek index"):
        PostgresStore(url, name)
    assert _sql(url, f'SELECT count(*) FROM "{schema}".invoices') == [(0,)]


def test_an_index_of_a_newer_kbseek_is_refused(store: PostgresStore, url: str) -> None:
    _sql(url, f"UPDATE \"{store.schema}\".meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(IndexIncompatible, match="newer kbseek"):
        PostgresStore(url, store.schema.removeprefix(SCHEMA_PREFIX))


# -- what text cannot hold, and vectors --------------------------------------------------------------


def test_a_nul_character_in_served_text_reads_back_as_written(store: PostgresStore) -> None:
    """PostgreSQL's text cannot hold NUL; a Markdown file may, and its text is served verbatim."""
    c = chunk("a.md", 0, "before\x00after", lexical="before\x00after")
    write(store, document("a.md", c, title="T\x00itle"))
    row = store.chunk(c.chunk.chunk_id)
    assert row is not None and row.text == "before\x00after" and row.title == "T\x00itle"
    assert store.document_frequencies(["before", "after", "before\x00after"]) == {"before": 1, "after": 1}
