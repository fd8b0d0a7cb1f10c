"""The bounded lexical query (docs/decisions/0016): same ranking as the full OR, less work.

The bound only engages past tens of thousands of postings; these tests lower its thresholds so a
corpus of a few hundred chunks exercises it, and compare against the full query (bound switched off).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbseek.documents import Chunk
from kbseek.filters import NO_FILTERS, SearchFilters
from kbseek.store import lexical_bound
from kbseek.store.lexical_bound import rare_terms
from kbseek.store.records import ChunkInput, DocumentInput
from kbseek.store.sqlite.store import SqliteStore
from kbseek.text.analyzer import index_text, terms

COMMON = "the of is a cell"


def _chunk(path: str, ordinal: int, text: str) -> ChunkInput:
    digest = hashlib.sha256(f"{path}{ordinal}{text}".encode()).hexdigest()
    c = Chunk(
        chunk_id=f"{path}#{digest[:12]}", ordinal=ordinal, start=ordinal * 100, end=ordinal * 100 + len(text),
        heading_path=("Title",), text=text, content_hash=digest[:16], line_start=ordinal + 1, line_end=ordinal + 1,
    )  # fmt: skip
    return ChunkInput(chunk=c, lexical_heading="title", lexical_body=index_text(text))


def _write(store: SqliteStore, docs: dict[str, list[str]]) -> None:
    with store.transaction() as tx:
        for path, texts in docs.items():
            built = tuple(_chunk(path, i, t) for i, t in enumerate(texts))
            document = DocumentInput(
                path=path, parser="md", size=100, mtime_ns=1, content_hash=hashlib.sha256(path.encode()).hexdigest(),
                chars=sum(len(t) for t in texts), text="\n".join(texts), title="Title", frontmatter={}, tags=(), date=None,
                warnings=(), chunks=built,
            )  # fmt: skip
            tx.write_document(document, replaces=None)


def _corpus() -> dict[str, list[str]]:
    """300 chunks: every one holds the common words, "medium" one in five, "rare" one in sixty."""
    docs: dict[str, list[str]] = {}
    for i in range(300):
        words = [COMMON, f"filler{i % 37}", "word " * (i % 7)]
        if i % 5 == 0:
            words.append("medium")
        if i % 60 == 0:
            words.append("rare")
        docs[f"{'a' if i % 2 else 'b'}/note{i:03d}.md"] = [" ".join(words)]
    docs["ids/errors.md"] = ["the error LNT-4012 is raised when the cell is full"]
    docs["ja/tokyo.md"] = ["東京都の人口は約1400万人である。the cell"]
    docs["ja/osaka.md"] = ["大阪府の名物はたこ焼きである。the cell"]
    return docs


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "index.sqlite")
    _write(s, _corpus())
    yield s
    s.close()


@pytest.fixture
def tight(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds a few hundred chunks cross: full query up to 100 postings, rare terms up to 10."""
    monkeypatch.setattr(lexical_bound, "FULL_QUERY_POSTINGS", 100)
    monkeypatch.setattr(lexical_bound, "LEXICAL_POSTINGS_BUDGET", 10)


def _full(
    store: SqliteStore, query_terms: list[str], limit: int, filters: SearchFilters = NO_FILTERS
) -> list[tuple[int, float]]:
    saved = lexical_bound.LEXICAL_POSTINGS_BUDGET
    lexical_bound.LEXICAL_POSTINGS_BUDGET = None
    try:
        return store.lexical_candidates(query_terms, limit=limit, filters=filters)
    finally:
        lexical_bound.LEXICAL_POSTINGS_BUDGET = saved


NEGLIGIBLE = 1e-5
"""How far a bounded score may be from the full query's: a term held by half the chunks or more is left
out of it, and FTS5's BM25 gives such a term an IDF of 1e-6 (times at most k1 + 1 = 2.2 per term)."""


def _same_ranking(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> None:
    assert [r for r, _ in a] == [r for r, _ in b]
    assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9, abs=NEGLIGIBLE)


@pytest.mark.usefixtures("tight")
def test_a_common_term_beside_a_rare_one_ranks_as_the_full_query_without_running_it(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = terms("the rare cell medium")
    assert rare_terms(store._postings(query, 10), 10, least=5) is not None  # the bound engages
    full = _full(store, query, 5)
    monkeypatch.setattr(SqliteStore, "_bm25", lambda *a, **k: pytest.fail("the full query ran"))
    _same_ranking(store.lexical_candidates(query, limit=5), full)


@pytest.mark.usefixtures("tight")
def test_terms_most_chunks_hold_are_left_out_of_the_bounded_score(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored: list[list[str]] = []
    among = SqliteStore._bm25_among

    def spy(self: SqliteStore, rare: list[str], query: list[str], **kwargs: object) -> object:
        scored.append(list(query))
        return among(self, rare, query, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SqliteStore, "_bm25_among", spy)
    query = terms("the rare cell medium")
    store.lexical_candidates(query, limit=5)
    assert scored == [terms("rare medium")]  # "the" and "cell": in every chunk
    monkeypatch.setattr(lexical_bound, "NEGLIGIBLE_SHARE", 1.0)
    store.lexical_candidates(query, limit=5)
    assert scored[-1] == query


@pytest.mark.usefixtures("tight")
def test_too_few_rare_chunks_for_the_limit_falls_back_to_the_full_ranking(store: SqliteStore) -> None:
    query = terms("the rare")
    _same_ranking(store.lexical_candidates(query, limit=40), _full(store, query, 40))


@pytest.mark.usefixtures("tight")
def test_filters_apply_to_the_bounded_query(store: SqliteStore) -> None:
    query = terms("the medium rare")
    bounded = store.lexical_candidates(query, limit=5, filters=SearchFilters(path_prefix="a/"))
    _same_ranking(bounded, _full(store, query, 5, SearchFilters(path_prefix="a/")))
    paths = {r.path for r in store.chunks_by_rowid([r for r, _ in bounded]).values()}
    assert paths and all(p.startswith("a/") for p in paths)


@pytest.mark.usefixtures("tight")
@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("what is the cell error LNT-4012", "ids/errors.md"),
        ("東京都の人口", "ja/tokyo.md"),
        ("大阪 the cell たこ焼き", "ja/osaka.md"),
    ],
)
def test_identifier_and_japanese_queries_find_their_exact_chunk(
    store: SqliteStore, query: str, path: str
) -> None:
    hits = store.lexical_candidates(terms(query), limit=1)
    assert [r.path for r in store.chunks_by_rowid([hits[0][0]]).values()] == [path]


@pytest.mark.usefixtures("tight")
def test_a_query_of_common_words_only_still_finds_chunks(store: SqliteStore) -> None:
    hits = store.lexical_candidates(terms("the of is"), limit=20)
    assert len(hits) == 20


def test_a_small_knowledge_base_runs_the_full_query_untouched(store: SqliteStore) -> None:
    """At the shipped thresholds 300 chunks never cross the bound, whatever the query."""
    query = terms("the of is a cell medium rare word")
    assert rare_terms(store._postings(query, 4_000), 4_000, least=100) is None
    _same_ranking(store.lexical_candidates(query, limit=100), _full(store, query, 100))


_WORDS = [
    "the",
    "of",
    "is",
    "a",
    "cell",
    "medium",
    "rare",
    "word",
    "filler3",
    "lnt",
    "4012",
    "東京",
    "missing",
]


@pytest.mark.usefixtures("tight")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6, unique=True), limit=st.integers(1, 30))
def test_every_hit_holds_a_query_term_and_scores_as_in_the_full_query(
    store: SqliteStore, query: list[str], limit: int
) -> None:
    """Bounded or not, a hit is a chunk holding a query term, scored by BM25 over the whole query.

    (Which chunks make a short list may differ: a chunk of common words only can outscore the best
    rare-term chunk, and the bounded query does not look at it. The benchmark measures how often.)
    """
    bounded = store.lexical_candidates(query, limit=limit)
    held = store.rows_matching_each_term(query, [r for r, _ in bounded])
    assert all(held[r] for r, _ in bounded)
    full = dict(_full(store, query, 1_000))
    assert len(bounded) == min(limit, len(full))
    assert [s for _, s in bounded] == pytest.approx([full[r] for r, _ in bounded], rel=1e-9, abs=NEGLIGIBLE)
    assert [s for _, s in bounded] == sorted((s for _, s in bounded), reverse=True)


@given(
    postings=st.dictionaries(st.text(min_size=1, max_size=3), st.integers(0, 50_000), max_size=10),
    budget=st.integers(1, 5_000),
    least=st.integers(1, 200),
)
def test_rare_terms_takes_the_rarest_present_terms_and_at_least_one(
    postings: dict[str, int], budget: int, least: int
) -> None:
    chosen = rare_terms(postings, budget, least=least)
    present = [t for t, n in postings.items() if n > 0]
    if sum(postings[t] for t in present) <= lexical_bound.FULL_QUERY_POSTINGS:
        assert chosen is None
        return
    ordered = sorted(postings[t] for t in present)
    if chosen is None:  # only when the rule would take every term anyway
        assert sum(ordered[:-1]) <= budget or sum(ordered[:-1]) < least
        return
    assert 0 < len(chosen) < len(present)
    counts = [postings[t] for t in chosen]
    assert counts == sorted(counts)
    assert max(counts) <= min(postings[t] for t in present if t not in chosen)
    before_last = sum(counts[:-1])
    assert before_last <= budget or before_last < least
