"""The approximate dense index (``search.ann``): as good as exact where it matters, and never inconsistent.

docs/decisions/0017: an HNSW graph of int8 vectors proposes candidates, the store's float32 vectors
score them, a filter is never leaked, a refresh never rebuilds, and a saved graph is trusted only
as far as the store agrees with it. Random clustered vectors in a real SQLite store; no model.
"""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import kbseek.search.ann as ann
from kbseek import KnowledgeBase
from kbseek.config import Settings, build_settings, load_config_file
from kbseek.documents import Chunk
from kbseek.embed.base import VectorPart
from kbseek.embed.pair import concatenate
from kbseek.errors import ConfigError
from kbseek.facade.semantic import SemanticLeg, SemanticState
from kbseek.search.ann import ApproximateIndex, open_vector_index, quantize, suits, wants_approximate
from kbseek.search.dense import DenseIndex, VectorIndex
from kbseek.store.base import Store
from kbseek.store.records import ChunkInput, DocumentInput, EmbeddingRecord
from kbseek.store.sqlite.store import SqliteStore
from tests.fakes import FakeEmbedder
from tests.fixture_copies import EXAMPLE_KB, copy_fixture

DIM = 48
PER_DOCUMENT = 100


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    v = centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, DIM)) * 0.08
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


class Corpus:
    """A SQLite store of documents whose chunks each have one random clustered vector."""

    def __init__(self, folder: Path, seed: int = 0, parts: tuple[int, ...] = ()) -> None:
        self.folder = folder
        self.parts = parts
        self.store = SqliteStore(folder / "index.sqlite")
        self.rng = np.random.default_rng(seed)
        self.centres = clustered(self.rng, 40, np.eye(1, DIM, dtype=np.float32)) + self.rng.normal(
            size=(40, DIM)
        ).astype(np.float32)
        self.documents: dict[str, int] = {}
        self._next = 0
        with self.store.transaction() as tx:
            tx.record_embedding(EmbeddingRecord("test:random", DIM, "test"))

    def vectors(self, n: int) -> np.ndarray:
        v = clustered(self.rng, n, self.centres)
        if not self.parts:
            return v
        # As ``embed.pair`` makes them: each part unit length, scaled by 1/sqrt(parts).
        blocks = np.split(v, np.cumsum(self.parts)[:-1], axis=1)
        return concatenate(
            [b / np.linalg.norm(b, axis=1, keepdims=True) for b in blocks],
            [VectorPart(w, 0.0, own_language_only=False) for w in self.parts],
        )

    def add(self, documents: int) -> None:
        for _ in range(documents):
            path = f"d{self._next // PER_DOCUMENT:04d}.md"
            first = self._next
            self._next += PER_DOCUMENT
            hashes = [f"{path}-{i}" for i in range(PER_DOCUMENT)]
            chunks = tuple(
                ChunkInput(Chunk(f"{path}#{i}", i, i, i + 1, (), "x", h, 1, 1), "", "x")
                for i, h in enumerate(hashes)
            )
            doc = DocumentInput(
                path=path, parser="md", size=1, mtime_ns=first, content_hash=path, chars=1, text="x", title=path,
                frontmatter={}, tags=(), date=None, warnings=(), chunks=chunks,
            )  # fmt: skip
            vectors = self.vectors(PER_DOCUMENT)
            with self.store.transaction() as tx:
                self.documents[path] = tx.write_document(doc, replaces=None)
                tx.put_vectors(dict(zip(hashes, vectors, strict=True)))

    def delete(self, path: str) -> None:
        with self.store.transaction() as tx:
            tx.delete_document(self.documents.pop(path))

    def exact(self) -> DenseIndex:
        index = DenseIndex(DIM)
        index.reload(self.store)
        return index


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    c = Corpus(tmp_path)
    c.add(30)  # 3,000 vectors
    return c


def top(index: VectorIndex, q: np.ndarray, k: int = 10, allowed: set[int] | None = None) -> list[int]:
    return [r for r, _ in index.search(q, k, allowed)]


def recall(approx: VectorIndex, exact: DenseIndex, queries: np.ndarray) -> float:
    return float(np.mean([len(set(top(approx, q)) & set(top(exact, q))) / 10 for q in queries]))


def test_recall_against_exact_search_and_the_same_cosines(corpus: Corpus) -> None:
    exact, approx = corpus.exact(), ApproximateIndex.open(DIM, corpus.store)
    queries = corpus.vectors(50)
    assert len(approx) == len(exact) == 3_000
    assert recall(approx, exact, queries) >= 0.95
    for q in queries[:10]:
        scores = dict(exact.search(q, 3_000))
        for rowid, cosine in approx.search(q, 10):
            assert cosine == pytest.approx(scores[rowid], abs=1e-5)  # rescored: the exact scale
        ranked = [s for _, s in approx.search(q, 10)]
        assert ranked == sorted(ranked, reverse=True)


def test_int8_cosines_are_close_to_the_exact_ones(corpus: Corpus) -> None:
    exact = corpus.exact()
    approx = ApproximateIndex(DIM, corpus.store, rescore=False)
    approx.reload(corpus.store)
    q = corpus.vectors(1)[0]
    scores = dict(exact.search(q, 3_000))
    assert all(abs(s - scores[r]) < 0.01 for r, s in approx.search(q, 10))


def test_quantize_uses_the_whole_int8_range_of_each_row() -> None:
    rows = np.array([[0.1, -0.05, 0.0], [0.0, 0.0, 0.0], [-3.0, 1.5, 0.0]], dtype=np.float32)
    assert quantize(rows).tolist() == [[127, -64, 0], [0, 0, 0], [-127, 64, 0]]


@pytest.mark.parametrize("scan_up_to", [ann.EXACT_FILTER_MAX, 10])
def test_a_filter_is_never_leaked(corpus: Corpus, monkeypatch: pytest.MonkeyPatch, scan_up_to: int) -> None:
    # Both ways of filtering: scanning the allowed rows, and oversampling the graph (a lower bound).
    monkeypatch.setattr(ann, "EXACT_FILTER_MAX", scan_up_to)
    exact, approx = corpus.exact(), ApproximateIndex.open(DIM, corpus.store)
    rows = corpus.store.vector_rowids()
    rng = np.random.default_rng(1)
    for size in (1, 25, 300, 2_000):
        allowed = {int(r) for r in rng.choice(rows, size=size, replace=False)} | {10**9}  # one unknown rowid
        overlaps = []
        for q in corpus.vectors(10):
            got = top(approx, q, 10, allowed)
            assert set(got) <= allowed - {10**9}
            assert len(got) == min(10, size)
            overlaps.append(len(set(got) & set(top(exact, q, 10, allowed))) / len(got))
        # Recall over the queries, not each one: the graph is built on several threads, so one query
        # may lose a neighbour or three from run to run; a filter that broke recall fails this.
        assert np.mean(overlaps) >= 0.85
    assert approx.search(corpus.vectors(1)[0], 10, set()) == []


def test_a_small_filter_gives_exactly_the_exact_answer(corpus: Corpus) -> None:
    exact, approx = corpus.exact(), ApproximateIndex.open(DIM, corpus.store)
    allowed = {int(r) for r in corpus.store.vector_rowids()[::50]}
    for q in corpus.vectors(10):
        assert top(approx, q, 10, allowed) == top(exact, q, 10, allowed)


def test_a_refresh_adds_and_removes_rows_without_rebuilding(corpus: Corpus) -> None:
    approx = ApproximateIndex.open(DIM, corpus.store)
    graph = approx._graphs[0]
    gone = set(corpus.store.vector_rowids().tolist())
    corpus.delete("d0003.md")
    corpus.add(2)
    gone -= set(corpus.store.vector_rowids().tolist())
    assert approx.refresh(corpus.store) == (200, 100)
    assert approx._graphs[0] is graph  # the same graph, changed in place
    assert len(approx) == 3_100 and np.array_equal(approx._ids, corpus.store.vector_rowids())
    exact = corpus.exact()
    queries = corpus.vectors(30)
    assert recall(approx, exact, queries) >= 0.95
    assert not any(set(top(approx, q, 50)) & gone for q in queries)
    assert approx.refresh(corpus.store) == (0, 0)


def test_a_row_deleted_before_the_refresh_is_never_returned(corpus: Corpus) -> None:
    approx = ApproximateIndex.open(DIM, corpus.store)
    doomed = set(corpus.store.vector_rowids().tolist())
    corpus.delete("d0000.md")
    doomed -= set(corpus.store.vector_rowids().tolist())
    for q in corpus.vectors(20):
        assert not set(top(approx, q, 50)) & doomed  # the rescoring reads the store, which has them no more


def saved_files(folder: Path) -> list[Path]:
    return sorted([folder / ann.META_FILENAME, *folder.glob(f"{ann.GRAPH_PREFIX}*{ann.GRAPH_SUFFIX}")])


def test_the_saved_graph_is_private_and_loaded_again(corpus: Corpus) -> None:
    first = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    files = saved_files(corpus.folder)
    assert len(files) == 2 and not first.loaded_from_disk
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert not list(corpus.folder.glob("*.tmp"))
    meta = json.loads((corpus.folder / ann.META_FILENAME).read_text())
    assert (meta["model"], meta["dim"], meta["format"]) == ("test:random", DIM, ann.FORMAT_VERSION)
    again = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    assert again.loaded_from_disk
    for q in corpus.vectors(10):
        assert again.search(q, 10) == first.search(q, 10)


def test_a_stale_saved_graph_is_reconciled_with_the_store(corpus: Corpus) -> None:
    ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    before = set(corpus.store.vector_rowids().tolist())
    corpus.delete("d0005.md")
    corpus.add(1)
    after = set(corpus.store.vector_rowids().tolist())
    again = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    assert again.loaded_from_disk
    assert set(again._ids.tolist()) == after
    fresh = ApproximateIndex.open(DIM, corpus.store)
    for q in corpus.vectors(10):
        assert not set(top(again, q, 50)) & (before - after)
        assert len(set(top(again, q)) & set(top(fresh, q))) >= 9
    new_rows, vectors = corpus.store.vectors_for_rowids(sorted(after - before), DIM)
    for rowid, vector in zip(new_rows[:5], vectors[:5], strict=True):
        assert top(again, vector, 1) == [rowid]  # a row added since the save is found


@pytest.mark.parametrize(
    "damage", ["garbage", "truncated", "missing", "other model", "no json", "old format"]
)
def test_a_damaged_or_foreign_saved_graph_is_rebuilt(corpus: Corpus, damage: str) -> None:
    first = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    meta_path = corpus.folder / ann.META_FILENAME
    meta = json.loads(meta_path.read_text())
    graph = corpus.folder / meta["files"][0]
    if damage == "garbage":
        graph.write_bytes(b"not a graph" * 100)
    elif damage == "truncated":
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    elif damage == "missing":
        graph.unlink()
    elif damage == "no json":
        meta_path.unlink()
    else:
        meta["model" if damage == "other model" else "format"] = "something else"
        meta_path.write_text(json.dumps(meta))
    again = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    assert not again.loaded_from_disk
    for q in corpus.vectors(5):
        assert again.search(q, 10) == first.search(q, 10) or recall(again, corpus.exact(), q[None]) >= 0.9
    assert ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder).loaded_from_disk  # saved anew


def test_vectors_remade_under_the_same_rowids_are_not_taken_from_a_stale_file(corpus: Corpus) -> None:
    ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    with corpus.store.transaction() as tx:  # every vector made again (as a re-embedding would)
        tx.put_vectors(
            {f"{path}-{i}": v for path in corpus.documents for i, v in enumerate(corpus.vectors(100))}
        )
    again = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    assert not again.loaded_from_disk  # the sampled vectors disagree with the store
    assert recall(again, corpus.exact(), corpus.vectors(20)) >= 0.95


def test_close_saves_what_a_refresh_left_unsaved(corpus: Corpus) -> None:
    approx = ApproximateIndex.open(DIM, corpus.store, folder=corpus.folder)
    corpus.add(1)
    approx.refresh(corpus.store)  # 100 rows: too few to save at once
    assert json.loads((corpus.folder / ann.META_FILENAME).read_text())["rows"] == 3_000
    approx.close()
    assert json.loads((corpus.folder / ann.META_FILENAME).read_text())["rows"] == 3_100
    assert len(saved_files(corpus.folder)) == 2  # the old graph file is gone


def test_parts_get_a_graph_each_and_read_back_each_parts_cosine(tmp_path: Path) -> None:
    parts = [32, 16]
    corpus = Corpus(tmp_path, parts=(32, 16))
    corpus.add(30)
    exact, approx = corpus.exact(), ApproximateIndex.open(DIM, corpus.store, parts=parts)
    assert len(approx._graphs) == 2
    for q in corpus.vectors(10):
        want = dict(exact.search_parts(q, 10, parts))
        got = dict(approx.search_parts(q, 10, parts))
        assert len(set(got) & set(want)) >= 0.9 * len(want)
        for rowid in set(got) & set(want):
            assert got[rowid] == pytest.approx(want[rowid], abs=1e-5)
    with pytest.raises(ValueError, match="built for vector parts"):
        approx.search_parts(corpus.vectors(1)[0], 10, [24, 24])


def test_the_factory_picks_exact_below_the_threshold_and_approximate_above(corpus: Corpus) -> None:
    assert isinstance(open_vector_index(corpus.store, DIM, approximate_above=3_000, folder=None), DenseIndex)
    assert isinstance(
        open_vector_index(corpus.store, DIM, approximate_above=2_999, folder=None), ApproximateIndex
    )
    assert isinstance(
        open_vector_index(corpus.store, DIM, approximate_above=0, folder=None), ApproximateIndex
    )
    assert wants_approximate(0, 0) and not wants_approximate(10, 10) and wants_approximate(11, 10)


def test_going_back_to_exact_removes_the_saved_graph(corpus: Corpus) -> None:
    approx = open_vector_index(corpus.store, DIM, approximate_above=0, folder=corpus.folder)
    assert saved_files(corpus.folder)[0].exists()
    assert suits(approx, 2_000) and not suits(approx, 6_000)  # back to exact only below half
    assert isinstance(
        open_vector_index(corpus.store, DIM, approximate_above=6_000, folder=corpus.folder), DenseIndex
    )
    assert not any(f.exists() for f in saved_files(corpus.folder))
    exact = corpus.exact()
    assert suits(exact, 3_000) and not suits(exact, 2_999)


def test_the_threshold_is_read_from_the_config_file_and_checked(tmp_path: Path) -> None:
    assert Settings(root=tmp_path).approximate_above == 100_000
    config = tmp_path / "kbseek.toml"
    config.write_text("[index]\napproximate_above = 0\n", encoding="utf-8")
    assert build_settings(root=tmp_path, file_values=load_config_file(config)).approximate_above == 0
    with pytest.raises(ConfigError, match=r"\[index\]\.approximate_above"):
        Settings(root=tmp_path, approximate_above=-1)
    config.write_text('[index]\napproximate_above = "many"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[index\]\.approximate_above"):
        build_settings(root=tmp_path, file_values=load_config_file(config))


QUERIES = ["roll back a release", "database backups", "障害対応", "coffee machine descaling"]


def test_a_knowledge_base_searched_approximately_answers_the_same_top_hit(kb_root: Path) -> None:
    answers: dict[int, list[str]] = {}
    for threshold in (100_000, 0):
        settings = Settings(root=kb_root, freshness_interval_s=0.0, approximate_above=threshold)
        with KnowledgeBase(settings=settings, embedder=FakeEmbedder()) as kb:
            kb.index()
            kb.load_semantic()  # a pass with nothing to embed need not load the model
            dense = kb.retrieval().dense
            assert isinstance(dense, ApproximateIndex if threshold == 0 else DenseIndex)
            answers[threshold] = [kb.search(q).hits[0].chunk_id for q in QUERIES]
    assert answers[0] == answers[100_000]
    assert (
        kb_root / ".kbseek" / ann.META_FILENAME
    ).exists()  # the approximate graph was saved beside the index


def semantic_leg(corpus: Corpus, approximate_above: int) -> SemanticLeg:
    settings = Settings(root=corpus.folder, approximate_above=approximate_above)
    return SemanticLeg(FakeEmbedder(dim=DIM, model_id="test:random"), corpus.store, settings, corpus.folder)


def loaded_leg(corpus: Corpus, approximate_above: int) -> SemanticLeg:
    leg = semantic_leg(corpus, approximate_above)
    leg.load()
    return leg


def test_the_semantic_leg_switches_kind_when_the_knowledge_base_crosses_the_threshold(
    corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    leg = loaded_leg(corpus, 3_000)
    assert isinstance(leg.dense, DenseIndex) and len(leg.dense) == 3_000
    corpus.add(1)
    refreshed: list[int] = []
    exact_refresh = DenseIndex.refresh

    def spy(self: DenseIndex, store: Store) -> tuple[int, int]:
        refreshed.append(1)
        return exact_refresh(self, store)

    monkeypatch.setattr(DenseIndex, "refresh", spy)
    leg.vectors_changed(rebuilt=False)
    monkeypatch.undo()
    assert isinstance(leg.dense, ApproximateIndex) and len(leg.dense) == 3_100
    assert not refreshed  # crossing upwards builds the graph from the store, never a float32 snapshot first
    for path in list(corpus.documents)[:10]:  # 2,100 rows: still above half the threshold
        corpus.delete(path)
    leg.vectors_changed(rebuilt=False)
    assert isinstance(leg.dense, ApproximateIndex) and len(leg.dense) == 2_100
    for path in list(corpus.documents)[:10]:
        corpus.delete(path)
    leg.vectors_changed(rebuilt=False)
    assert isinstance(leg.dense, DenseIndex) and len(leg.dense) == 1_100
    assert not (corpus.folder / ann.META_FILENAME).exists()


def _pages_that_stop(
    store: Store, after: int, stop: Callable[[], None]
) -> Callable[..., Iterator[tuple[np.ndarray, np.ndarray]]]:
    """``store.vector_pages``, calling ``stop`` once ``after`` pages are out: a build cut off midway."""
    pages = store.vector_pages

    def cut(dim: int, *, page: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for i, item in enumerate(pages(dim, page=page)):
            if i == after:
                stop()
            yield item

    return cut


def test_while_the_graph_is_built_searches_keep_the_exact_index_and_status_says_how_far(
    corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    leg = loaded_leg(corpus, 3_000)
    corpus.add(1)  # 3,100 vectors: past the threshold, so the next catch-up builds the graph
    monkeypatch.setattr(ann, "PAGE", 1_000)
    halfway, finish = threading.Event(), threading.Event()

    def hold() -> None:
        halfway.set()
        finish.wait(30)

    monkeypatch.setattr(corpus.store, "vector_pages", _pages_that_stop(corpus.store, 2, hold))
    builder = threading.Thread(target=leg.vectors_changed, kwargs={"rebuilt": False})
    builder.start()
    try:
        assert halfway.wait(30)
        assert isinstance(leg.dense, DenseIndex) and len(leg.dense) == 3_000  # what searches use meanwhile
        state, embedded, note = leg.for_status(3_100, indexing=False)
        assert state is SemanticState.PARTIAL and embedded == 3_000
        assert (
            note is not None
            and "building the approximate vector index: graph 2000/3100 vectors (64%)" in note
        )
        assert "sees the 3000 vectors it had" in note
        assert leg.building is not None and leg.building.progress.phase == "graph"
    finally:
        finish.set()
        builder.join(30)
    assert isinstance(leg.dense, ApproximateIndex) and len(leg.dense) == 3_100
    assert leg.building is None and leg.for_status(3_100, indexing=False)[0] is SemanticState.OK


def test_a_build_cut_off_midway_is_built_again_at_the_next_start(
    corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "PAGE", 1_000)

    def crash() -> None:
        raise SystemExit("the process stopped here")  # nothing after this line runs, as after a kill

    monkeypatch.setattr(corpus.store, "vector_pages", _pages_that_stop(corpus.store, 1, crash))
    first = semantic_leg(corpus, 2_000)
    with pytest.raises(SystemExit):
        first.load()
    assert not (corpus.folder / ann.META_FILENAME).exists()  # no half graph was published
    monkeypatch.undo()
    monkeypatch.setattr(ann, "PAGE", 1_000)
    heard: list[str] = []
    second = semantic_leg(corpus, 2_000)
    monkeypatch.setattr(
        SemanticLeg,
        "building",
        property(lambda self: None, lambda self, b: b and heard.append(b.note())),
        raising=False,
    )
    second.load()
    assert isinstance(second.dense, ApproximateIndex) and len(second.dense) == 3_000
    assert not second.dense.loaded_from_disk
    assert heard[0].startswith("building the approximate vector index: graph 0/3000 vectors (0%)")
    assert "searches match by keywords only" in heard[0] and "graph 3000/3000" in heard[-1]
    monkeypatch.undo()
    third = loaded_leg(corpus, 2_000)
    assert isinstance(third.dense, ApproximateIndex) and third.dense.loaded_from_disk  # saved once whole


def test_index_status_reports_the_graph_build_as_progress_and_says_what_searches_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_fixture(EXAMPLE_KB, tmp_path / "kb")  # 74 chunks
    settings = Settings(root=tmp_path / "kb", freshness_interval_s=0.0, approximate_above=20)
    with KnowledgeBase(settings=settings, embedder=FakeEmbedder()) as kb:
        kb.load_semantic()  # an empty index: an exact one with no vectors
        store = kb.retrieval().store
        monkeypatch.setattr(ann, "PAGE", 10)
        halfway, finish = threading.Event(), threading.Event()

        def hold() -> None:
            halfway.set()
            finish.wait(30)

        monkeypatch.setattr(store, "vector_pages", _pages_that_stop(store, 1, hold))
        first_pass = threading.Thread(target=kb.index)
        first_pass.start()
        try:
            assert halfway.wait(60)
            status = kb.status()
            assert status.progress is not None and status.progress.phase == "graph"
            assert status.progress.unit == "vectors" and status.progress.done == 10
            assert status.semantic == "partial" and status.embedded == 0
            assert any("searches match by keywords only" in n for n in status.notes)
            meanwhile = kb.search(QUERIES[0])  # keywords answer, and say why
            assert meanwhile.hits and meanwhile.legs.semantic == "partial"
            assert any("vector index is being built" in n for n in meanwhile.notes)
        finally:
            finish.set()
            first_pass.join(60)
        status = kb.status()
        assert status.semantic == "ok" and (status.progress is None or status.progress.phase != "graph")
        assert isinstance(kb.retrieval().dense, ApproximateIndex)
