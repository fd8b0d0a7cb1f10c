"""The web page in the browser's language, with relevance a person reads at a glance, a list that stops
where the ranking's confidence falls away, and folder counts that include subfolders as the filter does.

The API half runs over ASGI; the page half in headless Chromium with the browser's locale set to
English and to Japanese, each screenshot kept in ``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from kbseek import KnowledgeBase
from kbseek.server.web import build_web_app
from tests.conftest import make_core
from tests.wire.serving import chromium, get, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# A vague question over many look-alike notes, one of them the answer: the page used to list them all.
TAIL = {
    f"notes/weekly/{week:02d}.md": f"---\ndate: 2026-01-{week:02d}\n---\n# Week {week}\n\nThe team met and talked "
    f"about the release train, the backlog and lunch. Nothing about databases this week ({week}).\n"
    for week in range(1, 19)
}


async def api(core: KnowledgeBase, path: str) -> dict[str, Any]:
    transport = httpx2.ASGITransport(app=build_web_app(core))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.get(path)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_search_says_where_its_list_stops_and_grades_each_hit(kb_root: Path) -> None:
    for path, text in TAIL.items():
        (kb_root / path).parent.mkdir(parents=True, exist_ok=True)
        (kb_root / path).write_text(text, encoding="utf-8")
    core = make_core(kb_root)
    core.index()
    try:
        body = await api(core, "/api/search?q=nightly+database+snapshots+restore&limit=20")
        listing = await api(core, "/api/search?q=&sort=newest&limit=20")
        newest = await api(core, "/api/search?q=week&sort=newest&limit=20")
    finally:
        core.close()
    hits = body["hits"]
    assert hits[0]["path"] == "runbooks/database/backup.md" and len(hits) > 5
    assert 1 <= body["confident"] < len(hits)  # the weekly notes' tail is not listed first
    assert len(body["relevance"]) == len(hits) and body["relevance"][0] == "strong"
    assert set(body["relevance"]) <= {"strong", "fair", "weak"}
    assert all(grade == "weak" for grade in body["relevance"][body["confident"] :])
    assert (
        listing["confident"] == len(listing["hits"]) and listing["relevance"] == []
    )  # a listing is unranked
    assert newest["confident"] == len(newest["hits"])  # "what changed" is read in date order, whole


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def ui_port(kb_root: Path) -> Iterator[int]:
    for path, text in TAIL.items():
        (kb_root / path).parent.mkdir(parents=True, exist_ok=True)
        (kb_root / path).write_text(text, encoding="utf-8")
    with serving(kb_root, "--no-watch") as port:
        for _ in range(200):
            if get(f"http://127.0.0.1:{port}/api/status")[1].get("documents") == 4 + len(TAIL):
                break
        yield port


@pytest.mark.parametrize(
    ("locale", "said"),
    [
        ("en-US", {"button": "Search", "status": "documents", "count": "result", "relevance": "Strong match",
                   "weaker": "weaker result", "date": "Mar 1, 2026", "folder": "All folders"}),
        ("ja-JP", {"button": "検索", "status": "件の文書", "count": "件の結果", "relevance": "関連度：高",
                   "weaker": "関連の弱い結果をあと", "date": "2026/03/01", "folder": "すべてのフォルダ"}),
    ],
)  # fmt: skip
def test_in_chromium_the_page_speaks_the_browsers_language(
    browser: object, ui_port: int, locale: str, said: dict[str, str]
) -> None:
    page = browser.new_page(viewport={"width": 1100, "height": 900}, locale=locale)  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"http://127.0.0.1:{ui_port}/ui")
    page.wait_for_selector(f"#status:has-text('{said['status']}')")
    assert page.text_content("#search-form button[type=submit]") == said["button"]
    assert page.eval_on_selector("html", "e => e.lang") == locale.split("-")[0]
    # The folder menu counts what the filter reads: runbooks/ holds deploy.md and database/backup.md.
    options = page.eval_on_selector_all("#prefix option", "els => els.map(e => e.textContent.trim())")
    assert options[0] == said["folder"]
    assert "runbooks/ (2)" in options and "runbooks/database/ (1)" in options and "notes/ (20)" in options

    page.fill("#q", "deploy rollback load balancer")
    page.press("#q", "Enter")
    page.wait_for_selector(f"#message:has-text('{said['count']}')")
    first = page.query_selector(".hit")
    assert first is not None and said["relevance"] in (first.text_content() or "")
    assert said["date"] in (page.text_content(".hit .date") or "")
    assert "0." not in (page.text_content(".hit .relevance") or "")  # a word and bars, not a raw score

    page.fill("#q", "nightly database snapshots restore")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit h3:has-text('Database backups')")
    page.wait_for_selector("#weaker:not([hidden])")
    listed = page.eval_on_selector_all(".hit", "els => els.length")
    assert listed < 10 and said["weaker"] in (page.text_content("#weaker") or "")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ui-{locale.split('-')[0]}.png"), full_page=True)
    page.click("#weaker")
    page.wait_for_selector("#weaker[hidden]", state="attached")
    assert page.eval_on_selector_all(".hit", "els => els.length") > listed
    assert errors == []
    page.close()
