"""What the resource listing offers: topic groups of one or two folders (D2), decided by the sizes
recorded at index time (D8).

The listing asks the index, not the filesystem: a file that grew or shrank since the last pass
keeps its old place in or out of the offered set until a pass records its new size.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.config import Limits
from kbseek.server.mcp import build_server
from tests.conftest import make_core

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def offered(core: KnowledgeBase) -> set[str]:
    """Every kb://doc uri the topic listing offers."""
    uris: set[str] = set()
    async with Client(build_server(core)) as client:
        for topic in (await client.list_resources()).resources:
            body = (await client.read_resource(topic.uri)).contents[0].text  # type: ignore[union-attr]
            uris.update(line.split("](", 1)[1].split(")", 1)[0] for line in body.splitlines() if "](" in line)
    return uris


async def test_the_offered_set_follows_the_recorded_size_until_a_pass_records_a_new_one(
    kb_root: Path,
) -> None:
    c = make_core(kb_root, freshness_interval_s=3600.0, limits=Limits(max_resource_bytes=200))
    c.index()
    small, large = kb_root / "notes" / "plain.txt", kb_root / "runbooks" / "deploy.md"
    assert small.stat().st_size <= 200 < large.stat().st_size
    before = await offered(c)
    assert "kb://doc/notes/plain.txt" in before and "kb://doc/runbooks/deploy.md" not in before

    small.write_text("grown " * 100, encoding="utf-8")
    large.write_text("# Deploy runbook\n\nshort now\n", encoding="utf-8")
    assert await offered(c) == before  # no probe of the files on disk

    c.index()
    after = await offered(c)
    assert "kb://doc/notes/plain.txt" not in after and "kb://doc/runbooks/deploy.md" in after


async def test_topics_are_the_first_one_or_two_folders_and_the_root_is_a_topic_of_its_own(
    kb_root: Path,
) -> None:
    (kb_root / "top.md").write_text("# Top\n\nat the root\n", encoding="utf-8")
    deep = kb_root / "runbooks" / "network" / "dns" / "resolvers.md"
    deep.parent.mkdir(parents=True)
    deep.write_text("# Resolvers\n\nthree levels down\n", encoding="utf-8")
    c = make_core(kb_root)
    c.index()
    async with Client(build_server(c)) as client:
        topics = {str(r.uri) for r in (await client.list_resources()).resources}
        assert topics == {
            "kb://topic/",
            "kb://topic/notes/",
            "kb://topic/runbooks/",
            "kb://topic/runbooks/database/",
            "kb://topic/runbooks/network/",
        }
        root = (await client.read_resource("kb://topic/")).contents[0].text  # type: ignore[union-attr]
        network = (await client.read_resource("kb://topic/runbooks/network/")).contents[0].text  # type: ignore[union-attr]
    assert "kb://doc/top.md" in root and "kb://doc/notes/" not in root
    assert "kb://doc/runbooks/network/dns/resolvers.md" in network
