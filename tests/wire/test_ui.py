"""The /ui web page: its API and guard over HTTP, and the page itself in headless Chromium.

The browser test drives Debian's Chromium through Playwright (its bundled
browser download is not used), searches in English and Japanese, opens a
document, and proves a note holding markup is shown as text, never run. Its
screenshot is kept in ``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from kbseek.server.http import HttpPolicy, build_http_app
from kbseek.server.mcp import build_server
from kbseek.server.web import build_web_app
from tests.conftest import make_core
from tests.wire.serving import chromium, get, request, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
HOSTILE = """---
title: Markup in a note
tags: [security]
---
# Markup in a note

The quarterly xylophone review says <script>window.__pwned = 1</script> and
<img src="x" onerror="window.__pwned = 2"> must appear as text.
Quoted as code, `<script>window.__pwned = 3</script>` stays in the snippet.
"""


@pytest.fixture
def ui_kb(kb_root: Path) -> Path:
    (kb_root / "notes" / "markup.md").write_text(HOSTILE, encoding="utf-8")
    return kb_root


@pytest.fixture
def ui_port(ui_kb: Path) -> Iterator[int]:
    with serving(ui_kb, "--no-watch") as port:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):  # the catch-up pass runs in the background
            if get(f"{base}/api/status")[1].get("documents") == 5:
                break
        yield port


def test_the_page_and_its_assets_are_served_with_a_self_only_content_policy(ui_port: int) -> None:
    base = f"http://127.0.0.1:{ui_port}"
    for path, kind in (("/ui", "text/html"), ("/ui/app.js", "text/javascript"), ("/ui/app.css", "text/css")):
        status, headers, body = request(base + path)
        headers = {k.lower(): v for k, v in headers.items()}
        assert status == 200 and headers["content-type"].startswith(kind)
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "http://" not in body["text"] and "https://" not in body["text"]  # no external asset


def test_the_api_answers_from_the_same_search_as_the_tools(ui_port: int) -> None:
    base = f"http://127.0.0.1:{ui_port}"
    status, body = get(f"{base}/api/search?q=load+balancer&path_prefix=runbooks/")
    assert status == 200 and body["hits"][0]["path"] == "runbooks/deploy.md"
    a, b = body["hits"][0]["highlights"][0]
    assert body["hits"][0]["snippet"][a:b].lower() in ("load", "balancer")
    assert get(f"{base}/api/search?q=load+balancer&tag=nosuchtag")[1]["hits"] == []
    assert get(f"{base}/api/search?q=")[0] == 400
    status, body = get(f"{base}/api/search?q=x&limit=lots")
    assert status == 400 and "limit must be a whole number" in body["error"]
    status, body = get(f"{base}/api/document?path=../outside.md")
    assert status == 400 and ".." in body["error"]
    status, body = get(f"{base}/api/document?path=notes/nothing-here.md")
    assert status == 404 and "nothing-here.md" in body["error"]
    assert get(f"{base}/api/status")[1]["documents"] == 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_other_machines_are_refused_the_page_unless_allowed(kb_root: Path) -> None:
    """Through the real app over ASGI, so the client address can be another machine's."""
    core = make_core(kb_root)
    core.index()
    try:
        for allowed, expected in ((False, 403), (True, 200)):
            app = build_http_app(
                build_server(core), HttpPolicy(port=80, ui_remote=allowed), build_web_app(core)
            )
            transport = httpx2.ASGITransport(app=app, client=("192.0.2.7", 50000))
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:80") as http:
                for path in ("/ui", "/api/search?q=rollback"):
                    response = await http.get(path, headers={"Host": "127.0.0.1:80"})
                    assert response.status_code == expected, path
                    if expected == 403:
                        assert "--ui-allow-remote" in response.json()["error"]
    finally:
        core.close()


@pytest.mark.anyio
async def test_the_bare_address_redirects_to_the_page_under_the_same_policy(kb_root: Path) -> None:
    """``GET /`` was a bare 404, which reads as a broken server to whoever typed the address."""
    core = make_core(kb_root)
    try:
        for client, allowed, expected in (
            ("127.0.0.1", False, 307), ("192.0.2.7", False, 403), ("192.0.2.7", True, 307),
        ):  # fmt: skip
            app = build_http_app(
                build_server(core), HttpPolicy(port=80, ui_remote=allowed), build_web_app(core)
            )
            transport = httpx2.ASGITransport(app=app, client=(client, 50000))
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:80") as http:
                for method in ("GET", "HEAD"):
                    response = await http.request(method, "/", headers={"Host": "127.0.0.1:80"})
                    assert response.status_code == expected, (client, allowed, method)
                    if expected == 307:
                        assert response.headers["location"] == "/ui"
                response = await http.get("/", headers={"Host": "evil.example"})
                assert response.status_code == 403  # the Host check still comes first
    finally:
        core.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as browser:
        yield browser


def test_in_chromium_search_in_english_and_japanese_open_a_document_and_markup_stays_text(
    browser: object, ui_port: int
) -> None:
    page = browser.new_page(viewport={"width": 1100, "height": 760})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    base = f"http://127.0.0.1:{ui_port}"
    page.goto(f"{base}/ui")
    page.wait_for_selector("#status:has-text('documents')")
    assert "5 documents" in page.text_content("#status")
    hover = page.get_attribute("#status span[title]", "title") or ""
    assert hover.startswith("edits reach the index by: ")  # the freshness mode, for a person
    assert not page.is_visible("#token-form")  # no token configured: nothing to ask for

    page.fill("#q", "load balancer rollback")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit")
    assert page.text_content(".hit h3") == "Deploy runbook"
    marks = page.eval_on_selector_all(".hit mark", "els => els.map(e => e.textContent.toLowerCase())")
    assert {"load", "balancer"} & set(marks)

    page.fill("#q", "障害の初動")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit h3:has-text('障害対応の手順')")
    marks = page.eval_on_selector_all(".hit mark", "els => els.map(e => e.textContent)")
    assert any("障害" in m for m in marks) and any("初動" in m for m in marks)
    assert "q=%E9%9A%9C" in page.url  # the search is in the address, so it can be shared

    page.select_option("#prefix", "runbooks/")
    page.fill("#q", "backups")
    page.press("#q", "Enter")
    # ".hit" alone would match the previous search's hits still on the page; the new list replaces
    # them at once, so one hit under runbooks/ means the new list is there
    page.wait_for_selector(".hit > .where:has-text('runbooks/')")
    # a result is a document, its path right under the title; its sections list their lines below
    paths = page.eval_on_selector_all(".hit > .where", "els => els.map(e => e.textContent)")
    assert paths and all(p.startswith("runbooks/") for p in paths)
    page.select_option("#prefix", "")

    page.fill("#tag", "oncall")
    page.fill("#q", "障害")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit .tags:has-text('oncall')")
    tags = page.eval_on_selector_all(".hit .tags", "els => els.map(e => e.textContent)")
    assert tags and all("oncall" in t for t in tags)
    assert len(tags) == page.eval_on_selector_all(".hit", "els => els.length")
    page.fill("#tag", "")

    page.fill("#q", "xylophone review")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit h3:has-text('Markup in a note')")
    # Raw HTML is markup, left out of snippets; quoted as code it is shown, and must stay text.
    assert "<script>window.__pwned = 3</script>" in page.text_content(".hit .snippet")
    page.click(".hit h3 a")
    page.wait_for_selector("#document:not([hidden])")
    assert page.text_content("#document-path") == "notes/markup.md"
    text = page.text_content("#document-text")
    assert "<script>window.__pwned = 1</script>" in text and 'onerror="window.__pwned = 2"' in text
    assert page.evaluate("window.__pwned") is None
    assert page.query_selector("#document-text script, #document-text img, .hit script, .hit img") is None

    page.go_back()
    page.wait_for_selector("#results:not([hidden]) .hit")
    page.click(".hit h3 a")
    page.wait_for_selector("#document:not([hidden])")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "ui-search.png"
    page.go_back()
    page.fill("#q", "rollback 障害")
    page.press("#q", "Enter")
    page.wait_for_selector(".hit")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert errors == []
    page.close()


def _fits(page: object, selector: str) -> dict[str, float]:
    """How wide an element's text is against the room it has: clipped text is wider than its box."""
    return page.eval_on_selector(  # type: ignore[attr-defined]
        selector,
        """el => {
            const cs = getComputedStyle(el);
            const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
            const ctx = document.createElement("canvas").getContext("2d");
            ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
            const box = el.getBoundingClientRect();
            return {placeholder: el.placeholder ? ctx.measureText(el.placeholder).width : 0, room,
                    scroll: el.scrollWidth, client: el.clientWidth, right: box.right, bottom: box.bottom,
                    viewport: window.innerWidth};
        }""",
    )


def _every_result(page: object) -> None:
    """Once a search is listed, the weaker results too: the page holds them behind a button and says
    "more results exist" only once every hit it has is shown (how many are held back depends on the
    scores, which differ with the index's statistics)."""
    page.wait_for_selector("#message:has-text('result')")  # type: ignore[attr-defined]
    if page.is_visible("#weaker"):  # type: ignore[attr-defined]
        page.click("#weaker")  # type: ignore[attr-defined]
        page.wait_for_selector("#message:has-text('More results')")  # type: ignore[attr-defined]


def test_in_chromium_the_empty_state_is_fully_visible_and_notes_read_for_people(
    browser: object, ui_kb: Path, tmp_path: Path
) -> None:
    config = tmp_path / "kbseek.toml"
    # A cap below the page's limit of 20: more hits exist than are shown, and the request is clamped.
    config.write_text("[limits]\ndefault_limit = 2\nmax_limit = 2\n", encoding="utf-8")
    with serving(ui_kb, "--no-watch", "--config", str(config)) as port:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            if get(f"{base}/api/status")[1].get("documents") == 5:
                break
        for width in (1100, 360):
            page = browser.new_page(viewport={"width": width, "height": 640})  # type: ignore[attr-defined]
            page.goto(f"{base}/ui")
            page.wait_for_selector("#message:has-text('Ask a question')")
            box = _fits(page, "#q")
            assert box["placeholder"] <= box["room"], f"the search box's placeholder is clipped at {width}px"
            message = _fits(page, "#message")
            assert message["scroll"] <= message["client"] and message["right"] <= message["viewport"]
            assert page.is_visible("#message")
            assert "English or 日本語" in page.text_content("#message")
            if width == 360:
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "ui-empty-narrow.png"), full_page=True)
            page.close()

        page = browser.new_page(viewport={"width": 1100, "height": 760})  # type: ignore[attr-defined]
        page.goto(f"{base}/ui?q=the")
        page.wait_for_selector(".hit")
        _every_result(page)
        said = page.text_content("#message")
        assert (
            "More results exist than are shown: add words, or pick a folder, a tag, a file type or dates"
            in said
        )
        for agent_words in ("raise limit", "path_prefix", "limit=", "clamped"):
            assert agent_words not in said
        # What was picked is not offered again: the line tells the truth about what is left.
        page.click("#types summary")
        page.check("#type-boxes input[value='md']")
        _every_result(page)
        page.wait_for_selector("#message:has-text('pick a folder, a tag or dates')")
        said = page.text_content("#message")
        assert "file type" not in said  # every note is Markdown: more results still exist
        if not page.is_visible("#type-boxes"):  # a click elsewhere (the weaker results) closed the menu
            page.click("#types summary")
        page.uncheck("#type-boxes input[value='md']")

        page.fill("#q", "roll back the load balancer with Terraform")
        page.press("#q", "Enter")
        page.wait_for_selector("#message:has-text('No note mentions')")
        said = page.text_content("#message")
        assert "No note mentions Terraform, so these results may not answer the question." in said
        assert "knowledge base may not cover" not in said  # the note says why they are weak: said once

        page.fill("#q", "zzqx qqzv")
        page.press("#q", "Enter")
        page.wait_for_selector("#message:has-text('Nothing matched')")
        said = page.text_content("#message")
        assert "Nothing matched among 5 notes" in said and "Try other words" in said
        for agent_words in ("index_status", "chunk", "path_prefix", "drop filters"):
            assert agent_words not in said
        page.close()
