"""The search filters over HTTP and on the page: types, globs, dates, front-matter fields, sort=newest.

``/api/search`` takes the filters every surface has (``type``, ``glob``, ``tag_any``, ``after``,
``before``, ``where``, ``sort``); each is checked here against a small knowledge base whose documents
differ in one thing at a time, each refusal is a ``400`` whose message names the parameter, and
``sort=newest`` with no query lists the newest documents. The browser test opens the page from a
shared address and checks the controls are filled from it and kept in it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import write_notes
from tests.wire.serving import chromium, get, serving

TODAY = date.today().isoformat()


def note(title: str, front: str, body: str) -> str:
    return f"---\ntitle: {title}\n{front}---\n# {title}\n\n{body}\n"


NOTES = {
    "runbooks/deploy.md": note(
        "Deploy runbook",
        "date: 2026-03-01\nstatus: accepted\nowner: alice\ntags: [deploy, runbook]\n",
        "Switch the load balancer back to the previous image for a rollback.",
    ),
    "runbooks/legacy.md": note(
        "Legacy rollback",
        "date: 2019-05-10\nstatus: draft\nowner: bob\ntags: [deploy, legacy]\n",
        "The rollback used to be a manual copy of the old build.",
    ),
    "notes/review.md": note(  # dated by ``updated``: the first date field it has
        "Rollback plan review",
        "updated: 2025-11-20\nstatus: review\ntags: [planning]\n",
        "We review the rollback plan every quarter.",
    ),
    "notes/fresh.md": note(
        "This week's rollback drill",
        f"date: {TODAY}\nstatus: draft\nowner: alice\ntags: [planning, drill]\n",
        "The rollback drill ran this week without trouble.",
    ),
}
TEXT = "notes/incident.txt"  # no front matter: dated by its modification time
DATES = {
    "runbooks/deploy.md": "2026-03-01",
    "runbooks/legacy.md": "2019-05-10",
    "notes/review.md": "2025-11-20",
    "notes/fresh.md": TODAY,
    TEXT: "2024-02-02",
}
NEWEST_FIRST = ["notes/fresh.md", "runbooks/deploy.md", "notes/review.md", TEXT, "runbooks/legacy.md"]


def write_kb(root: Path) -> None:
    write_notes(root, NOTES)
    (root / TEXT).write_text(
        "Incident log\n\nThe rollback after the incident took an hour.\n", encoding="utf-8"
    )
    noon = datetime(2024, 2, 2, 12, 0).timestamp()  # local noon: the same local day in any zone
    os.utime(root / TEXT, (noon, noon))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module, over the knowledge base above, with no KBSEEK_* setting of the user's."""
    root = tmp_path_factory.mktemp("kb")
    write_kb(root)
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("KBSEEK_"):
                mp.delenv(key)
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        with serving(root, "--no-watch") as port:
            url = f"http://127.0.0.1:{port}"
            for _ in range(400):  # the catch-up pass runs in the background
                if get(f"{url}/api/status")[1].get("documents") == len(DATES):
                    break
                time.sleep(0.05)
            assert get(f"{url}/api/status")[1]["documents"] == len(DATES)
            yield url


def search(base: str, query: str) -> dict[str, Any]:
    status, body = get(f"{base}/api/search?{query}")
    assert status == 200, body
    return body


def paths(base: str, query: str) -> set[str]:
    return {h["path"] for h in search(base, query)["hits"]}


MD = set(NOTES)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", set(DATES)),
        ("type=txt", {TEXT}),
        ("type=md", MD),
        ("type=.MD", MD),  # a leading dot and capitals are read as the type's name
        ("type=md&type=txt", set(DATES)),
        ("glob=runbooks/**", {"runbooks/deploy.md", "runbooks/legacy.md"}),
        ("glob=*.txt", {TEXT}),
        ("glob=runbooks/deploy.md&glob=*.txt", {"runbooks/deploy.md", TEXT}),  # one of them
        ("after=2025-01-01", {"runbooks/deploy.md", "notes/review.md", "notes/fresh.md"}),
        ("before=2024-02-02", {"runbooks/legacy.md", TEXT}),  # the day itself is included
        ("after=2024-02-02&before=2025-11-20", {TEXT, "notes/review.md"}),  # both days included
        ("after=7d", {"notes/fresh.md"}),  # an age: days before today
        ("after=today", {"notes/fresh.md"}),
        ("tag_any=legacy&tag_any=drill", {"runbooks/legacy.md", "notes/fresh.md"}),
        ("tag=deploy&tag=runbook", {"runbooks/deploy.md"}),  # all of them
        ("where=status=draft", {"runbooks/legacy.md", "notes/fresh.md"}),
        ("where=status=accepted&where=status=review", {"runbooks/deploy.md", "notes/review.md"}),
        ("where=STATUS=Accepted", {"runbooks/deploy.md"}),  # names and values compare folded
        ("where=owner", {"runbooks/deploy.md", "runbooks/legacy.md", "notes/fresh.md"}),
        ("where=!owner", {"notes/review.md", TEXT}),
        ("where=owner=alice&where=status=draft", {"notes/fresh.md"}),  # each field must hold
        ("type=md&after=2025-01-01&where=owner=alice", {"runbooks/deploy.md", "notes/fresh.md"}),
        ("path_prefix=notes/&type=md&before=2025-12-31", {"notes/review.md"}),
    ],
)
def test_each_filter_narrows_the_search(base: str, query: str, expected: set[str]) -> None:
    assert paths(base, f"q=rollback&limit=20&{query}") == expected


def test_each_hit_carries_its_documents_date(base: str) -> None:
    """From front matter ``date``, else ``updated``, else the file's modification time."""
    hits = search(base, "q=rollback&limit=20")["hits"]
    assert {h["path"]: h["date"] for h in hits} == DATES


def test_newest_with_no_query_lists_the_newest_documents_first(base: str) -> None:
    body = search(base, "sort=newest&limit=20")
    assert [h["path"] for h in body["hits"]] == NEWEST_FIRST
    assert [h["date"] for h in body["hits"]] == [DATES[p] for p in NEWEST_FIRST]
    assert body["query"] == "" and body["legs"]["lexical"] == "none" and body["truncated"] is False
    assert all(h["snippet"] for h in body["hits"])  # each document shown by its first passage

    assert [h["path"] for h in search(base, "q=&sort=newest&limit=20")["hits"]] == NEWEST_FIRST
    body = search(base, "sort=newest&limit=2")
    assert [h["path"] for h in body["hits"]] == NEWEST_FIRST[:2]
    assert body["truncated"] is True and "more_hits" in body["note_codes"]
    # the filters narrow the listing as they narrow a search: what changed among the drafts
    body = search(base, "sort=newest&type=md&where=status=draft")
    assert [h["path"] for h in body["hits"]] == ["notes/fresh.md", "runbooks/legacy.md"]
    body = search(base, "sort=newest&after=2024-01-01&before=2025-12-31")
    assert [h["path"] for h in body["hits"]] == ["notes/review.md", TEXT]


def test_newest_with_a_query_orders_the_matches_by_date(base: str) -> None:
    body = search(base, "q=rollback&sort=newest&limit=20")
    assert [h["path"] for h in body["hits"]] == NEWEST_FIRST
    assert body["legs"]["lexical"] == "ok"
    assert search(base, "q=rollback&sort=relevance&limit=20")["legs"]["lexical"] == "ok"


def test_a_listing_the_filters_empty_says_so(base: str) -> None:
    body = search(base, "sort=newest&type=pdf")
    assert body["hits"] == [] and body["note_codes"] == ["empty"]
    assert "pdf" in body["notes"][0]


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("q=rollback&after=yesterdayish", ["after=", "YYYY-MM-DD", "7d"]),
        ("q=rollback&after=2026-02-30", ["after=", "YYYY-MM-DD"]),  # no such day
        ("q=rollback&before=2026-03-01+junk", ["before=", "YYYY-MM-DD"]),
        ("q=rollback&after=2026-01-01&before=2025-01-01", ["after=2026-01-01", "before=2025-01-01"]),
        ("q=rollback&type=exe", ["'exe'", "md", "pdf", "ipynb"]),
        ("q=rollback&sort=oldest", ["sort=", "relevance", "newest"]),
        ("q=rollback&where=colour=red", ["'colour'", "status", "owner"]),  # the fields there are
        ("q=", ["q is empty", "sort=newest"]),
        ("q=&sort=relevance", ["q is empty", "sort=newest"]),
    ],
)
def test_a_bad_filter_is_a_400_that_says_what_is_accepted(base: str, query: str, named: list[str]) -> None:
    status, body = get(f"{base}/api/search?{query}")
    assert status == 400, body
    for words in named:
        assert words in body["error"], (words, body["error"])


# -- the page ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as browser:
        yield browser


def _shown(page: object) -> list[tuple[str, str]]:
    """Each result's path and date, as the page shows them."""
    shown = page.eval_on_selector_all(  # type: ignore[attr-defined]
        ".hit > .where",
        "els => els.map(e => [e.firstChild.textContent, e.querySelector('time.date').getAttribute('datetime')])",
    )
    return [(path, day) for path, day in shown]


def _wait_for_address(page: object, test: str) -> None:
    page.wait_for_function(f"() => {{ const a = new URLSearchParams(location.search); return {test}; }}")  # type: ignore[attr-defined]


def test_in_chromium_a_shared_address_fills_the_filters_and_the_page_keeps_them(
    browser: object, base: str
) -> None:
    page = browser.new_page(viewport={"width": 1100, "height": 760})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))

    page.goto(f"{base}/ui?q=rollback&after=2020-01-01&type=md&sort=newest")
    page.wait_for_selector(".hit")
    assert page.input_value("#q") == "rollback"
    assert page.input_value("#after") == "2020-01-01" and page.input_value("#before") == ""
    checked = page.eval_on_selector_all("#type-boxes input:checked", "els => els.map(e => e.value)")
    assert checked == ["md"]
    assert page.is_checked("#sort input[value=newest]")
    assert page.text_content("#types-summary") == "File types: md"
    # only Markdown from 2020 on, newest first, each with its date
    assert _shown(page) == [
        (p, DATES[p]) for p in ["notes/fresh.md", "runbooks/deploy.md", "notes/review.md"]
    ]
    assert "newest first" in page.text_content("#message")

    page.click("#types summary")
    page.check("#type-boxes input[value=txt]")
    _wait_for_address(page, "a.getAll('type').join() === 'md,txt'")
    page.wait_for_selector(f".hit > .where:has-text('{TEXT}')")
    assert [p for p, _ in _shown(page)] == ["notes/fresh.md", "runbooks/deploy.md", "notes/review.md", TEXT]
    page.uncheck("#type-boxes input[value=md]")
    _wait_for_address(page, "a.getAll('type').join() === 'txt' && a.get('after') === '2020-01-01'")
    page.wait_for_function("() => document.querySelectorAll('.hit').length === 1")
    assert _shown(page) == [(TEXT, DATES[TEXT])]
    assert page.text_content("#types-summary") == "File types: txt"
    page.uncheck("#type-boxes input[value=txt]")
    _wait_for_address(page, "!a.has('type')")
    page.click("#status")  # a click outside closes the type picker
    assert not page.is_visible("#type-boxes")

    page.fill("#before", "2025-12-31")
    _wait_for_address(page, "a.get('before') === '2025-12-31'")
    page.wait_for_function("() => document.querySelectorAll('.hit').length === 2")
    assert [p for p, _ in _shown(page)] == ["notes/review.md", TEXT]

    # "what changed": no words, newest first, is the newest documents, unranked (no score)
    page.goto(f"{base}/ui?sort=newest")
    page.wait_for_selector(".hit")
    assert page.input_value("#q") == ""
    assert _shown(page) == [(p, DATES[p]) for p in NEWEST_FIRST]
    assert page.query_selector(".hit .score") is None
    assert page.text_content("#message").startswith("5 documents, newest first")
    page.check("#sort input[value=relevance]")
    _wait_for_address(page, "!a.has('sort')")
    page.wait_for_selector("#message:has-text('Ask a question')")
    assert page.query_selector(".hit") is None
    page.check("#sort input[value=newest]")  # one click back to what changed
    _wait_for_address(page, "a.get('sort') === 'newest'")
    page.wait_for_function("() => document.querySelectorAll('.hit').length === 5")

    # a filter the page has no control for, or an age, stays in the address as a chip that removes it
    page.goto(f"{base}/ui?q=rollback&after=7d&where={quote('status=draft')}")
    page.wait_for_selector(".hit")
    assert page.input_value("#after") == ""
    chips = page.eval_on_selector_all(".chip", "els => els.map(e => e.firstChild.textContent)")
    assert chips == ["from: 7d", "field: status=draft"]
    assert _shown(page) == [("notes/fresh.md", TODAY)]
    page.click(".chip:has-text('from: 7d') button")
    _wait_for_address(page, "!a.has('after') && a.get('where') === 'status=draft'")
    page.wait_for_function("() => document.querySelectorAll('.hit').length === 2")
    assert {p for p, _ in _shown(page)} == {"notes/fresh.md", "runbooks/legacy.md"}

    # a filter the server refuses is said, naming it
    page.goto(f"{base}/ui?q=rollback&before=2026-02-30")
    page.wait_for_selector("#message.bad")
    assert "before='2026-02-30' is not a date" in page.text_content("#message")
    assert page.query_selector(".hit") is None
    assert errors == []
    page.close()
