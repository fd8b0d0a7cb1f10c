"""The web page's API over several collections: which ones exist, a search over the chosen ones
merged as the MCP tool merges it, each hit naming its collection, and documents read from the
collection they are in. One knowledge base answers as it always did."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from kbseek.facade.page import for_the_page
from kbseek.library import Library
from kbseek.server.web import build_web_app
from tests.conftest import indexed_kb, write_notes
from tests.wire.serving import get, serving

NOTES = {
    "ops/deploy.md": "# Deploy runbook\n\nbuild the container image and push it to the registry\n",
    "ops/rollback.md": "# Rollback\n\nrevert the release tag and redeploy the previous image\n",
    "shared.md": "# Shared\n\nthe notes copy of the shared page\n",
}
DOCS = {
    "api/keys.md": "# Signing keys\n\nrotate the signing key every ninety days with keyctl\n",
    "api/limits.md": "# Rate limits\n\nthe gateway allows one hundred requests per minute\n",
    "shared.md": "# Shared\n\nthe docs copy of the shared page\n",
}
QUERY = "rotate signing key registry image"


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = Library(
        {"notes": indexed_kb(tmp_path / "notes", NOTES), "docs": indexed_kb(tmp_path / "docs", DOCS)}
    )
    yield lib
    lib.close()


@pytest.fixture
def client(library: Library) -> Iterator[TestClient]:
    with TestClient(build_web_app(library[library.default], library)) as c:
        yield c


def test_collections_are_listed_with_the_default_and_their_counts(client: TestClient) -> None:
    r = client.get("/api/collections")
    assert r.status_code == 200
    assert r.json() == {
        "default": "notes",
        "collections": [
            {"name": "notes", "root": "notes", "documents": 3},
            {"name": "docs", "root": "docs", "documents": 3},
        ],
    }


def test_a_search_over_both_is_the_librarys_merge_with_each_hits_collection(
    client: TestClient, library: Library
) -> None:
    both = client.get("/api/search", params={"q": QUERY, "limit": 10})
    assert both.status_code == 200
    assert both.json() == for_the_page(library.search(QUERY, limit=10), ranked=True).model_dump(mode="json")
    assert {h["kb"] for h in both.json()["hits"]} == {"notes", "docs"}
    assert both.json()["index"]["documents"] == 6


def test_kb_narrows_the_search_to_the_chosen_collections(client: TestClient) -> None:
    one = client.get("/api/search", params={"q": QUERY, "kb": "docs"})
    listed = client.get("/api/search", params=[("q", QUERY), ("kb", "docs"), ("kb", "notes")])
    assert one.status_code == 200 and one.json()["hits"]
    assert {h["kb"] for h in one.json()["hits"]} == {"docs"}
    assert {h["kb"] for h in listed.json()["hits"]} == {"notes", "docs"}


def test_documents_and_related_are_read_from_the_named_collection(client: TestClient) -> None:
    default = client.get("/api/document", params={"path": "shared.md"})
    docs = client.get("/api/document", params={"path": "shared.md", "kb": "docs"})
    keys = client.get("/api/document", params={"path": "api/keys.md", "kb": "docs"})
    not_in_default = client.get("/api/document", params={"path": "api/keys.md"})
    related = client.get("/api/related", params={"path": "api/keys.md", "kb": "docs"})
    topics = client.get("/api/topics", params={"kb": "docs"})
    status = client.get("/api/status", params={"kb": "docs"})
    assert "notes copy" in default.json()["text"] and "docs copy" in docs.json()["text"]
    assert keys.status_code == 200 and "keyctl" in keys.json()["text"]
    assert not_in_default.status_code == 404  # the default collection has no such document
    assert related.status_code == 200 and related.json()["path"] == "api/keys.md"
    assert {t["prefix"] for t in topics.json()["topics"]} >= {"api/"}
    assert status.json()["documents"] == 3


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/search", {"q": QUERY, "kb": "nope"}),
        ("/api/document", {"path": "shared.md", "kb": "nope"}),
        ("/api/related", {"path": "shared.md", "kb": "nope"}),
        ("/api/topics", {"kb": "nope"}),
        ("/api/status", {"kb": "nope"}),
    ],
)
def test_an_unknown_collection_is_400_naming_the_known_ones(
    client: TestClient, path: str, params: dict[str, str]
) -> None:
    r = client.get(path, params=params)
    assert r.status_code == 400
    assert "'nope'" in r.json()["error"] and "notes, docs" in r.json()["error"]


def test_one_knowledge_base_answers_as_before(tmp_path: Path) -> None:
    kb = indexed_kb(tmp_path / "notes", NOTES)
    try:
        with (
            TestClient(build_web_app(kb)) as plain,
            TestClient(build_web_app(kb, Library({"notes": kb}))) as one,
        ):
            for c in (plain, one):
                search = c.get("/api/search", params={"q": QUERY, "limit": 10})
                assert search.json() == for_the_page(kb.search(QUERY, limit=10), ranked=True).model_dump(
                    mode="json"
                )
                assert all(h["kb"] is None for h in search.json()["hits"])
                doc = c.get("/api/document", params={"path": "shared.md"})
                assert doc.json() == kb.read_document("shared.md").model_dump(mode="json")
                listed = c.get("/api/collections").json()
                assert listed["default"] == "notes" and len(listed["collections"]) == 1
            assert one.get("/api/search", params={"q": QUERY, "kb": "nope"}).status_code == 400
    finally:
        kb.close()


def test_serve_with_two_kb_flags_gives_the_page_both(tmp_path: Path) -> None:
    notes, docs = tmp_path / "notes", tmp_path / "docs"
    for root, files in ((notes, NOTES), (docs, DOCS)):
        root.mkdir()
        write_notes(root, files)
    with serving(notes, "--kb", f"docs={docs}", "--no-watch") as port:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):  # the catch-up passes run in the background
            listed = get(f"{base}/api/collections")[1]
            if [c["documents"] for c in listed["collections"]] == [3, 3]:
                break
        status, body = get(f"{base}/api/search?q=signing+key+keyctl&kb=docs")
    assert [c["name"] for c in listed["collections"]] == ["notes", "docs"]
    assert status == 200 and body["hits"] and {h["kb"] for h in body["hits"]} == {"docs"}


def test_in_chromium_the_page_picks_collections_and_opens_a_hit_in_its_own(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed: `apt-get install chromium` to run the browser test")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make test`")
    notes, docs = tmp_path / "notes", tmp_path / "docs"
    for root, files in ((notes, NOTES), (docs, DOCS)):
        root.mkdir()
        write_notes(root, files)
    with serving(notes, "--kb", f"docs={docs}", "--no-watch") as port, sync_api.sync_playwright() as p:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            if [c["documents"] for c in get(f"{base}/api/collections")[1]["collections"]] == [3, 3]:
                break
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(f"{base}/ui")
            page.wait_for_selector("#collections input")
            assert page.eval_on_selector_all("#collections input:checked", "bs => bs.map(b => b.value)") == [
                "notes",
                "docs",
            ]
            page.fill("#q", "shared page")
            page.press("#q", "Enter")
            page.wait_for_selector(".hit .collection")
            assert set(page.eval_on_selector_all(".hit .collection", "s => s.map(e => e.textContent)")) == {
                "notes",
                "docs",
            }
            page.uncheck("#collections input[value=notes]")
            # A locator waits without evaluating a string, which the page's CSP (script-src 'self')
            # refuses whenever the first check does not already hold.
            sync_api.expect(page.locator(".hit .collection")).to_have_count(1)
            assert "kb=docs" in page.url
            page.click(".hit h3 a")
            page.wait_for_selector("#document:not([hidden])")
            assert page.text_content("#document-path") == "docs: shared.md"
            assert "docs copy" in (page.text_content("#document-text") or "")
        finally:
            browser.close()
