"""The web API's inputs as documented, and nothing looser: numbers and dates in ASCII digits,
parameters that are UTF-8 text, and errors no longer than the MCP surface's.

Python's ``int`` reads ``1_0``, ``+5`` and ``٥`` (Arabic-Indic five), and a regex's ``\\d`` matches
``２`` (fullwidth two): each was answered as if the page had sent a plain number. Starlette decodes
``%ED%A0%80`` (a UTF-16 surrogate encoded as if it were a character) to replacement characters and
searched for them. And a refusal quoting a parameter came back as long as the parameter.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import InvalidArgument
from kbseek.server.mcp import ERROR_CHARS
from kbseek.server.web import build_web_app
from tests.conftest import indexed_kb, write_notes
from tests.fakes import FakeEmbedder
from tests.wire.serving import get, serving

pytestmark = pytest.mark.anyio

NOTES = {
    "runbooks/rollback.md": "---\ndate: 2026-03-01\n---\n# Rollback\n\nrevert the release and redeploy.\n",
    "notes/fullwidth.md": "---\ndate: ２０２６-０３-０２\n---\n# Fullwidth\n\nrollback notes typed in Japanese.\n",
}
ASCII_DIGITS = "must be a whole number written in ASCII digits (0-9)"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    base = indexed_kb(tmp_path / "kb", NOTES)
    yield base
    base.close()


async def api(kb: KnowledgeBase, path: str) -> tuple[int, dict[str, Any]]:
    transport = httpx2.ASGITransport(app=build_web_app(kb))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.get(path)
    return response.status_code, response.json()


# -- numbers -----------------------------------------------------------------------------------------

NUMBER_PARAMS = [
    "/api/search?q=rollback&limit=",
    "/api/search?q=rollback&snippet_chars=",
    "/api/document?path=runbooks/rollback.md&offset=",
    "/api/document?path=runbooks/rollback.md&max_chars=",
    "/api/related?path=runbooks/rollback.md&limit=",
]


@pytest.mark.parametrize("url", NUMBER_PARAMS)
@pytest.mark.parametrize(
    ("raw", "shown", "meant"),
    [
        ("1_0", "1_0", "10"),
        ("%D9%A5", "٥", "5"),  # Arabic-Indic five
        ("%EF%BC%95", "５", "5"),  # fullwidth five
        ("%2B5", "+5", "5"),
        ("%205", " 5", "5"),
        ("5%0A", "5\\n", "5"),
        ("--5", "--5", None),
        ("1.5", "1.5", None),
        ("abc", "abc", None),
    ],
)
async def test_a_number_not_in_ascii_digits_is_a_400_saying_how_to_write_it(
    kb: KnowledgeBase, url: str, raw: str, shown: str, meant: str | None
) -> None:
    status, body = await api(kb, url + raw)
    name = url.rsplit("&", 1)[1].rstrip("=")
    hint = f": write {name}={meant}" if meant is not None else ""
    assert (status, body["error"]) == (400, f"{name} {ASCII_DIGITS}, not '{shown}'{hint}")


@pytest.mark.parametrize("url", NUMBER_PARAMS)
@pytest.mark.parametrize("raw", ["3", "007", "-3", pytest.param("9" * 100, id="100-digits")])
async def test_a_number_in_ascii_digits_is_read_and_one_out_of_range_moved_into_it(
    kb: KnowledgeBase, url: str, raw: str
) -> None:
    status, body = await api(kb, url + raw)
    assert status == 200, body


async def test_a_number_of_more_than_100_digits_is_refused_without_being_echoed(kb: KnowledgeBase) -> None:
    """Past 4,300 digits Python's ``int`` refuses it, and the answer said it was not a whole number."""
    for digits in (101, 5000):
        status, body = await api(kb, f"/api/search?q=rollback&limit={'9' * digits}")
        assert status == 400 and body["error"].startswith(
            f"limit has {digits} digits, more than the 100 read"
        )
        assert "999" not in body["error"]


# -- dates -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown", "meant"),
    [
        (
            "%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96-%EF%BC%90%EF%BC%93-%EF%BC%90%EF%BC%91",
            "２０２６-０３-０１",
            "2026-03-01",
        ),
        ("2026-03-%D9%A0%D9%A1", "2026-03-٠١", "2026-03-01"),
        ("%D9%A7d", "٧d", "7d"),
        ("2026-03-01T%EF%BC%91%EF%BC%90:00", "2026-03-01T１０:00", "2026-03-01T10:00"),
    ],
)
async def test_a_date_filter_not_in_ascii_digits_is_a_400_saying_how_to_write_it(
    kb: KnowledgeBase, raw: str, shown: str, meant: str
) -> None:
    for name in ("after", "before"):
        status, body = await api(kb, f"/api/search?q=rollback&{name}={raw}")
        expected = f"{name}='{shown}' is not a date: its digits must be ASCII (0-9); write {name}={meant}"
        assert (status, body["error"]) == (400, expected)


async def test_a_front_matter_date_in_fullwidth_digits_is_still_that_day(kb: KnowledgeBase) -> None:
    """Front matter is other people's files, read leniently (``dates.day_of``); filters are strict."""
    status, body = await api(kb, "/api/search?q=rollback&after=2026-03-02&limit=10")
    assert status == 200 and [(h["path"], h["date"]) for h in body["hits"]] == [
        ("notes/fullwidth.md", "2026-03-02")
    ]
    status, body = await api(kb, "/api/document?path=notes/fullwidth.md")
    assert (status, body["date"], body["date_source"]) == (200, "2026-03-02", "frontmatter:date")


# -- errors are cut as the MCP surface cuts them -------------------------------------------------------


async def test_an_error_is_cut_in_the_middle_to_the_mcp_surfaces_length(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal that quotes 100 KB of input came back 100 KB long; the MCP tools cut it."""
    message = "start " + "x" * 100_000 + " end: do this instead"

    def refuse(*_: Any, **__: Any) -> Any:
        raise InvalidArgument(message)

    monkeypatch.setattr(kb, "search", refuse)
    status, body = await api(kb, "/api/search?q=rollback")
    error = body["error"]
    assert status == 400 and len(error) <= ERROR_CHARS + 40
    assert error.startswith("start xxx") and error.endswith("xxx end: do this instead")
    assert "more characters)…" in error


async def test_a_long_number_parameter_is_quoted_in_part(kb: KnowledgeBase) -> None:
    status, body = await api(kb, "/api/search?q=rollback&limit=" + "x" * 50_000)
    assert status == 400 and body["error"].startswith(f"limit {ASCII_DIGITS}, not 'xxx")
    assert len(body["error"]) < 500


# -- parameters that are not text ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api/search?q=%ED%A0%80", "/api/search?q=rollback&tag=a%ED%B0%80b", "/api/document?path=%ED%A0%80.md",
     "/api/related?path=%ED%A0%80", "/api/status?kb=%ED%A0%80", "/api/search?q=rollback&where=x%3D%ED%BF%BF"],
)  # fmt: skip
async def test_a_parameter_holding_an_encoded_surrogate_is_a_400_saying_it_is_not_text(
    kb: KnowledgeBase, path: str
) -> None:
    status, body = await api(kb, path)
    name = path.rsplit("&", 1)[-1].split("?")[-1].split("=")[0]
    assert (status, body["error"]) == (
        400,
        f"parameter '{name}' holds a UTF-16 surrogate encoded as UTF-8 (%ED%A0%80 to %ED%BF%BF), which is "
        "not text: send the text percent-encoded as UTF-8",
    )


async def test_a_parameter_that_is_not_utf8_is_a_400(kb: KnowledgeBase) -> None:
    status, body = await api(kb, "/api/search?q=%FF")
    assert (status, body["error"]) == (
        400, "parameter 'q' is not UTF-8 text: send the text percent-encoded as UTF-8"
    )  # fmt: skip
    status, body = await api(kb, "/api/search?q=rollback&%C3=1")
    assert (status, body["error"]) == (
        400, "a parameter name is not UTF-8 text: send the text percent-encoded as UTF-8"
    )  # fmt: skip


async def test_utf8_parameters_are_read_as_before(kb: KnowledgeBase) -> None:
    status, body = await api(kb, "/api/search?q=%E6%97%A5%E6%9C%AC+rollback&limit=5")
    assert status == 200 and body["query"] == "日本 rollback"


# -- through the installed server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("served") / "kb"
    write_notes(root, NOTES)
    with serving(root, "--no-watch") as port:
        yield f"http://127.0.0.1:{port}"


def test_the_installed_server_refuses_the_same_inputs(served: str) -> None:
    assert get(f"{served}/api/search?q=rollback&limit=3")[0] == 200
    status, body = get(f"{served}/api/search?q=rollback&limit=%D9%A5")
    assert (status, body["error"]) == (400, f"limit {ASCII_DIGITS}, not '٥': write limit=5")
    status, body = get(f"{served}/api/search?q=%ED%A0%80")
    assert status == 400 and "holds a UTF-16 surrogate encoded as UTF-8" in body["error"]
    status, body = get(f"{served}/api/search?q=rollback&after=%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96-03-01")
    assert status == 400 and "its digits must be ASCII (0-9); write after=2026-03-01" in body["error"]
    status, body = get(f"{served}/api/search?q=rollback&snippet_chars=" + "x" * 10_000)
    assert status == 400 and len(body["error"]) < 500


# -- explain and the collection named ----------------------------------------------------------------


async def test_explain_gives_each_hit_its_legs_ranks_and_scores(kb: KnowledgeBase) -> None:
    """The page's API ignored ``explain``: every hit said ``"explain": null`` whatever was asked."""
    plain_status, plain = await api(kb, "/api/search?q=rollback")
    status, explained = await api(kb, "/api/search?q=rollback&explain=true")
    assert plain_status == status == 200
    assert plain["hits"][0]["explain"] is None
    assert explained["hits"][0]["explain"]["lexical_rank"] == 1
    bad_status, bad = await api(kb, "/api/search?q=rollback&explain=maybe")
    assert bad_status == 400 and "explain must be true or false" in bad["error"]


@pytest.mark.parametrize(
    "path", ["/api/search?q=rollback&kb=nope", "/api/status?kb=nope", "/api/topics?kb=nope"]
)
async def test_a_collection_the_server_does_not_hold_is_refused_with_one_knowledge_base_too(
    kb: KnowledgeBase, path: str
) -> None:
    """With several collections an unknown ``kb=`` was a 400; with one it was ignored, so a caller that
    believed it had chosen a collection read this one's answer."""
    status, answer = await api(kb, path)
    assert status == 400 and answer["error"] == "no collection 'nope': the collections are kb"
    own_status, _ = await api(kb, "/api/search?q=rollback&kb=kb")
    assert own_status == 200


def test_the_router_s_404_and_405_are_json_naming_what_works(tmp_path: Path) -> None:
    """They were plain text ("Not Found"), the one kind of answer a JSON client could not read."""
    base = indexed_kb(tmp_path / "kb", NOTES)
    base.close()
    with serving(tmp_path / "kb") as port:
        missing = httpx2.get(f"http://127.0.0.1:{port}/api/nope")
        posted = httpx2.post(f"http://127.0.0.1:{port}/api/search?q=rollback")
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
    assert missing.json()["error"].startswith(
        "nothing is at /api/nope: the API's routes are /api/collections"
    )
    assert posted.status_code == 405 and "GET" in posted.headers["allow"]
    assert posted.json() == {"error": "POST is not answered on /api/search: send GET (or HEAD)"}


# -- status without the server's paths ------------------------------------------------------------------


async def test_status_names_the_knowledge_base_and_its_index_without_the_servers_paths(
    kb: KnowledgeBase,
) -> None:
    """``/api/status`` may be read from another machine (``--ui-allow-remote``): the folder's name and the
    index's path inside it say which knowledge base it is, without the account and layout around it."""
    assert kb.root is not None and kb.index_path.startswith(str(kb.root))  # the status the tool shows
    status, body = await api(kb, "/api/status")
    assert status == 200 and body["documents"] == len(NOTES)
    assert body["root"] == kb.root.name
    assert body["index_path"] == Path(kb.index_path).relative_to(kb.root).as_posix()
    assert str(kb.root.parent) not in str(body)


async def test_status_of_an_index_kept_elsewhere_names_its_file_and_scrubs_notes(tmp_path: Path) -> None:
    """An index outside the knowledge base is named by its file; a note quoting the folder (here: nothing
    indexable was found under it) quotes it by name."""
    root = tmp_path / "private" / "empty-kb"
    root.mkdir(parents=True)
    index_dir = tmp_path / "elsewhere"
    core = KnowledgeBase(settings=Settings(root=root, index_dir=index_dir, freshness_interval_s=0.0),
                         embedder=FakeEmbedder())  # fmt: skip
    try:
        core.index()
        assert any(str(root) in note for note in core.status().notes)  # the tool's own answer quotes it
        status, body = await api(core, "/api/status")
    finally:
        core.close()
    assert status == 200 and body["documents"] == 0
    assert body["index_path"] == Path(core.index_path).name
    assert any("empty-kb" in note for note in body["notes"]), body["notes"]
    assert str(tmp_path) not in str(body)
