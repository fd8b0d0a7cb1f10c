"""Nearest vectors found inside PostgreSQL (``store/postgres/vectors.py``, docs/decisions/0032), on a
real server (``tests/postgres_server.py``).

Exact search is the reference throughout: the in-process ``DenseIndex`` over the same vectors read
back from the store. Without the HNSW index the store must give exactly its answer; with the index,
nearly its answer, and never a row outside a filter or a row whose chunk is gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.filters import SearchFilters
from kbseek.search.dense import DenseIndex
from kbseek.search.store_vectors import StoreVectorIndex, open_dense_index, suits
from kbseek.store.records import ChunkInput, DocumentInput
from kbseek.store.sqlite.store import SqliteStore
from tests import postgres_server
from tests.fakes import FakeEmbedder
from tests.unit.test_store_contract import chunk, document, write

psycopg = pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")
from kbseek.store.postgres import vectors as postgres_vectors  # noqa: E402
from kbseek.store.postgres.schema import SCHEMA_PREFIX  # noqa: E402
from kbseek.store.postgres.store import PostgresStore  # noqa: E402

DIM = 24


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    s = PostgresStore(postgres_server.url(), postgres_server.kb_name("vec"))
    yield s
    s.close()


def _vectors(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """Unit vectors around a few centres, so that neighbours are near but not trivially separated."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(n // 50, 2), dim))
    v = centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, dim)) * 0.6
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _fill(store: PostgresStore, n: int, *, dim: int = DIM, per_doc: int = 50, seed: int = 0) -> np.ndarray:
    """``n`` chunks with one vector each, in documents of ``per_doc``; odd documents are tagged."""
    vectors = _vectors(n, dim, seed)
    docs: list[DocumentInput] = []
    for d in range(0, n, per_doc):
        chunks: list[ChunkInput] = [
            chunk(f"d{d:06d}.md", i, f"text {d + i} seed {seed}") for i in range(per_doc)
        ]
        docs.append(document(f"d{d:06d}.md", *chunks[: n - d], tags=("odd",) if d // per_doc % 2 else ()))
    write(store, *docs)
    hashes = [c.chunk.content_hash for doc in docs for c in doc.chunks]
    with store.transaction() as tx:
        tx.put_vectors(dict(zip(hashes, vectors, strict=True)))
    return vectors


def _exact(store: PostgresStore, dim: int = DIM) -> DenseIndex:
    ids, matrix = store.chunk_vectors(dim)
    return DenseIndex.from_arrays(ids, matrix)


def _queries(n: int, dim: int = DIM) -> np.ndarray:
    return _vectors(n, dim, seed=99)


def _indexes(store: PostgresStore) -> dict[int, bool]:
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {store.schema}")
        return postgres_vectors.vector_indexes(conn)


def test_the_postgres_store_offers_nearest_vectors_and_the_sqlite_store_does_not(
    store: PostgresStore, tmp_path: Path
) -> None:
    assert store.nearest is store
    sqlite = SqliteStore(tmp_path / "index.sqlite")
    try:
        assert sqlite.nearest is None
    finally:
        sqlite.close()


def test_without_the_index_the_store_returns_the_exact_top_k(store: PostgresStore) -> None:
    _fill(store, 300)
    exact = _exact(store)
    assert _indexes(store) == {}
    for q in _queries(10):
        got = store.nearest_vectors(q, 10)
        want = exact.search(q, 10)
        assert [r for r, _ in got] == [r for r, _ in want]
        assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-6)


def test_with_the_index_the_graph_answers_with_high_recall(store: PostgresStore) -> None:
    _fill(store, 2_000)
    exact = _exact(store)
    assert store.build_vector_index(DIM) is True
    assert store.build_vector_index(DIM) is False  # there already: nothing to do
    assert _indexes(store) == {DIM: True}
    found = []
    for q in _queries(30):
        got = store.nearest_vectors(q, 10)
        want = {r for r, _ in exact.search(q, 10)}
        assert len(got) == 10 and [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        found.append(len(want & {r for r, _ in got}) / 10)
    assert np.mean(found) >= 0.95


def test_the_graph_search_is_planned_on_the_index(store: PostgresStore) -> None:
    """The expression and the predicate of the statement must be the index's, or the planner scans."""
    _fill(store, 500)
    store.build_vector_index(DIM)
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {store.schema}, public")
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.execute("SET enable_seqscan = off")  # a 500-row table: the cost model alone would scan it
        for filtered in (False, True):
            plan = conn.execute(
                "EXPLAIN " + postgres_vectors.approximate_statement(DIM, filtered=filtered),
                {"q": postgres_vectors.Vector(_queries(1)[0]), "k": 10, "allowed": [1, 2, 3]},
            ).fetchall()
            text = "\n".join(str(r[0]) for r in plan)
            assert postgres_vectors.index_name(DIM) in text, text
            assert "Semi Join" not in text, text


@pytest.mark.parametrize("graph", [False, True])
def test_a_filter_never_lets_a_row_outside_it_through(
    store: PostgresStore, graph: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(store, 1_000)
    exact = _exact(store)
    if graph:
        store.build_vector_index(DIM)
        monkeypatch.setattr(
            postgres_vectors, "EXACT_FILTER_MAX", 10
        )  # the iterative scan, not the exact path
    allowed = store.filtered_rowids(SearchFilters(tags=("odd",)))
    assert allowed is not None and 0 < len(allowed) < 1_000
    small = set(sorted(allowed)[:7])  # fewer rows than asked for
    recalls = []
    for q in _queries(20):
        got = store.nearest_vectors(q, 10, allowed)
        want = [r for r, _ in exact.search(q, 10, allowed)]
        assert {r for r, _ in got} <= allowed and len(got) == 10
        recalls.append(len(set(want) & {r for r, _ in got}) / 10)
        assert sorted(r for r, _ in store.nearest_vectors(q, 10, small)) == sorted(small)
        assert store.nearest_vectors(q, 10, set()) == []
    assert np.mean(recalls) == 1.0 if not graph else np.mean(recalls) >= 0.9


@pytest.mark.parametrize("graph", [False, True])
def test_chunks_sharing_a_content_hash_share_its_vector_and_are_each_found(
    store: PostgresStore, graph: bool
) -> None:
    _fill(store, 200)
    twin_text = "the same words in two notes"
    write(store, document("twins/a.md", twin_text), document("twins/b.md", twin_text))
    twin = _vectors(1, seed=5)[0]
    a, b = (
        store.chunks_by_rowid(list(store.filtered_rowids(SearchFilters(path_prefix=p)) or ()))
        for p in ("twins/a", "twins/b")
    )
    (row_a,), (row_b,) = a.values(), b.values()
    assert row_a.content_hash == row_b.content_hash
    with store.transaction() as tx:
        tx.put_vectors({row_a.content_hash: twin})
    if graph:
        store.build_vector_index(DIM)
    got = store.nearest_vectors(twin, 3)
    assert [r for r, _ in got[:2]] == sorted([row_a.rowid, row_b.rowid])
    assert got[0][1] == pytest.approx(1.0, abs=1e-5) and got[1][1] == got[0][1]
    only_b = store.nearest_vectors(twin, 3, {row_b.rowid})
    assert [r for r, _ in only_b] == [row_b.rowid]


def test_a_vector_whose_chunk_is_gone_is_never_returned(store: PostgresStore) -> None:
    _fill(store, 300)
    store.build_vector_index(DIM)
    q = _queries(1)[0]
    best = store.nearest_vectors(q, 1)[0][0]
    row = store.chunks_by_rowid([best])[best]
    with store.transaction() as tx:
        tx.delete_document(row.document_id)  # its vector stays until prune
    got = store.nearest_vectors(q, 10)
    assert len(got) == 10 and best not in {r for r, _ in got}
    assert not set(store.chunks_by_rowid([r for r, _ in got])) ^ {r for r, _ in got}


def test_vectors_of_a_new_dimension_go_past_the_old_index_which_the_next_build_replaces(
    store: PostgresStore,
) -> None:
    _fill(store, 300)
    store.build_vector_index(DIM)
    other = DIM + 8
    hashes = [r.content_hash for r in store.chunks_by_rowid(list(store.vector_rowids())).values()]
    with store.transaction() as tx:
        tx.clear_vectors()
        tx.put_vectors(dict(zip(hashes, _vectors(len(hashes), other, seed=3), strict=True)))
    assert _indexes(store) == {DIM: True}  # still there, holding nothing: the insert skipped it
    exact = _exact(store, other)
    q = _queries(1, other)[0]
    assert [r for r, _ in store.nearest_vectors(q, 10)] == [r for r, _ in exact.search(q, 10)]
    assert store.build_vector_index(other) is True
    assert _indexes(store) == {other: True}
    with store.transaction() as tx:
        tx.clear_vectors()
    assert store.nearest_vectors(q, 10) == []


def test_an_invalid_index_left_by_a_cut_off_build_is_ignored_then_rebuilt(store: PostgresStore) -> None:
    _fill(store, 300)
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {store.schema}, public")
        conn.execute(
            f"CREATE INDEX {postgres_vectors.index_name(DIM)} ON embeddings"
            f" USING hnsw ((vector::halfvec({DIM})) halfvec_cosine_ops) WHERE vector_dims(vector) = {DIM}"
        )
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
            (postgres_vectors.index_name(DIM),),
        )
    assert _indexes(store) == {DIM: False}
    exact = _exact(store)
    q = _queries(1)[0]
    assert [r for r, _ in store.nearest_vectors(q, 10)] == [r for r, _ in exact.search(q, 10)]
    assert store.build_vector_index(DIM) is True
    assert _indexes(store) == {DIM: True}


def test_an_index_an_earlier_version_built_serves_until_the_writer_builds_the_halfvec_one(
    store: PostgresStore,
) -> None:
    """Indexes built before decision 0045 are over ``vector`` with pgvector's default shape: searches
    use one (wider) until the writer's next build has made the ``halfvec`` one, which replaces it."""
    _fill(store, 2_000)
    legacy = postgres_vectors.index_name(DIM, half=False)
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"SET search_path TO {store.schema}, public")
        conn.execute(
            f"CREATE INDEX {legacy} ON embeddings USING hnsw ((vector::vector({DIM})) vector_cosine_ops)"
            f" WHERE vector_dims(vector) = {DIM}"
        )
    exact = _exact(store)

    def recall() -> float:
        found = []
        for q in _queries(30):
            want = {r for r, _ in exact.search(q, 10)}
            found.append(len(want & {r for r, _ in store.nearest_vectors(q, 10)}) / 10)
        return float(np.mean(found))

    def kinds() -> list[tuple[str, bool]]:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute(f"SET search_path TO {store.schema}, public")
            return sorted((i.name, i.valid) for i in postgres_vectors.graph_indexes(conn))

    assert kinds() == [(legacy, True)] and recall() >= 0.95
    assert store.build_vector_index(DIM) is True
    assert kinds() == [(postgres_vectors.index_name(DIM), True)]  # the new kind, and the old one dropped
    assert postgres_vectors.index_name(DIM).endswith("_half") and recall() >= 0.95


def test_the_store_index_is_chosen_above_the_threshold_and_built_only_by_a_writer(
    store: PostgresStore,
) -> None:
    _fill(store, 120)
    below = open_dense_index(store, DIM, approximate_above=1_000, folder=None, builds=True)
    assert isinstance(below, DenseIndex) and _indexes(store) == {}
    reader = open_dense_index(store, DIM, approximate_above=100, folder=None, builds=False)
    assert isinstance(reader, StoreVectorIndex) and len(reader) == 120 and _indexes(store) == {}
    writer = open_dense_index(store, DIM, approximate_above=100, folder=None, builds=True)
    assert isinstance(writer, StoreVectorIndex) and _indexes(store) == {DIM: True}
    assert suits(writer, 200) and not suits(writer, 300)  # back to exact only below half the threshold
    two_models = open_dense_index(store, DIM, approximate_above=0, folder=None, parts=(16, 8))
    assert not isinstance(two_models, StoreVectorIndex)
    q = _queries(1)[0]
    assert [r for r, _ in reader.search(q, 5)] == [r for r, _ in _exact(store).search(q, 5)]


def test_a_knowledge_base_above_the_threshold_answers_as_the_sqlite_one(kb_root: Path) -> None:
    def open_kb(**store: str) -> KnowledgeBase:
        settings = Settings(root=kb_root, freshness_interval_s=0.0, approximate_above=1, **store)
        kb = KnowledgeBase(settings=settings, embedder=FakeEmbedder())
        kb.load_semantic()
        kb.index()
        return kb

    name = postgres_server.kb_name("kbvec")
    sqlite = open_kb()
    postgres = open_kb(store_url=postgres_server.url(), kb_name=name)
    reader = KnowledgeBase(
        settings=Settings(
            root=kb_root,
            freshness_interval_s=0.0,
            approximate_above=1,
            store_url=postgres_server.url(),
            kb_name=name,
        ),
        embedder=FakeEmbedder(),
        read_only=True,
    )
    try:
        assert isinstance(postgres.store, PostgresStore)
        assert isinstance(postgres._semantic.dense, StoreVectorIndex)
        assert _indexes(postgres.store) == {FakeEmbedder().dim: True}
        reader.load_semantic()
        assert isinstance(reader._semantic.dense, StoreVectorIndex)
        for query in ("rollback load balancer", "kitten pictures channel", "on-call handover"):
            here = [(h.path, h.chunk_id) for h in sqlite.search(query).hits[:5]]
            assert [(h.path, h.chunk_id) for h in postgres.search(query).hits[:5]] == here, query
            assert [(h.path, h.chunk_id) for h in reader.search(query).hits[:5]] == here, query
    finally:
        sqlite.close()
        postgres.close()
        reader.close()


def test_past_400000_vectors_the_graph_is_searched_wider() -> None:
    """Recall at a fixed breadth falls with size (decision 0045: 0.968 at 250,000, 0.947 at 500,000)."""
    small, large = postgres_vectors.EF_SEARCH, postgres_vectors.EF_SEARCH_LARGE
    assert postgres_vectors.breadth_for(0) == postgres_vectors.breadth_for(400_000) == small
    assert postgres_vectors.breadth_for(400_001) == large > small


def test_a_readers_first_search_takes_the_breadth_of_the_index_size(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader whose first call is a search has counted nothing yet: it counts, instead of searching
    the graph at the smallest breadth whatever the index's size (the count came from whichever call
    ran before, and the keyword leg counts on another thread at the same time)."""
    _fill(store, 200)
    monkeypatch.setattr(postgres_vectors, "LARGE", 100)  # 200 vectors stand for a large index
    asked: list[int] = []
    nearest = postgres_vectors.nearest

    def recording(*args: object, ef_search: int, **kwargs: object) -> object:
        asked.append(ef_search)
        return nearest(*args, ef_search=ef_search, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(postgres_vectors, "nearest", recording)
    reader = PostgresStore(postgres_server.url(), store.schema.removeprefix(SCHEMA_PREFIX))
    try:
        assert reader.nearest_vectors(_queries(1)[0], 5)
        assert asked == [postgres_vectors.EF_SEARCH_LARGE]
    finally:
        reader.close()
