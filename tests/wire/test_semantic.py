"""Hybrid search through the MCP client, with the real default embedding model."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed import EmbedderSpec, make_embedder
from kbseek.embed.base import Embedder
from kbseek.embed.chunk_vectors import VECTOR_SCHEME
from kbseek.errors import EmbedderUnavailable, IndexIncompatible
from kbseek.server.mcp import build_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kb"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    e = make_embedder(EmbedderSpec())
    e.load()
    return e


@pytest.fixture
def example_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".kbseek"))
    return root


@pytest.fixture
def hybrid(example_root: Path, embedder: Embedder) -> Iterator[KnowledgeBase]:
    core = KnowledgeBase(settings=Settings(root=example_root, freshness_interval_s=0.0), embedder=embedder)
    core.load_semantic()
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


async def test_a_paraphrase_with_no_shared_words_finds_the_runbook(hybrid: KnowledgeBase) -> None:
    data = await search(hybrid, "the padlock on our web address lapses shortly, what should I do")
    assert data["legs"] == {"lexical": "ok", "semantic": "ok"}
    assert "runbooks/tls-certificate-renewal.md" in paths(data)


async def test_a_japanese_query_finds_an_english_only_page(hybrid: KnowledgeBase) -> None:
    data = await search(hybrid, "TLS証明書の更新がうまくいかないときの対処")
    assert paths(data, 1) == ["runbooks/tls-certificate-renewal.md"]


async def test_an_english_query_finds_a_japanese_only_page(hybrid: KnowledgeBase) -> None:
    data = await search(hybrid, "is it okay to write customer email addresses to the logs")
    assert "notes/logging-conventions.md" in paths(data, 3)


async def test_an_exact_identifier_is_the_first_hit(hybrid: KnowledgeBase) -> None:
    data = await search(hybrid, "LNT-4012")
    assert paths(data, 1) == ["notes/障害対応メモ.md"]


async def test_explain_shows_each_leg(hybrid: KnowledgeBase) -> None:
    data = await search(hybrid, "connection pool exhaustion", explain=True)
    explain = data["hits"][0]["explain"]
    assert explain["lexical_rank"] is not None and explain["dense_rank"] is not None
    assert explain["fused_score"] == pytest.approx(data["hits"][0]["score"], abs=1e-5)


class _HeldLoad:
    """The real model, whose load waits for the test and then fails: a server's first seconds, held."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.release = threading.Event()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def load(self) -> None:
        assert self.release.wait(30), "the test never released the load"
        raise EmbedderUnavailable("the test is over")

    def embed_documents(self, texts: Any) -> Any:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


async def test_search_answers_lexically_while_the_model_loads(example_root: Path, embedder: Embedder) -> None:
    held = _HeldLoad(embedder)
    core = KnowledgeBase(settings=Settings(root=example_root), embedder=held)
    core.index(embed=False)
    core.start_background()  # what a server does: the model loads on a thread; searches do not wait
    try:
        data = await search(core, "rollback")
        assert data["legs"] == {"lexical": "ok", "semantic": "loading"}
        assert data["hits"] and any("still loading" in n for n in data["notes"])
    finally:
        held.release.set()
        core.close()


class _OtherModel:
    """The real model under another id: what the index sees when the configured model changes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    model_id = "another-model:1"

    @property
    def dim(self) -> int:
        return self.inner.dim

    def load(self) -> None:
        self.inner.load()

    def embed_documents(self, texts: Any) -> Any:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


async def test_an_index_built_with_another_model_is_refused_with_the_reembed_hint(
    hybrid: KnowledgeBase, embedder: Embedder
) -> None:
    other = KnowledgeBase(settings=Settings(root=hybrid.root), embedder=_OtherModel(embedder))  # type: ignore[arg-type]
    try:
        other.load_semantic()
        data = await search(other, "rollback")
        assert data["legs"]["semantic"] == "unavailable"
        assert any("kbseek index --reembed" in n for n in data["notes"])
        with pytest.raises(IndexIncompatible, match="--reembed"):
            other.index()
        other.index(reembed=True)
        embedding = other.store.meta().embedding
        assert embedding is not None and embedding.model == "another-model:1"
    finally:
        other.close()


def test_editing_one_section_re_embeds_exactly_one_chunk(hybrid: KnowledgeBase) -> None:
    path = hybrid.root / "design/cache-layer.md"
    text = path.read_text(encoding="utf-8")
    assert "## " in text
    # One word changes inside the short "Configuration" section, which is one chunk of its own.
    assert text.count("pool of 32 connections") == 1
    path.write_text(text.replace("pool of 32 connections", "pool of 48 connections"), encoding="utf-8")
    report = hybrid.index()
    assert report.updated == ["design/cache-layer.md"]
    assert report.chunks_embedded == 1


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
