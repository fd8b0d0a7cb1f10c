"""The documentation site builds strictly in both languages, and what it says is the code's.

The site is built here, into a folder of this test's own (not ``build/docs``, which ``make docs``
owns), with every Sphinx warning an error: a link to a missing page or anchor, a page outside every
table of contents, a docstring Sphinx cannot read. The built pages are then read back: each page
has its twin in the other language and links to it, every link between pages lands on a page and an
anchor that exist, every page names the kbseek it describes, links its source and has the site's
icon, the command-line page carries each command's own ``--help`` and the configuration page every
key of the settings table, the Japanese search index holds Japanese words, and the search lists the
pages for users before the records for developers.
"""

from __future__ import annotations

import functools
import html
import http.server
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit
from xml.etree import ElementTree

import click
import pytest
from click.testing import CliRunner

import kbseek
from kbseek.cli import cli
from kbseek.config import KEYS, SECTIONS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ENGLISH_ONLY = {"architecture", "contracts"}
"""Pages for people working on kbseek, written in English only (so are the decision records)."""
USER_PAGES = {
    "index", "get-started", "concepts", "tools", "cli", "configuration", "http-api", "team", "models",
    "library", "formats", "security", "several-kbs", "writing",
}  # fmt: skip
"""The pages for people who use kbseek, which the site's search lists first."""
RECORD_PAGES = {"architecture", "contracts", "development", "performance", "quality", "changelog"}
"""The pages for people who work on kbseek, which the search lists after the user pages, with the
decision records (``decisions/``)."""
SCORER = DOCS / "_ext" / "search-scorer.js"

sys.path.insert(0, str(DOCS / "_ext"))
import kbseek_site  # noqa: E402


def build(source: Path, out: Path, doctrees: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sphinx", "-q", "-W", "--keep-going", "-b", "html", "-d", str(doctrees)]
    return subprocess.run(
        [*command, str(source), str(out)], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sphinx", reason="the docs extra (`pip install -e '.[docs]'`) builds the site")
    base = tmp_path_factory.mktemp("site")
    out = base / "html"
    env = {**os.environ, "KBSEEK_DOCS_BUILD": str(out)}
    for source, target, name in ((DOCS, out, "en"), (DOCS / "ja", out / "ja", "ja")):
        done = build(source, target, base / "doctrees" / name, env)
        assert done.returncode == 0, f"the {name} build failed:\n{done.stderr}"
        assert done.stderr.strip() == "", f"the {name} build warned:\n{done.stderr}"
    return out


def task_pages(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.md")}


def test_every_page_is_written_in_both_languages() -> None:
    english, japanese = task_pages(DOCS) - ENGLISH_ONLY, task_pages(DOCS / "ja")
    assert english == japanese, {"only English": english - japanese, "only Japanese": japanese - english}


class _Links(HTMLParser):
    """The hrefs and srcs of a page, and the ids it defines (the anchors a link may point at)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.language_link: str | None = None
        self._in_language = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "div" and values.get("class") == "kbseek-language":
            self._in_language = True
        for name in ("href", "src"):
            if values.get(name):
                self.links.append(str(values[name]))
                if self._in_language and tag == "a" and name == "href":
                    self.language_link = str(values[name])
                    self._in_language = False


def parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def pages(site: Path) -> Iterator[Path]:
    for page in sorted(site.rglob("*.html")):
        if "_static" not in page.parts and "_sources" not in page.parts:
            yield page


def test_every_link_between_pages_lands_on_a_page_and_an_anchor_that_exist(site: Path) -> None:
    broken: list[str] = []
    cache: dict[Path, _Links] = {}
    for page in pages(site):
        for link in parsed(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists() or (site.resolve() not in target.parents and target != site.resolve()):
                broken.append(f"{page.relative_to(site)} → {link} (no such file)")
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in cache:  # setdefault would parse the target again for every link
                    cache[target] = parsed(target)
                anchors = cache[target]
                if unquote(parts.fragment) not in anchors.ids:
                    broken.append(f"{page.relative_to(site)} → {link} (no such anchor)")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("language", ["en", "ja"])
def test_each_page_links_its_twin_in_the_other_language(site: Path, language: str) -> None:
    folder = site if language == "en" else site / "ja"
    twin_root = site / "ja" if language == "en" else site
    for name in sorted(task_pages(DOCS / "ja")):
        page = folder / f"{name}.html"
        link = parsed(page).language_link
        assert link is not None, f"{page} has no language link"
        assert (page.parent / link).resolve() == (twin_root / f"{name}.html").resolve(), (page, link)


class _Masthead(HTMLParser):
    """What a page says about the site as a whole: the version in its sidebar, where its source
    link points, and the icon it asks the browser to show."""

    def __init__(self) -> None:
        super().__init__()
        self.version = ""
        self.source: str | None = None
        self.icon: str | None = None
        self._in_version = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = str(values.get("class") or "").split()
        if tag == "span" and "kbseek-version" in classes:
            self._in_version = True
        if tag == "a" and "kbseek-source" in classes:
            self.source = values.get("href")
        if tag == "link" and "icon" in str(values.get("rel") or "").split():
            self.icon = values.get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._in_version = False

    def handle_data(self, data: str) -> None:
        if self._in_version:
            self.version += data


def masthead(page: Path) -> _Masthead:
    parser = _Masthead()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def language_of(site: Path, page: Path) -> str:
    return "ja" if page.relative_to(site).parts[0] == "ja" else "en"


def test_every_page_shows_the_version_of_the_kbseek_it_describes(site: Path) -> None:
    """The version is the installed package's, read at build time, so the site cannot name another."""
    installed = importlib.metadata.version("kbseek")
    assert kbseek.__version__ == installed, "the package and its metadata disagree on the version"
    for page in pages(site):
        shown = " ".join(masthead(page).version.split())
        label = kbseek_site.SITE_WORDS[language_of(site, page)]["version"]
        assert shown == f"{label} {installed}", f"{page.relative_to(site)} shows {shown!r}"


def test_every_page_links_the_source_the_project_names(site: Path) -> None:
    """The repository's address where the package's metadata names one; until then the development
    page's section on where the code lives, in the page's own language."""
    named = kbseek_site.source_url()
    for page in pages(site):
        link = masthead(page).source
        assert link, f"{page.relative_to(site)} has no source link"
        if named is not None:
            assert link == named, (page, link)
            continue
        language = language_of(site, page)
        parts = urlsplit(link)
        home = site / "ja" if language == "ja" else site
        target = page.parent / parts.path if parts.path else page  # the development page links itself
        assert target.resolve() == (home / "development.html").resolve(), (page, link)
        assert unquote(parts.fragment) == kbseek_site.SITE_WORDS[language]["code_map"], (page, link)


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["Source, https://code.example/kbseek"], "https://code.example/kbseek"),
        (
            ["Homepage, https://example.org", "Source Code, https://code.example/kb"],
            "https://code.example/kb",
        ),
        (["Homepage, https://example.org", "Documentation, https://docs.example"], None),
        ([], None),
    ],
)
def test_the_source_link_is_a_repository_address_the_package_names(
    monkeypatch: pytest.MonkeyPatch, entries: list[str], expected: str | None
) -> None:
    """A ``[project.urls]`` entry labelled as the source becomes the link; a homepage or nothing
    leaves the link on the development page rather than on an address guessed here."""

    class Metadata:
        def get_all(self, name: str) -> list[str] | None:
            assert name == "Project-URL"
            return entries or None

    monkeypatch.setattr(kbseek_site, "metadata", lambda _: Metadata())
    assert kbseek_site.source_url() == expected


def test_every_page_has_the_sites_icon(site: Path) -> None:
    """Both languages show the same small SVG icon in the browser's tab."""
    drawn = (DOCS / "_static" / "favicon.svg").read_bytes()
    svg = ElementTree.fromstring(drawn)
    assert svg.tag == "{http://www.w3.org/2000/svg}svg" and svg.get("viewBox"), (
        "favicon.svg is not an SVG image"
    )
    for page in pages(site):
        icon = masthead(page).icon
        assert icon, f"{page.relative_to(site)} has no icon"
        target = page.parent / urlsplit(icon).path
        assert target.is_file() and target.read_bytes() == drawn, (page, icon)


def scorer_list(name: str) -> list[str]:
    """A list of page names as the scorer writes it (``const NAME = ["…", …];``)."""
    found = re.search(rf"const {name} = (\[[^\]]*\]);", SCORER.read_text(encoding="utf-8"))
    assert found, f"the scorer has no list {name}"
    return [str(item) for item in json.loads(found.group(1))]


def test_each_page_is_for_users_or_a_record_so_the_search_knows_where_to_list_it() -> None:
    """A page added to the site is named here as one or the other; a record is also named in the
    scorer's RECORDS, which the search lists after the user pages."""
    pages_written = task_pages(DOCS)
    unplaced = pages_written - USER_PAGES - RECORD_PAGES
    assert not unplaced, f"add {sorted(unplaced)} to USER_PAGES or RECORD_PAGES (and the scorer's RECORDS)"
    assert not USER_PAGES - task_pages(DOCS / "ja"), "every user page is written in Japanese too"
    records = set(scorer_list("RECORDS"))
    assert records == RECORD_PAGES, records ^ RECORD_PAGES
    assert scorer_list("RECORD_FOLDERS") == ["decisions/"] and (DOCS / "decisions").is_dir()


def test_both_sites_search_with_the_scorer(site: Path) -> None:
    """Sphinx writes the scorer into each build's language_data.js, which the search page loads."""
    scorer = SCORER.read_text(encoding="utf-8").strip()
    for home in (site, site / "ja"):
        assert scorer in (home / "_static" / "language_data.js").read_text(encoding="utf-8"), home


def pre_blocks(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [
        html.unescape(re.sub(r"<[^>]+>", "", block)) for block in re.findall(r"<pre>(.*?)</pre>", text, re.S)
    ]


def every_command() -> Iterator[list[str]]:
    def walk(command: click.Command, path: list[str]) -> Iterator[list[str]]:
        yield path
        if isinstance(command, click.Group):
            for sub in sorted(command.commands):
                yield from walk(command.commands[sub], [*path, sub])

    yield from walk(cli, [])


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_command_line_page_shows_each_commands_own_help(site: Path, language: str) -> None:
    """What ``kbseek … --help`` prints on a terminal 100 columns wide is on the page, for every command."""
    page = (site if language == "en" else site / "ja") / "cli.html"
    shown = {block.strip() for block in pre_blocks(page)}
    runner = CliRunner()
    for path in every_command():
        printed = runner.invoke(
            cli, [*path, "--help"], prog_name="kbseek", terminal_width=kbseek_site.HELP_WIDTH
        )
        assert printed.exit_code == 0, printed.output
        assert printed.output.strip() in shown, f"{page.name} does not show `kbseek {' '.join(path)} --help`"


def config_labels() -> list[str]:
    import dataclasses

    labels = [key.label for key in KEYS]
    for table, (cls, _) in SECTIONS.items():
        labels += [
            f"[{table}].{f.name}" for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")
        ]
    return labels


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_configuration_page_describes_every_key_of_the_settings_table(site: Path, language: str) -> None:
    page = (site if language == "en" else site / "ja") / "configuration.html"
    rows = {
        html.unescape(re.sub(r"<[^>]+>", "", cells[0])).strip(): html.unescape(re.sub(r"<[^>]+>", "", cells[-1])).strip()
        for cells in (re.findall(r"<td>(.*?)</td>", row, re.S) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page.read_text(encoding="utf-8"), re.S))
        if cells
    }  # fmt: skip
    for label in config_labels():
        assert label in rows, f"{page.name} has no row for {label}"
        assert rows[label], f"{label} has no description: give its field a docstring in the code"


def search_terms(index: Path) -> dict[str, object]:
    text = index.read_text(encoding="utf-8")
    data = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    return dict(data["terms"])


def test_the_japanese_search_index_finds_words_inside_japanese_sentences(site: Path) -> None:
    """Japanese has no spaces: the index must hold words cut out of running text, such as 検索 from
    全文検索 or 起動 from 再起動, for a search of one word to find the page."""
    terms = search_terms(site / "ja" / "searchindex.js")
    for word in ("検索", "埋め込み", "インデックス", "ナレッジベース", "起動"):
        assert word in terms, f"the Japanese search index lacks {word}"
    english = search_terms(site / "searchindex.js")
    assert "rerank" in english or "reranker" in english


def test_the_reference_writers_need_only_the_code() -> None:
    """Both references are written from the installed package alone, with no build around them."""
    assert "kbseek index" in kbseek_site.cli_reference()
    assert "[search].fusion" in kbseek_site.config_reference()


@contextmanager
def served(folder: Path) -> Iterator[int]:
    """The built site over HTTP on a free port of this machine, as ``make docs`` serves it."""
    handler = functools.partial(_Quiet, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.server_address[1]
        finally:
            server.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """The test's output is pytest's; requests are not logged."""


SCREENSHOTS = ROOT / "test-artifacts"
SEARCH_DONE = "(document.querySelector('#search-results p.search-summary') || {}).textContent > ''"
PAGES_SHOWN = ("get-started", "configuration", "search")


def test_in_chromium_the_japanese_search_finds_words_written_without_spaces(site: Path) -> None:
    """埋め込みモデル and 再起動 are written as Japanese is, without spaces; the page must cut the query
    as the index was cut and list the pages that hold the words. Screenshots of three pages in each
    language go to ``test-artifacts/``."""
    from tests.wire.serving import chromium

    SCREENSHOTS.mkdir(exist_ok=True)
    with served(site) as port, chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
        for query, expected in (
            ("埋め込みモデル", "models.html"),
            ("再起動", "get-started.html"),
            ("検索", "concepts.html"),
        ):
            page.goto(f"http://127.0.0.1:{port}/ja/search.html?q={quote(query)}")
            page.wait_for_selector("#search-results ul.search li", timeout=20_000)
            links = page.eval_on_selector_all(
                "#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))"
            )
            assert any(str(link).startswith(expected) for link in links), (query, links)
        page.goto(f"http://127.0.0.1:{port}/search.html?q=reranker")
        page.wait_for_selector("#search-results ul.search li", timeout=20_000)
        for prefix in ("", "ja/"):
            for name in PAGES_SHOWN:
                query = (
                    "?q=" + quote("埋め込みモデル" if prefix else "embedding model")
                    if name == "search"
                    else ""
                )
                page.goto(f"http://127.0.0.1:{port}/{prefix}{name}.html{query}")
                if name == "search":  # the summary line is written once every result is listed
                    page.wait_for_function(SEARCH_DONE, timeout=20_000)
                page.screenshot(path=str(SCREENSHOTS / f"docs-{(prefix or 'en/').rstrip('/')}-{name}.png"))


def is_record(href: str) -> bool:
    name = urlsplit(href).path.removesuffix(".html")
    return name.startswith("decisions/") or name in RECORD_PAGES


def listed(browser: object, port: int, prefix: str, query: str) -> list[str]:
    """The pages the site's own search lists for ``query``, in the order it shows them."""
    page = browser.new_page()  # type: ignore[attr-defined]
    try:
        page.goto(f"http://127.0.0.1:{port}/{prefix}search.html?q={quote(query)}")
        page.wait_for_function(SEARCH_DONE, timeout=20_000)
        links = page.eval_on_selector_all(
            "#search-results ul.search li > a", "els => els.map(e => e.getAttribute('href'))"
        )
        return [str(link) for link in links]
    finally:
        page.close()


def test_in_chromium_the_search_lists_user_pages_before_the_records(site: Path) -> None:
    """A search for a feature opens with the pages that explain it: "reranker" used to list decision
    records, architecture and the changelog before Stronger models (models.html), 12th of 13. A query
    that names a record's page title still opens with that page."""
    from tests.wire.serving import chromium

    with served(site) as port, chromium() as browser:
        for prefix, query, explained in (
            ("", "reranker", "models.html"),
            ("ja/", "reranker", "configuration.html"),
            ("ja/", "埋め込みモデル", "models.html"),
        ):
            links = listed(browser, port, prefix, query)
            users = [i for i, link in enumerate(links) if not is_record(link)]
            records = [i for i, link in enumerate(links) if is_record(link)]
            assert users and records, (prefix, query, links)  # both kinds match, so the order is tested
            assert max(users) < min(records), (prefix, query, links)
            assert explained in links, (prefix, query, links)
        decisions = [link for link in listed(browser, port, "", "reranker") if link.startswith("decisions/")]
        assert decisions, "the records still match reranker; they only come later"
        assert listed(browser, port, "", "architecture")[0] == "architecture.html"
