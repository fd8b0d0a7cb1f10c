"""Hybrid search through the MCP client: both legs, the model's states, and re-embedding.

The fake embedder stands in for the model (texts that share words are similar), so these tests are
about kbseek's handling of a model, not about a model; what only the real one can do (paraphrases,
the other language) is in test_semantic_model.py.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.chunk_vectors import VECTOR_SCHEME
from kbseek.search.features import FEATURES
from kbseek.server.mcp import build_server
from tests.fakes import FakeEmbedder
from tests.fixture_copies import EXAMPLE_KB, copy_fixture

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def example_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    copy_fixture(EXAMPLE_KB, root)
    return root


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def hybrid(example_root: Path, embedder: FakeEmbedder) -> Iterator[KnowledgeBase]:
    core = KnowledgeBase(settings=Settings(root=example_root, freshness_interval_s=0.0), embedder=embedder)
    core.index()
    yield core
    core.close()


async def search(core: KnowledgeBase, query: str, **args: Any) -> dict[str, Any]:
    async with Client(build_server(core)) as client:
        result = await client.call_tool("search", {"query": query, **args})
    assert not result.is_error
    return result.structured_content or {}


def paths(data: dict[str, Any], n: int = 5) -> list[str]:
    return [h["path"] for h in data["hits"][:n]]


async def test_explain_shows_each_leg(hybrid: KnowledgeBase) -> None:
    data = await search(hybrid, "connection pool exhaustion", explain=True)
    assert data["legs"] == {"lexical": "ok", "semantic": "ok"}
    explain = data["hits"][0]["explain"]
    assert explain["lexical_rank"] is not None and explain["dense_rank"] is not None
    assert explain["fused_score"] == pytest.approx(data["hits"][0]["score"], abs=1e-5)


async def test_the_learned_ranking_says_what_moved_each_hit(
    example_root: Path, embedder: FakeEmbedder
) -> None:
    core = KnowledgeBase(settings=Settings(root=example_root, fusion="learned"), embedder=embedder)
    core.index()
    try:
        data = await search(core, "connection pool exhaustion", explain=True)
        async with Client(build_server(core)) as client:
            text = (
                await client.call_tool("search", {"query": "connection pool exhaustion", "explain": True})
            ).content
    finally:
        core.close()
    hits = data["hits"]
    assert hits and data["legs"] == {"lexical": "ok", "semantic": "ok"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    for hit in hits:
        learned = hit["explain"]["learned"]
        assert 0 < len(learned) <= 3 and all(name in FEATURES for name in learned)
        assert 0 < hit["score"] < 1 and hit["explain"]["fused_score"] == pytest.approx(hit["score"], abs=1e-5)
    assert "learned: " in text[0].text  # type: ignore[union-attr]


async def test_search_answers_lexically_while_the_model_loads(
    example_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kbseek.kb.SEARCH_PATIENCE", 0.2)  # a search waits this long, then answers
    gate = threading.Event()  # the model's load waits for the test, then fails: a server's first seconds
    held = FakeEmbedder(gate=gate, fail="the test is over")
    core = KnowledgeBase(settings=Settings(root=example_root), embedder=held)
    core.index(embed=False)
    core.start_background()  # what a server does: the model loads on a thread; a search waits a while
    try:
        data = await search(core, "rollback")
        assert data["legs"] == {"lexical": "ok", "semantic": "loading"}
        assert data["hits"] and any("still loading" in n for n in data["notes"])
        assert held.queries == []  # no search waited for the model or asked it anything
    finally:
        gate.set()
        core.close()


async def test_an_index_built_with_another_model_switches_to_the_configured_one(
    hybrid: KnowledgeBase,
) -> None:
    """Another model in ``[embed]`` is a switch made by the next pass (decision 0040), where it was
    a refusal that left semantic search off until ``--reembed``. The old model here was handed in
    as an object, so nothing can rebuild it: until the switch, searches answer by keywords and
    say why."""
    other_model = FakeEmbedder(model_id="another-model:1")
    other = KnowledgeBase(settings=Settings(root=hybrid.root), embedder=other_model)
    try:
        other.load_semantic()
        data = await search(other, "rollback")
        assert data["legs"]["semantic"] == "unavailable"
        note = next(n for n in data["notes"] if "switching the embedding model" in n)
        assert "to another-model:1: 0 of " in note and "searches use keywords until then" in note
        other.index()
        embedding = other.store.meta().embedding
        assert embedding is not None and embedding.model == "another-model:1"
        after = await search(other, "rollback")
        assert after["legs"]["semantic"] == "ok"
    finally:
        other.close()


def test_editing_one_section_re_embeds_exactly_one_chunk(
    hybrid: KnowledgeBase, embedder: FakeEmbedder
) -> None:
    path = hybrid.root / "design/cache-layer.md"
    text = path.read_text(encoding="utf-8")
    assert "## " in text
    # One word changes inside the short "Configuration" section, which is one chunk of its own.
    assert text.count("pool of 32 connections") == 1
    path.write_text(text.replace("pool of 32 connections", "pool of 48 connections"), encoding="utf-8")
    before = embedder.documents_embedded
    report = hybrid.index()
    assert report.updated == ["design/cache-layer.md"]
    assert report.chunks_embedded == 1
    assert embedder.documents_embedded - before == 2  # its passage and its section heading, nothing else


async def test_vectors_from_an_older_kbseek_of_the_same_model_are_re_made_not_refused(
    hybrid: KnowledgeBase,
) -> None:
    """An index written before chunk vectors leaned on section headings records no vector scheme."""
    embedding = hybrid.store.meta().embedding
    assert embedding is not None
    with hybrid.store.transaction() as tx:
        tx.record_embedding(dataclasses.replace(embedding, scheme=None))
    before = (await search(hybrid, "how do I undo a bad release"))["legs"]["semantic"]
    assert before == "ok"  # same model: still served while it waits for the pass
    report = hybrid.index()
    assert report.chunks_embedded == hybrid.store.counts()[1]
    embedding = hybrid.store.meta().embedding
    assert embedding is not None and embedding.scheme == VECTOR_SCHEME
    assert "runbooks/rollback.md" in paths(await search(hybrid, "how do I undo a bad release"))
