"""What only the real default embedding model can do, through the MCP client: find a page that shares
no word with the question (a paraphrase, or the other language), and keep an exact identifier first
when the model's neighbours for it are noise. Everything else about the semantic leg is tested with
the fake embedder in test_semantic.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed import EmbedderSpec, make_embedder
from kbseek.embed.base import Embedder
from tests.fixture_copies import EXAMPLE_KB, copy_fixture
from tests.wire.test_semantic import paths, search

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    e = make_embedder(EmbedderSpec())
    e.load()
    return e


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[KnowledgeBase]:
    """One index of the example knowledge base for the module: these tests only search it."""
    root = tmp_path_factory.mktemp("semantic") / "kb"
    copy_fixture(EXAMPLE_KB, root)
    core = KnowledgeBase(settings=Settings(root=root, freshness_interval_s=0.0), embedder=embedder)
    core.index()
    yield core
    core.close()


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
