"""index_status while a pass runs: phase, counts, rate and ETA, from the same tracker as the CLI."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.base import EmbedderSpec
from kbseek.progress import ProgressSnapshot
from kbseek.server.mcp import build_server
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def held_core(root: Path) -> tuple[KnowledgeBase, FakeEmbedder]:
    """One text per batch, and the second call to the model waits until the test lets it go.

    Holding the pass in the middle of its embed phase is what lets a test look at index_status
    exactly where a person or an agent would, without timing anything.
    """
    embedder = FakeEmbedder(pause_at=2)
    settings = Settings(root=root, freshness_interval_s=0.0, embed=EmbedderSpec(batch_size=1))
    core = KnowledgeBase(settings=settings, embedder=embedder)
    core.load_semantic()
    return core, embedder


async def index_status(core: KnowledgeBase) -> tuple[dict[str, Any], str]:
    async with Client(build_server(core)) as client:
        result = await client.call_tool("index_status", {})
    assert not result.is_error
    return result.structured_content or {}, result.content[0].text  # type: ignore[union-attr]


async def test_index_status_mid_pass_reports_phase_counts_rate_and_eta(kb_root: Path) -> None:
    core, embedder = held_core(kb_root)
    # Documents are written first, without vectors: while a pass parses, the model already embeds
    # (ingest.embed_ahead), so only a pass with nothing left to parse is in its embed phase for sure.
    core.index(embed=False)
    seen: list[ProgressSnapshot] = []
    worker = threading.Thread(target=lambda: core.index(progress=seen.append))
    worker.start()
    try:
        assert embedder.paused.wait(30), "the pass never reached its second embedding call"
        data, text = await index_status(core)
    finally:
        embedder.resume.set()
        worker.join(30)
    assert data["indexing"] is True
    progress = data["progress"]
    assert progress["phase"] == "embed" and progress["unit"] == "chunks"
    assert progress["done"] == 1 and progress["total"] >= 2
    assert progress["rate"] > 0 and progress["eta"] >= 0  # one chunk done in measurable time
    assert "running — embed 1/" in text  # the readable block says the same
    # The caller's display got the very snapshot that index_status showed: one tracker for both.
    shown = next(s for s in seen if s.phase == "embed" and s.done == 1)
    assert (shown.total, round(shown.rate or 0, 2)) == (progress["total"], progress["rate"])
    assert list(dict.fromkeys(s.phase for s in seen)) == ["scan", "embed"]

    data, text = await index_status(core)
    assert data["indexing"] is False and data["progress"] is None
    assert "idle" in text
    core.close()


async def test_the_progress_shape_is_in_the_tool_output_schema(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["index_status"].output_schema or {}
    progress = schema["properties"]["progress"]
    assert {"phase", "done", "total", "unit", "rate", "eta"} <= set(progress["properties"])
    assert "scan" in progress["properties"]["phase"]["description"]
    assert "seconds" in progress["properties"]["eta"]["description"].lower()
