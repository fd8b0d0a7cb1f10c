"""The store contract: what every ``Store`` implementation guarantees (``kbseek.store.base``).

Search and ingest rely on these guarantees and on nothing else, so a backend is ready when it
passes this suite: its factory is in ``BACKENDS`` and every test here runs against it (SQLite, and
PostgreSQL on a real server the run starts, ``tests/postgres_server.py``). The tests write through
the protocol only, with hand-made lexical text, which also pins that a store indexes the analyzed
text it is given and analyzes nothing itself.
"""

from __future__ import annotations

import ast
import hashlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kbseek.store
from kbseek.documents import Chunk, Link, SectionStart
from kbseek.errors import KbBug
from kbseek.filters import SearchFilters
from kbseek.store.base import Store
from kbseek.store.records import (
    ChunkInput,
    Counts,
    DocumentInput,
    EmbeddingRecord,
    IndexMeta,
    LinkRow,
    PendingChunk,
    RetiredChunk,
    SkippedPath,
)
from kbseek.store.sqlite.store import SqliteStore
from tests import postgres_server

Opener = Callable[[], Store]
"""Opens the same index each time it is called (so a test can close a store and look again)."""


def _postgres(tmp: Path) -> Opener:
    """A knowledge base of its own in the one PostgreSQL server of the run (``tests/postgres_server``).

    The server is asked for first: without the postgres dependencies it skips the test, before the
    store's module would fail to import them."""
    url, name = postgres_server.url(), postgres_server.kb_name()
    from kbseek.store.postgres.store import PostgresStore

    return lambda: PostgresStore(url, name)


BACKENDS: dict[str, Callable[[Path], Opener]] = {
    "sqlite": lambda tmp: lambda: SqliteStore(tmp / "index.sqlite"),
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(BACKENDS))
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    make: Callable[[Path], Opener] = BACKENDS[request.param]
    return make(tmp_path)


@pytest.fixture
def store(opener: Opener) -> Iterator[Store]:
    s = opener()
    yield s
    s.close()


# -- building inputs ------------------------------------------------------------------------------


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def chunk(
    path: str,
    ordinal: int,
    text: str,
    *,
    heading: tuple[str, ...] = ("Title",),
    lexical: str | None = None,
    lexical_heading: str | None = None,
) -> ChunkInput:
    """A chunk whose lexical text defaults to its lower-cased words (a stand-in for the analyzer)."""
    start = ordinal * 100
    c = Chunk(
        chunk_id=f"{path}#{_hash(path + text)[:12]}", ordinal=ordinal, start=start, end=start + len(text),
        heading_path=heading, text=text, content_hash=_hash(text)[:16], line_start=ordinal + 1,
        line_end=ordinal + 1,
    )  # fmt: skip
    return ChunkInput(
        chunk=c,
        lexical_heading=" ".join(heading).lower() if lexical_heading is None else lexical_heading,
        lexical_body=text.lower() if lexical is None else lexical,
    )


def document(
    path: str,
    *chunks: ChunkInput | str,
    size: int = 100,
    tags: tuple[str, ...] = (),
    title: str = "Title",
    content_hash: str | None = None,
    links: tuple[Link, ...] = (),
) -> DocumentInput:
    """A document; a chunk given as a string becomes the next chunk of this document."""
    built = tuple(
        chunk(path, i, c) if isinstance(c, str) else c for i, c in enumerate(chunks)
    )  # fmt: skip
    served = "".join(c.chunk.text for c in built)
    return DocumentInput(
        path=path, parser="md", size=size, mtime_ns=1_000, content_hash=content_hash or _hash(path),
        chars=len(served), text=served, title=title, frontmatter={"title": title, "n": 1},
        tags=tags, date="2026-03-01", warnings=("a warning",), chunks=built, links=links,
    )  # fmt: skip


def write(store: Store, *documents: DocumentInput) -> list[int]:
    with store.transaction() as tx:
        return [tx.write_document(d, replaces=None) for d in documents]


def rowids_of(store: Store, *chunk_ids: str) -> list[int]:
    rows = [store.chunk(cid) for cid in chunk_ids]
    assert all(r is not None for r in rows)
    return [r.rowid for r in rows if r is not None]


# -- an empty index --------------------------------------------------------------------------------


def test_a_new_store_is_empty_and_answers_every_read(store: Store) -> None:
    assert store.counts() == Counts(0, 0) == (0, 0)
    assert store.meta() == IndexMeta()
    assert store.documents() == [] and store.document_states() == {} and store.skipped() == []
    assert store.document("a.md") is None and store.chunk("nope") is None and store.retired("nope") is None
    assert store.lexical_candidates(["anything"], limit=10) == []
    assert store.embedded_count() == 0 and store.chunks_without_vectors() == []
    ids, matrix = store.chunk_vectors(4)
    assert ids.dtype == np.int64 and ids.shape == (0,)
    assert matrix.dtype == np.float32 and matrix.shape == (0, 4)
    assert store.vector_rowids().shape == (0,)
    assert store.vectors_for_rowids([1, 2], 4)[1].shape == (0, 4)
    assert isinstance(store.location, str) and store.location


# -- transactions ----------------------------------------------------------------------------------


def test_a_transaction_is_committed_when_its_block_ends_and_outlives_the_store(opener: Opener) -> None:
    first = opener()
    write(first, document("a.md", "alpha"))
    assert first.counts() == (1, 1)
    first.close()
    again = opener()
    try:
        assert again.counts() == (1, 1) and again.document("a.md") is not None
    finally:
        again.close()


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_exception_rolls_back_the_whole_transaction(store: Store, error: type[BaseException]) -> None:
    write(store, document("kept.md", "kept"))
    with pytest.raises(error), store.transaction() as tx:
        tx.write_document(document("lost.md", "lost"), replaces=None)
        tx.record_pass(finished_at=1.0, parse_version=1)
        raise error()
    assert [d.path for d in store.documents()] == ["kept.md"]
    assert store.counts() == (1, 1) and store.meta() == IndexMeta()
    write(store, document("next.md", "next"))  # the store is still usable
    assert store.counts() == (2, 2)


def test_a_read_on_another_thread_never_sees_an_open_transaction(store: Store) -> None:
    seen: list[Counts] = []

    def look() -> None:
        seen.append(store.counts())

    with store.transaction() as tx:
        tx.write_document(document("a.md", "alpha"), replaces=None)
        reader = threading.Thread(target=look)
        reader.start()
        reader.join(timeout=30)
        assert not reader.is_alive(), "a read waited for the writer"
    look()
    assert seen == [(0, 0), (1, 1)]


# -- meta ------------------------------------------------------------------------------------------


def test_meta_reads_back_typed_facts(opener: Opener) -> None:
    store = opener()
    with store.transaction() as tx:
        tx.record_pass(finished_at=1_700_000_000.25, parse_version=7)
        tx.record_embedding(EmbeddingRecord(model="model:1", dim=4, scheme="scheme-a"))
    expected = IndexMeta(
        last_pass_at=1_700_000_000.25, parse_version=7, embedding=EmbeddingRecord("model:1", 4, "scheme-a"),
        passes=1, listing_pass=1,
    )  # fmt: skip
    assert store.meta() == expected
    store.close()
    store = opener()
    try:
        assert store.meta() == expected
    finally:
        store.close()


def test_how_the_documents_were_read_is_recorded_with_the_pass(opener: Opener) -> None:
    """The date fields and chunk sizes of a pass read back as recorded, on every backend, and a pass
    that records neither leaves them as they were."""
    store = opener()
    with store.transaction() as tx:
        tx.record_pass(
            finished_at=1.0, parse_version=1, date_fields=("updated", "date"), chunking="400/800/50/100"
        )
    with store.transaction() as tx:
        tx.record_pass(finished_at=2.0, parse_version=1)
    meta = store.meta()
    assert (meta.date_fields, meta.chunking) == (("updated", "date"), "400/800/50/100")
    store.close()


def test_an_unknown_embedding_field_is_recorded_as_unknown(store: Store) -> None:
    with store.transaction() as tx:
        tx.record_embedding(EmbeddingRecord(model="model:1", dim=4, scheme="scheme-a"))
    with store.transaction() as tx:
        tx.record_embedding(EmbeddingRecord(model="model:1", dim=None, scheme=None))
    assert store.meta().embedding == EmbeddingRecord("model:1", None, None)


def test_clearing_vectors_forgets_what_made_them_and_nothing_else(store: Store) -> None:
    write(store, document("a.md", "alpha"))
    (pending,) = store.chunks_without_vectors()
    with store.transaction() as tx:
        tx.put_vectors({pending.content_hash: np.ones(4, dtype=np.float32) / 2})
        tx.record_embedding(EmbeddingRecord("model:1", 4, "scheme-a"))
        tx.record_pass(finished_at=5.0, parse_version=3)
    with store.transaction() as tx:
        tx.clear_vectors()
    assert store.meta() == IndexMeta(
        last_pass_at=5.0, parse_version=3, embedding=None, passes=1, listing_pass=1
    )
    assert store.embedded_count() == 0 and store.chunks_without_vectors() == [pending]


def test_passes_are_counted_and_the_listing_pass_moves_only_when_told(store: Store) -> None:
    assert (store.meta().passes, store.meta().listing_pass) == (0, 0)
    with store.transaction() as tx:
        tx.record_pass(finished_at=1.0, parse_version=1, listing_changed=True)
    with store.transaction() as tx:
        tx.record_pass(finished_at=2.0, parse_version=1, listing_changed=False)
    assert (store.meta().passes, store.meta().listing_pass) == (2, 1)
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.record_pass(finished_at=3.0, parse_version=1)
        raise RuntimeError("a pass that fails is not counted")
    assert store.meta().passes == 2


def test_waiting_for_a_pass_returns_when_another_store_object_records_one(opener: Opener) -> None:
    reader, writer = opener(), opener()
    try:
        assert reader.wait_for_pass(0, 0.05) == 0  # nothing happened: the timeout, and the same number
        woke: list[int] = []
        waiting = threading.Thread(target=lambda: woke.append(reader.wait_for_pass(0, 30.0)))
        waiting.start()
        time.sleep(0.2)
        with writer.transaction() as tx:
            tx.record_pass(finished_at=1.0, parse_version=1)
        waiting.join(30.0)
        assert woke == [1]
        assert reader.wait_for_pass(0, 0.0) == 1  # already different: no wait at all
    finally:
        reader.close()
        writer.close()


# -- documents -------------------------------------------------------------------------------------


def test_a_document_reads_back_as_written(store: Store) -> None:
    (doc_id,) = write(store, document("notes/a.md", "alpha", "beta", size=42, tags=("Deploy", "ops")))
    row = store.document("notes/a.md")
    assert row is not None
    assert (row.id, row.path, row.parser, row.size, row.chars) == (doc_id, "notes/a.md", "md", 42, 9)
    assert (row.title, row.tags, row.date) == ("Title", ("Deploy", "ops"), "2026-03-01")
    assert row.frontmatter == {"title": "Title", "n": 1} and row.warnings == ("a warning",)
    assert isinstance(row.indexed_at, float)
    state = store.document_states()["notes/a.md"]
    assert (state.id, state.size, state.mtime_ns, state.parser) == (doc_id, 42, 1_000, "md")
    assert state.content_hash == _hash("notes/a.md")
    assert store.counts() == (1, 2)


def test_the_served_text_reads_back_as_written_and_follows_its_document(store: Store) -> None:
    served = "# Title\n\n本文 with a lone \ud800 surrogate, a tab\t and a NUL \x00 kept"
    (doc_id,) = write(store, replace(document("a.md", "alpha"), text=served, chars=len(served)))
    assert store.document_text("a.md") == served
    assert store.document_text("A.md") is None and store.document_text("b.md") is None
    with store.transaction() as tx:  # an edit, renamed on the way
        tx.write_document(replace(document("b.md", "beta"), text="new text", chars=8), replaces=doc_id)
    assert store.document_text("a.md") is None and store.document_text("b.md") == "new text"
    with store.transaction() as tx:
        tx.delete_document(doc_id)
    assert store.document_text("b.md") is None


def test_a_document_is_found_by_its_exact_path_only(store: Store) -> None:
    write(store, document("notes/a.md", "alpha"))
    assert store.document("notes/A.md") is None and store.document("notes/a") is None
    assert store.document("/notes/a.md") is None


def test_documents_and_skipped_files_are_sorted_by_path(store: Store) -> None:
    write(store, document("b.md", "b"), document("a/z.md", "z"), document("a.md", "a"))
    assert [d.path for d in store.documents()] == ["a.md", "a/z.md", "b.md"]
    assert set(store.document_states()) == {"a.md", "a/z.md", "b.md"}
    with store.transaction() as tx:
        tx.replace_skipped([("z.bin", "binary"), ("c.md", "too big"), ("c.md", "not UTF-8")])
    assert store.skipped() == [SkippedPath("c.md", "not UTF-8"), SkippedPath("z.bin", "binary")]
    with store.transaction() as tx:
        tx.replace_skipped([("d.md", "gone")])
    assert store.skipped() == [("d.md", "gone")]


def test_paths_within_size_use_the_recorded_size(store: Store) -> None:
    write(
        store, document("c.md", "c", size=30), document("a.md", "a", size=10), document("b.md", "b", size=20)
    )
    assert store.paths_within_size(20) == ["a.md", "b.md"]
    assert store.paths_within_size(20, among={"c.md", "b.md", "never.md"}) == ["b.md"]
    assert store.paths_within_size(100, among=[]) == []
    many = [f"x{i}.md" for i in range(1_200)]  # more than one batch of ids in a backend that batches
    assert store.paths_within_size(100, among=[*many, "a.md"]) == ["a.md"]


def test_touching_a_document_changes_only_its_size_and_mtime(store: Store) -> None:
    (doc_id,) = write(store, document("a.md", "alpha"))
    before = store.chunk(chunk("a.md", 0, "alpha").chunk.chunk_id)
    with store.transaction() as tx:
        tx.touch_document(doc_id, 77, 9_999)
    state = store.document_states()["a.md"]
    assert (state.size, state.mtime_ns, state.content_hash) == (77, 9_999, _hash("a.md"))
    assert store.chunk(chunk("a.md", 0, "alpha").chunk.chunk_id) == before


def test_replacing_a_document_keeps_its_id_and_retires_its_old_chunks(store: Store) -> None:
    old = chunk("old.md", 0, "first text")
    (doc_id,) = write(store, document("old.md", old, "second text"))
    old_rowids = rowids_of(store, old.chunk.chunk_id)
    new = chunk("new.md", 0, "renamed and edited")
    with store.transaction() as tx:
        assert tx.write_document(document("new.md", new), replaces=doc_id) == doc_id
    assert store.document("old.md") is None
    assert [d.path for d in store.documents()] == ["new.md"] and store.counts() == (1, 1)
    assert store.chunk(old.chunk.chunk_id) is None
    retired = store.retired(old.chunk.chunk_id)
    assert retired is not None and retired == RetiredChunk("old.md", retired.retired_at)
    assert store.retired(new.chunk.chunk_id) is None
    row = store.chunk(new.chunk.chunk_id)
    assert row is not None and row.document_id == doc_id and row.rowid > max(old_rowids)


def test_a_chunk_id_written_again_is_no_longer_retired(store: Store) -> None:
    a = chunk("a.md", 0, "same text")
    (doc_id,) = write(store, document("a.md", a))
    with store.transaction() as tx:
        tx.write_document(document("a.md", "other text"), replaces=doc_id)
    assert store.retired(a.chunk.chunk_id) is not None
    with store.transaction() as tx:
        tx.write_document(document("a.md", a), replaces=doc_id)
    assert store.retired(a.chunk.chunk_id) is None and store.chunk(a.chunk.chunk_id) is not None


def test_deleting_a_document_removes_its_chunks_and_retires_their_ids(store: Store) -> None:
    a = chunk("a.md", 0, "alpha")
    doc_a, _ = write(store, document("a.md", a), document("b.md", "beta"))
    with store.transaction() as tx:
        tx.delete_document(doc_a)
        tx.delete_document(987_654)  # unknown: nothing happens
    assert store.document("a.md") is None and store.counts() == (1, 1)
    assert store.chunk(a.chunk.chunk_id) is None
    retired = store.retired(a.chunk.chunk_id)
    assert retired is not None and retired.path == "a.md"
    assert store.lexical_candidates(["alpha"], limit=5) == []


def test_a_rowid_is_never_reused_even_after_the_highest_is_deleted(store: Store) -> None:
    last = chunk("z.md", 0, "the last chunk")
    _, doc_z = write(store, document("a.md", "first"), document("z.md", last))
    (highest,) = rowids_of(store, last.chunk.chunk_id)
    with store.transaction() as tx:
        tx.delete_document(doc_z)
    fresh = chunk("y.md", 0, "a fresh chunk")
    write(store, document("y.md", fresh))
    assert rowids_of(store, fresh.chunk.chunk_id)[0] > highest


# -- chunks ----------------------------------------------------------------------------------------


def test_a_chunk_carries_its_documents_fields(store: Store) -> None:
    c = chunk("notes/a.md", 0, "alpha text", heading=("Notes", "Alpha"))
    write(store, document("notes/a.md", c, tags=("ops",), title="Notes"))
    row = store.chunk(c.chunk.chunk_id)
    assert row is not None
    assert (row.chunk_id, row.path, row.title, row.tags, row.parser) == (
        c.chunk.chunk_id, "notes/a.md", "Notes", ("ops",), "md",
    )  # fmt: skip
    assert (row.ordinal, row.start, row.end, row.line_start, row.line_end) == (0, 0, 10, 1, 1)
    assert (row.heading_path, row.text, row.content_hash) == (
        ("Notes", "Alpha"),
        "alpha text",
        c.chunk.content_hash,
    )


def test_chunks_by_rowid_leave_out_rowids_that_do_not_exist(store: Store) -> None:
    a, b = chunk("a.md", 0, "alpha"), chunk("a.md", 1, "beta")
    write(store, document("a.md", a, b))
    ra, rb = rowids_of(store, a.chunk.chunk_id, b.chunk.chunk_id)
    got = store.chunks_by_rowid([rb, 999_999, ra])
    assert set(got) == {ra, rb} and got[ra].chunk_id == a.chunk.chunk_id
    assert store.chunks_by_rowid([]) == {}
    assert set(store.chunks_by_rowid(list(range(1, 1_300)))) == {ra, rb}


def test_neighbours_are_the_documents_own_chunks_in_ordinal_order(store: Store) -> None:
    doc_a, _ = write(store, document("a.md", "c0", "c1", "c2", "c3"), document("b.md", "b0", "b1"))
    assert [r.ordinal for r in store.neighbours(doc_a, 1, 2)] == [1, 2]
    assert [r.text for r in store.neighbours(doc_a, -5, 99)] == ["c0", "c1", "c2", "c3"]
    assert store.neighbours(doc_a, 7, 9) == []


# -- lexical candidates ----------------------------------------------------------------------------


def test_chunks_holding_more_of_the_terms_rank_first(store: Store) -> None:
    both, one = chunk("a.md", 0, "alpha beta filler"), chunk("b.md", 0, "alpha filler words")
    write(store, document("a.md", both), document("b.md", one), document("c.md", "gamma filler words"))
    hits = store.lexical_candidates(["alpha", "beta"], limit=10)
    assert [r for r, _ in hits] == rowids_of(store, both.chunk.chunk_id, one.chunk.chunk_id)
    assert hits[0][1] > hits[1][1]


def test_a_heading_match_weighs_more_than_a_body_match(store: Store) -> None:
    in_heading = chunk("a.md", 0, "one two three", heading=("Zeta",))
    in_body = chunk("b.md", 0, "zeta two three", heading=("Omega",))
    write(store, document("a.md", in_heading), document("b.md", in_body))
    hits = store.lexical_candidates(["zeta"], limit=10)
    assert [r for r, _ in hits] == rowids_of(store, in_heading.chunk.chunk_id, in_body.chunk.chunk_id)


def test_the_store_indexes_the_lexical_text_it_is_given_not_the_chunk_text(store: Store) -> None:
    c = chunk("a.md", 0, "The Cats are here", lexical="猫 here", lexical_heading="title")
    write(store, document("a.md", c))
    assert [r for r, _ in store.lexical_candidates(["猫"], limit=5)] == rowids_of(store, c.chunk.chunk_id)
    assert store.lexical_candidates(["cats"], limit=5) == []
    assert store.lexical_candidates(["The"], limit=5) == []


def test_candidates_stop_at_the_limit_and_no_terms_find_nothing(store: Store) -> None:
    write(store, *(document(f"{i}.md", f"common word {i}") for i in range(8)))
    assert len(store.lexical_candidates(["common"], limit=3)) == 3
    assert store.lexical_candidates([], limit=3) == []


@pytest.mark.parametrize(
    "term", ['"', '""', "*", "-", ":", "x:y", "(", ")", "^", "+", "AND", "OR", "NOT", "NEAR", "NEAR(", "a'b"]
)
def test_a_term_is_never_query_syntax(store: Store, term: str) -> None:
    c = chunk("a.md", 0, "x", lexical="and or not near plain")
    write(store, document("a.md", c))
    assert isinstance(store.lexical_candidates([term], limit=5), list)
    assert isinstance(store.lexical_candidates(["plain", term], limit=5), list)


@pytest.mark.parametrize("word", ["and", "or", "not", "near"])
def test_an_operator_word_is_searched_as_a_word(store: Store, word: str) -> None:
    c = chunk("a.md", 0, "x", lexical="and or not near plain")
    write(store, document("a.md", c), document("b.md", "other text"))
    assert [r for r, _ in store.lexical_candidates([word], limit=5)] == rowids_of(store, c.chunk.chunk_id)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=12), max_size=6))
def test_no_terms_can_make_the_lexical_engine_raise(store: Store, terms: list[str]) -> None:
    if not store.counts().documents:
        write(store, document("a.md", "plain text with AND or NEAR words"))
    assert isinstance(store.lexical_candidates(terms, limit=5), list)
    assert isinstance(store.document_frequencies(terms), dict)


def test_the_path_prefix_is_literal_except_for_ascii_case(store: Store) -> None:
    write(
        store, document("a_b/x.md", "word"), document("axb/y.md", "word"), document("100%/z.md", "word"),
        document("100x/w.md", "word"), document("Notes/n.md", "word"),
    )  # fmt: skip
    by_rowid = {r: c.path for r, c in store.chunks_by_rowid(list(range(1, 100))).items()}

    def paths(prefix: str) -> set[str]:
        found = {
            by_rowid[r]
            for r, _ in store.lexical_candidates(
                ["word"], limit=10, filters=SearchFilters(path_prefix=prefix)
            )
        }
        allowed = store.filtered_rowids(SearchFilters(path_prefix=prefix))
        assert allowed is not None and {by_rowid[r] for r in allowed} == found
        return found

    assert paths("a_b/") == {"a_b/x.md"}
    assert paths("100%/") == {"100%/z.md"}
    assert paths("A_B/") == {"a_b/x.md"} and paths("notes/") == {"Notes/n.md"}
    assert paths("zzz") == set()


def test_tags_filter_without_case_and_require_every_tag(store: Store) -> None:
    write(
        store, document("a.md", "word", tags=("Deploy", "ops")), document("b.md", "word", tags=("deploy",)),
        document("c.md", "word"),
    )  # fmt: skip

    def paths(tags: tuple[str, ...]) -> set[str]:
        hits = store.lexical_candidates(["word"], limit=10, filters=SearchFilters(tags=tuple(tags)))
        return {c.path for c in store.chunks_by_rowid([r for r, _ in hits]).values()}

    assert paths(("DEPLOY",)) == {"a.md", "b.md"}
    assert paths(("deploy", "OPS")) == {"a.md"}
    assert paths(("missing",)) == set()
    allowed = store.filtered_rowids(SearchFilters(tags=("ops",)))
    assert allowed is not None and {c.path for c in store.chunks_by_rowid(sorted(allowed)).values()} == {
        "a.md"
    }


def test_no_filters_mean_no_allowed_set(store: Store) -> None:
    assert store.filtered_rowids(SearchFilters()) is None
    assert store.filtered_rowids(SearchFilters(path_prefix="")) is None


def test_document_frequencies_count_chunks_holding_each_term(store: Store) -> None:
    write(
        store, document("a.md", chunk("a.md", 0, "alpha alpha beta"), chunk("a.md", 1, "alpha")),
        document("b.md", chunk("b.md", 0, "gamma", heading=("Beta",))),
    )  # fmt: skip
    assert store.document_frequencies(["alpha", "beta", "absent"]) == {"alpha": 2, "beta": 2}
    assert store.document_frequencies([]) == {}


def test_counts_follow_every_commit_of_this_store_and_of_another_connection(tmp_path: Path) -> None:
    store, other = SqliteStore(tmp_path / "index.sqlite"), None
    try:
        assert store.counts() == (0, 0)
        write(store, document("a.md", chunk("a.md", 0, "alpha")))
        assert store.counts() == (1, 1)  # counted again after its own commit
        other = SqliteStore(tmp_path / "index.sqlite")
        write(other, document("b.md", chunk("b.md", 0, "beta"), chunk("b.md", 1, "gamma")))
        assert store.counts() == (2, 3)  # and after another connection's
        assert store.counts() == other.counts()
    finally:
        store.close()
        if other is not None:
            other.close()


def test_document_frequencies_are_at_most_a_minute_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kbseek.store.sqlite.store as sqlite_store

    clock = [1000.0]
    monkeypatch.setattr(sqlite_store.time, "monotonic", lambda: clock[0])
    store = SqliteStore(tmp_path / "index.sqlite")
    try:
        write(store, document("a.md", chunk("a.md", 0, "alpha")))
        assert store.document_frequencies(["alpha", "beta"]) == {"alpha": 1}
        write(store, document("b.md", chunk("b.md", 0, "alpha beta")))
        assert store.document_frequencies(["alpha"]) == {"alpha": 1}  # the cached count, within the minute
        assert store.document_frequencies(["beta"]) == {"beta": 1}  # "absent" is never cached
        clock[0] += sqlite_store.DF_CACHE_SECONDS + 1
        assert store.document_frequencies(["alpha", "beta"]) == {"alpha": 2, "beta": 1}
    finally:
        store.close()


def test_each_rowid_reports_the_terms_it_holds_in_heading_or_body(store: Store) -> None:
    c = chunk("a.md", 0, "the quokka sleeps", heading=("Zebra",))
    write(store, document("a.md", c))
    (rowid,) = rowids_of(store, c.chunk.chunk_id)
    matched = store.rows_matching_each_term(["zebra", "quokka", "absent"], [rowid, 424_242])
    assert matched == {rowid: {"zebra", "quokka"}, 424_242: set()}


# -- vectors ---------------------------------------------------------------------------------------


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_vectors_are_kept_per_content_and_shared_by_equal_chunks(store: Store) -> None:
    a, twin = chunk("a.md", 0, "shared text"), chunk("b.md", 0, "shared text")
    other = chunk("c.md", 0, "other text")
    write(store, document("a.md", a), document("b.md", twin), document("c.md", other))
    assert a.chunk.content_hash == twin.chunk.content_hash
    pending = store.chunks_without_vectors()
    assert sorted(pending) == pending and len(pending) == 2
    assert PendingChunk(a.chunk.content_hash, ("Title",), "shared text") in pending

    vector = _unit(1, 2, 3, 4)  # float64 in, float32 kept
    with store.transaction() as tx:
        tx.put_vectors({a.chunk.content_hash: vector})
    assert store.embedded_count() == 2
    assert [p.content_hash for p in store.chunks_without_vectors()] == [other.chunk.content_hash]
    ids, matrix = store.chunk_vectors(4)
    assert list(ids) == sorted(rowids_of(store, a.chunk.chunk_id, twin.chunk.chunk_id))
    assert matrix.dtype == np.float32
    assert np.array_equal(matrix, np.vstack([vector, vector]).astype(np.float32))
    assert np.array_equal(store.vector_rowids(), ids)


def test_vectors_for_rowids_are_the_requested_ones_with_a_vector_ascending(store: Store) -> None:
    cs = [chunk("a.md", i, f"text number {i}") for i in range(4)]
    write(store, document("a.md", *cs))
    rows = rowids_of(store, *(c.chunk.chunk_id for c in cs))
    with store.transaction() as tx:
        tx.put_vectors({c.chunk.content_hash: _unit(i + 1, 1, 0) for i, c in enumerate(cs[:3])})
    ids, matrix = store.vectors_for_rowids([rows[2], 999_999, rows[3], rows[0]], 3)
    assert list(ids) == [rows[0], rows[2]]
    assert np.array_equal(matrix, np.vstack([_unit(1, 1, 0), _unit(3, 1, 0)]).astype(np.float32))
    assert store.vectors_for_rowids([], 3)[1].shape == (0, 3)


def test_vector_pages_are_the_chunk_vectors_a_page_at_a_time(store: Store) -> None:
    cs = [chunk("a.md", i, f"text number {i}") for i in range(7)]
    write(store, document("a.md", *cs))
    with store.transaction() as tx:  # one chunk left without a vector: no page holds it
        tx.put_vectors({c.chunk.content_hash: _unit(i + 1, 1, 0) for i, c in enumerate(cs) if i != 3})
    ids, matrix = store.chunk_vectors(3)
    pages = list(store.vector_pages(3, page=2))
    assert [len(p_ids) for p_ids, _ in pages] == [2, 2, 2]
    assert all(m.dtype == np.float32 and m.shape == (len(i), 3) for i, m in pages)
    assert np.array_equal(np.concatenate([i for i, _ in pages]), ids)
    assert np.array_equal(np.vstack([m for _, m in pages]), matrix)
    assert [len(i) for i, _ in store.vector_pages(3)] == [6]  # the default page holds them all


def test_a_store_without_vectors_yields_no_page(store: Store) -> None:
    assert list(store.vector_pages(4)) == []
    write(store, document("a.md", "alpha"))
    assert list(store.vector_pages(4, page=1)) == []


def test_vectors_of_another_dimension_are_never_mixed_in(store: Store) -> None:
    write(store, document("a.md", "alpha"), document("b.md", "beta"))
    first, second = store.chunks_without_vectors()
    with store.transaction() as tx:
        tx.put_vectors({first.content_hash: np.ones(3) / math.sqrt(3)})
    with pytest.raises(KbBug, match="never mixed"), store.transaction() as tx:
        tx.put_vectors({second.content_hash: np.ones(4) / 2})
    with store.transaction() as tx:  # after clearing, another model's vectors are welcome
        tx.clear_vectors()
        tx.put_vectors({second.content_hash: np.ones(4) / 2})
    assert store.chunk_vectors(4)[1].shape == (1, 4)


def test_a_vector_put_again_replaces_the_old_one(store: Store) -> None:
    write(store, document("a.md", "alpha"))
    (pending,) = store.chunks_without_vectors()
    for v in (_unit(1, 0), _unit(0, 1)):
        with store.transaction() as tx:
            tx.put_vectors({pending.content_hash: v})
    assert np.array_equal(store.chunk_vectors(2)[1], _unit(0, 1)[None, :].astype(np.float32))


def test_pruning_drops_vectors_no_chunk_uses(store: Store) -> None:
    c = chunk("a.md", 0, "alpha")
    (doc_id,) = write(store, document("a.md", c))
    with store.transaction() as tx:
        tx.put_vectors({c.chunk.content_hash: _unit(1, 0)})
        tx.delete_document(doc_id)
    with store.transaction() as tx:
        tx.prune()
    write(store, document("a.md", c))
    assert store.embedded_count() == 0
    assert [p.content_hash for p in store.chunks_without_vectors()] == [c.chunk.content_hash]


# -- the next generation of vectors (a model switch, docs/decisions/0040) ---------------------------

_OLD = EmbeddingRecord("old:1", 2, "scheme-a", '{"provider": "old"}')
_NEW = EmbeddingRecord("new:1", 3, "scheme-a", '{"provider": "new"}')


def _embedded_with_old_model(store: Store, *cs: ChunkInput) -> None:
    write(store, document("a.md", *cs))
    with store.transaction() as tx:
        tx.put_vectors({c.chunk.content_hash: _unit(1, i + 1) for i, c in enumerate(cs)})
        tx.record_embedding(_OLD)


def test_the_embedder_spec_is_recorded_with_the_vectors_and_reads_back(opener: Opener) -> None:
    store = opener()
    with store.transaction() as tx:
        tx.record_embedding(_OLD)
    store.close()
    store = opener()
    try:
        assert store.meta().embedding == _OLD and store.meta().next_embedding is None
    finally:
        store.close()


def test_next_vectors_leave_the_current_ones_answering_until_promoted(store: Store) -> None:
    cs = [chunk("a.md", i, f"text number {i}") for i in range(3)]
    _embedded_with_old_model(store, *cs)
    before = store.chunk_vectors(2)
    assert store.missing_next_vector_count() == 3 and store.next_embedded_count() == 0
    with store.transaction() as tx:
        tx.start_next_generation(_NEW)
        tx.put_next_vectors({cs[0].chunk.content_hash: _unit(1, 0, 0)})
    meta = store.meta()
    assert meta.embedding == _OLD and meta.next_embedding == _NEW
    ids, matrix = store.chunk_vectors(2)  # searches still read the old model's vectors, all of them
    assert np.array_equal(ids, before[0]) and np.array_equal(matrix, before[1])
    assert store.embedded_count() == 3 and store.pending_vector_count() == 0
    assert store.next_embedded_count() == 1 and store.missing_next_vector_count() == 2
    assert [p.content_hash for p in store.chunks_without_next_vectors()] == sorted(
        c.chunk.content_hash for c in cs[1:]
    )
    with store.transaction() as tx:
        tx.put_next_vectors({c.chunk.content_hash: _unit(1, 1, i) for i, c in enumerate(cs[1:])})
        tx.promote_next_generation()
    meta = store.meta()
    assert meta.embedding == _NEW and meta.next_embedding is None
    ids, matrix = store.chunk_vectors(3)
    assert matrix.shape == (3, 3) and np.array_equal(ids, before[0])
    assert np.array_equal(matrix[0], _unit(1, 0, 0).astype(np.float32))
    assert store.next_embedded_count() == 0 and store.missing_next_vector_count() == 3


def test_a_next_generation_started_again_keeps_its_vectors_only_for_the_same_model(store: Store) -> None:
    c = chunk("a.md", 0, "alpha")
    _embedded_with_old_model(store, c)
    with store.transaction() as tx:
        tx.start_next_generation(EmbeddingRecord("new:1", None, "scheme-a", None))
        tx.put_next_vectors({c.chunk.content_hash: _unit(1, 0, 0)})
    with store.transaction() as tx:  # a resumed switch: what was written is kept
        tx.start_next_generation(_NEW)
    assert store.next_embedded_count() == 1 and store.meta().next_embedding == _NEW
    with store.transaction() as tx:  # the configuration changed again: another model's generation
        tx.start_next_generation(EmbeddingRecord("other:1", 5, "scheme-a", None))
    assert store.next_embedded_count() == 0 and store.missing_next_vector_count() == 1


def test_an_interrupted_switch_keeps_the_next_vectors_already_committed(store: Store) -> None:
    cs = [chunk("a.md", i, f"text number {i}") for i in range(2)]
    _embedded_with_old_model(store, *cs)
    with store.transaction() as tx:
        tx.start_next_generation(_NEW)
        tx.put_next_vectors({cs[0].chunk.content_hash: _unit(1, 0, 0)})
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.put_next_vectors({cs[1].chunk.content_hash: _unit(0, 1, 0)})
        tx.promote_next_generation()
        raise RuntimeError("killed")
    assert store.meta().embedding == _OLD and store.meta().next_embedding == _NEW
    assert store.next_embedded_count() == 1 and store.embedded_count() == 2


def test_next_vectors_need_a_started_generation(store: Store) -> None:
    c = chunk("a.md", 0, "alpha")
    _embedded_with_old_model(store, c)
    with pytest.raises(KbBug), store.transaction() as tx:
        tx.put_next_vectors({c.chunk.content_hash: _unit(1, 0, 0)})
    with pytest.raises(KbBug), store.transaction() as tx:
        tx.promote_next_generation()
    assert store.meta().embedding == _OLD


def test_dropping_the_next_generation_leaves_the_current_vectors(store: Store) -> None:
    c = chunk("a.md", 0, "alpha")
    _embedded_with_old_model(store, c)
    with store.transaction() as tx:
        tx.drop_next_generation()  # none yet: nothing happens
        tx.start_next_generation(_NEW)
        tx.put_next_vectors({c.chunk.content_hash: _unit(1, 0, 0)})
    with store.transaction() as tx:
        tx.drop_next_generation()
    meta = store.meta()
    assert meta.embedding == _OLD and meta.next_embedding is None
    assert store.next_embedded_count() == 0 and store.embedded_count() == 1


def test_pruning_and_clearing_reach_the_next_generation(store: Store) -> None:
    c, gone = chunk("a.md", 0, "alpha"), chunk("b.md", 0, "beta")
    _embedded_with_old_model(store, c)
    (gone_id,) = write(store, document("b.md", gone))
    with store.transaction() as tx:
        tx.start_next_generation(_NEW)
        tx.put_next_vectors({c.chunk.content_hash: _unit(1, 0, 0), gone.chunk.content_hash: _unit(0, 1, 0)})
        tx.delete_document(gone_id)
        tx.prune()
    write(store, document("b.md", gone))
    assert store.next_embedded_count() == 1
    with store.transaction() as tx:
        tx.clear_vectors()
    meta = store.meta()
    assert meta.embedding is None and meta.next_embedding is None
    assert store.next_embedded_count() == 0 and store.embedded_count() == 0


# -- what a store is made of -----------------------------------------------------------------------


def test_the_store_imports_no_text_processing() -> None:
    """The store receives analyzed text and holds no text processing of its own, so every backend
    indexes exactly what the one analyzer made (T7), and nothing below search reaches up into it."""
    forbidden = ("kbseek.text", "kbseek.ingest", "kbseek.search")
    found: list[str] = []
    for path in sorted(Path(kbseek.store.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            found += [f"{path.name}: {n}" for n in names if n.startswith(forbidden)]
    assert found == []


def test_sections_merged_into_a_chunk_read_back_in_order_and_go_with_their_document(store: Store) -> None:
    merged = chunk("notes/a.md", 0, "## A\n\nshort\n\n## B\n\nmore\n\n### C\n\nend", heading=("T", "A"))
    starts = (SectionStart(13, ("T", "B")), SectionStart(27, ("T", "B", "C")))
    merged = ChunkInput(replace(merged.chunk, sections=starts), merged.lexical_heading, merged.lexical_body)
    (doc_id,) = write(store, document("notes/a.md", merged, chunk("notes/a.md", 1, "alone")))
    one, two = rowids_of(store, merged.chunk.chunk_id, chunk("notes/a.md", 1, "alone").chunk.chunk_id)
    assert store.section_starts([one, two, 999_999]) == {one: starts}
    assert store.section_starts([]) == {}
    with store.transaction() as tx:
        tx.delete_document(doc_id)
    assert store.section_starts([one]) == {}


def test_a_store_knows_whether_it_holds_japanese_text(store: Store) -> None:
    assert not store.holds_japanese()
    write(store, document("notes/en.md", "rollback the load balancer"))
    assert not store.holds_japanese()
    japanese = chunk("notes/ja.md", 0, "ロールバック手順", lexical="ロールバック 手順")
    write(store, document("notes/ja.md", japanese))
    assert store.holds_japanese()


# -- links -----------------------------------------------------------------------------------------


def _path(target: str) -> Link:
    return Link("path", target)


def _wiki(name: str) -> Link:
    return Link("wiki", name)


def test_links_resolve_by_path_by_path_without_extension_by_folder_and_by_wiki_name_or_title(
    store: Store,
) -> None:
    write(
        store,
        document("learn/state.md", "state"),
        document("learn/index.md", "the learn folder"),
        document("ops/Deploy Runbook.md", "deploy"),
        document("ops/rotation.md", "rotation", title="On-call Rotation"),
        document(
            "home.md", "home",
            links=(
                _path("learn/state"), _path("learn"), _wiki("deploy runbook"), _wiki("On-Call rotation"),
                _path("missing.md"), _wiki("Nobody"), _path("home.md"), _path("learn/state.md"),
            ),
        ),
    )  # fmt: skip
    assert store.links_from("home.md", limit=100) == [
        LinkRow("home.md", "learn/index.md", "path"),
        LinkRow("home.md", "learn/state.md", "path"),
        LinkRow("home.md", "ops/Deploy Runbook.md", "wiki"),
        LinkRow("home.md", "ops/rotation.md", "wiki"),
    ]  # sorted by target, one per target, unresolved and self links left out
    assert store.links_to("learn/state.md", limit=100) == [LinkRow("home.md", "learn/state.md", "path")]
    assert store.links_to("ops/rotation.md", limit=100) == [LinkRow("home.md", "ops/rotation.md", "wiki")]
    assert store.links_to("home.md", limit=100) == []
    assert store.links_from("nowhere.md", limit=100) == store.links_to("nowhere.md", limit=100) == []


def test_a_wiki_name_two_notes_share_resolves_to_the_linkers_folder_then_the_shortest_path(
    store: Store,
) -> None:
    write(
        store,
        document("a/todo.md", "a todo"),
        document("b/deeper/todo.md", "b todo"),
        document("b/todo.md", "b's own todo"),
        document("a/note.md", "note", links=(_wiki("todo"),)),
        document("c/note.md", "note", links=(_wiki("Todo"),)),
    )
    assert [r.target for r in store.links_from("a/note.md", limit=10)] == ["a/todo.md"]
    # from another folder: the shortest path, then the first in code-point order
    assert [r.target for r in store.links_from("c/note.md", limit=10)] == ["a/todo.md"]
    assert [r.source for r in store.links_to("a/todo.md", limit=10)] == ["a/note.md", "c/note.md"]
    assert store.links_to("b/todo.md", limit=10) == []  # named by both, meant by neither


def test_links_follow_the_documents_written_edited_renamed_and_deleted(store: Store) -> None:
    (home,) = write(store, document("home.md", "home", links=(_wiki("later"),)))
    assert store.links_from("home.md", limit=10) == []
    (later,) = write(store, document("later.md", "written after the link"))
    assert store.links_from("home.md", limit=10) == [LinkRow("home.md", "later.md", "wiki")]
    with store.transaction() as tx:  # a rename: the old name no longer answers
        tx.write_document(document("notes/renamed.md", "moved"), replaces=later)
    assert store.links_from("home.md", limit=10) == []
    with store.transaction() as tx:  # an edit: the new links replace the old
        tx.write_document(document("home.md", "home", links=(_path("notes/renamed.md"),)), replaces=home)
    assert store.links_to("notes/renamed.md", limit=10) == [LinkRow("home.md", "notes/renamed.md", "path")]
    with store.transaction() as tx:
        tx.delete_document(home)
    assert store.links_to("notes/renamed.md", limit=10) == []


def test_link_reads_read_at_most_limit_links(store: Store) -> None:
    targets = [f"t{i:02}.md" for i in range(12)]
    write(store, *(document(t, t) for t in targets))
    write(store, document("hub.md", "hub", links=tuple(_path(t) for t in reversed(targets))))
    write(store, *(document(f"s{i:02}.md", "s", links=(_path("t00.md"),)) for i in range(5)))
    # the first links written, whatever their order by path
    assert [r.target for r in store.links_from("hub.md", limit=3)] == ["t09.md", "t10.md", "t11.md"]
    assert len(store.links_to("t00.md", limit=4)) == 4
    assert store.links_from("hub.md", limit=0) == store.links_to("t00.md", limit=0) == []


def test_link_names_hold_any_text_a_title_or_link_may(store: Store) -> None:
    odd = "a nul\x00 in a title"
    write(store, document("odd.md", "odd", title=odd), document("x.md", "x", links=(_wiki(odd),)))
    write(store, document("y.md", "y", links=(_wiki("a lone \ud800 surrogate"), _path("odd.md\x00"))))
    assert store.links_from("x.md", limit=10) == [LinkRow("x.md", "odd.md", "wiki")]
    assert store.links_from("y.md", limit=10) == []


def test_a_store_declares_whether_it_keeps_its_own_writer_lock(store: Store, tmp_path: Path) -> None:
    """A declared member, not an attribute looked for: the lock file serves a store without one."""
    from kbseek.store.lock import WriterLock
    from kbseek.store.opening import writer_lock

    lock = writer_lock(store, tmp_path)
    if store.pass_lock is None:
        assert isinstance(lock, WriterLock)
    else:
        assert lock is store.pass_lock
    assert (store.pass_lock is None) == isinstance(store, SqliteStore)
