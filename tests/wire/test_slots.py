"""Knowledge-base calls run a few at a time (``server/slots.py``): a burst waits in line instead of
sharing the cores twenty ways. Driven through a real MCP client in process and the web API."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server
from kbseek.server.slots import SLOTS
from kbseek.server.web import build_web_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Crowd:
    """Wraps a knowledge-base method: counts how many calls run at once, each held for a moment."""

    def __init__(self, method: Any) -> None:
        self.method, self.lock, self.now, self.most = method, threading.Lock(), 0, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(0.05)
            return self.method(*args, **kwargs)
        finally:
            with self.lock:
                self.now -= 1


async def test_a_burst_of_tool_calls_runs_at_most_the_slots_at_once(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    crowd = Crowd(core.search)
    monkeypatch.setattr(core, "search", crowd)
    results: list[Any] = []
    async with Client(build_server(core)) as client:

        async def one() -> None:
            results.append(await client.call_tool("search", {"query": "rollback load balancer"}))

        async with anyio.create_task_group() as tg:
            for _ in range(3 * SLOTS):
                tg.start_soon(one)
    assert len(results) == 3 * SLOTS and not any(r.is_error for r in results)
    assert crowd.most == SLOTS  # all slots were used, and never more


async def test_the_web_api_shares_the_same_slots(
    core: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    crowd = Crowd(core.search)
    monkeypatch.setattr(core, "search", crowd)
    transport = httpx2.ASGITransport(app=build_web_app(core))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        statuses: list[int] = []

        async def one() -> None:
            statuses.append((await http.get("/api/search", params={"q": "backups"})).status_code)

        async with anyio.create_task_group() as tg:
            for _ in range(3 * SLOTS):
                tg.start_soon(one)
    assert statuses == [200] * (3 * SLOTS)
    assert crowd.most == SLOTS
