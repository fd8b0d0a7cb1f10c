"""Inputs built to cost or to confuse, through every surface: the web API of the installed server,
MCP through a real client, and the command line.

Each was once answered badly: a glob that froze the server for minutes, a long filter answered as a
bug (500, "internal error", exit 70), a query of a million characters read for tens of seconds,
``where`` entries that replaced each other, ``..`` prefixes read as the whole tree. Now each is
answered at once, and a refusal is one sentence with a 4xx, a tool error or exit 1; while the worst
of them run, ``/healthz`` keeps answering.
"""

from __future__ import annotations

import threading
import time
import unicodedata
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from kbseek import Filters, KnowledgeBase
from kbseek.cli import cli
from kbseek.server.mcp import build_server
from tests.fakes import FakeEmbedder
from tests.fixture_copies import example_copy
from tests.unit.test_globs import BACKTRACKING_FAMILIES, HANG_S
from tests.wire.serving import get, request, serving

WORST_GLOB = "*" * 24 + "k*/failover.md"
LONG = "a" * 50_001
LONG_IN_A_URL = "a" * 6_000
"""Past every filter's cap, within the URL's (64 KiB; a longer URL is answered 414)."""
NFC_GLOB = "*引き継ぎ*"
NFD_GLOB = unicodedata.normalize("NFD", NFC_GLOB)


def nested(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {}
    outer = inner
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return outer


REFUSED: list[tuple[str, dict[str, Any]]] = [
    # (what, MCP search arguments) — each a refusal, never a bug
    ("a 50,001-character glob", {"path_globs": [LONG]}),
    ("a 50,001-character path prefix", {"path_prefix": LONG}),
    ("a 50,001-character where value", {"where": {"topic": LONG}}),
    ("a 50,001-character where field", {"where": {LONG: "x"}}),
    ("a 50,001-character tag", {"tags": [LONG]}),
    ("a glob with 40 wildcards", {"path_globs": ["/".join(["*x"] * 40)]}),
    ("a query of a million characters", {"query": "a " * 500_000}),
    ("a Japanese query of 20,000 characters", {"query": "障害対応の手順" * 3000}),
    ("an also phrasing of 5,000 characters", {"also": ["rollback " * 600]}),
    ("where nested 100 deep", {"where": {"topic": nested(100)}}),
    ("a .. prefix", {"path_prefix": ".."}),
    ("a ../ prefix", {"path_prefix": "../"}),
    ("a runbooks/.. prefix", {"path_prefix": "runbooks/.."}),
    ("a type written as a path", {"types": ["../md"]}),
]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = example_copy(tmp_path_factory.mktemp("hostile"))
    base = KnowledgeBase(root, index_dir=root.parent / "index", embedder=FakeEmbedder())
    base.index()
    yield base
    base.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(kb: KnowledgeBase, **arguments: Any) -> tuple[dict[str, Any], str, bool]:
    async with Client(build_server(kb)) as client:
        result = await client.call_tool("search", {"query": "failover", **arguments})
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return result.structured_content or {}, text, bool(result.is_error)


@pytest.mark.anyio
@pytest.mark.parametrize(("what", "arguments"), REFUSED, ids=[w for w, _ in REFUSED])
async def test_mcp_refuses_each_oversize_or_contradictory_input_in_one_sentence(
    kb: KnowledgeBase, what: str, arguments: dict[str, Any]
) -> None:
    _, text, error = await call(kb, **arguments)
    assert error, what
    assert "internal error" not in text.lower() and "bug" not in text.lower(), text
    assert len(text) < 2_100, f"{what}: the refusal echoes its input ({len(text)} characters)"


@pytest.mark.anyio
async def test_mcp_answers_the_worst_glob_and_families_built_to_backtrack(kb: KnowledgeBase) -> None:
    for glob, _ in [(WORST_GLOB, ""), *BACKTRACKING_FAMILIES]:
        started = time.monotonic()
        data, text, error = await call(kb, path_globs=[glob])
        assert not error, text
        assert time.monotonic() - started < HANG_S, glob
        assert data["hits"] == [] or all(h["path"].endswith("failover.md") for h in data["hits"])


@pytest.mark.anyio
async def test_prefixes_of_dots_and_nfd_globs(kb: KnowledgeBase) -> None:
    whole, _, _ = await call(kb, path_prefix="./", limit=10)
    assert whole["hits"]
    named, _, error = await call(kb, path_prefix="...")  # a name like any other: no such folder
    assert not error and named["hits"] == []
    nfc, _, _ = await call(kb, query="引き継ぎ", path_globs=[NFC_GLOB])
    nfd, _, _ = await call(kb, query="引き継ぎ", path_globs=[NFD_GLOB])
    assert (
        {h["path"] for h in nfc["hits"]}
        == {h["path"] for h in nfd["hits"]}
        == {"runbooks/オンコール引き継ぎ.md"}
    )


def test_the_command_line_refuses_with_exit_1_not_as_a_bug(kb: KnowledgeBase) -> None:
    base = ["search", "--kb", str(kb.root), "--index-dir", str(kb.root.parent / "index"), "--lexical-only"]
    for extra in (
        ["--glob", LONG],
        ["--where", "topic=operations", "--where", "!topic"],
        ["--path-prefix", "../"],
    ):
        result = CliRunner().invoke(cli, [*base, *extra, "failover"])
        assert result.exit_code == 1, (extra[:1], result.output[-500:])
        assert "bug" not in result.stderr and len(result.stderr) < 2_000
    fine = CliRunner().invoke(cli, [*base, "--glob", WORST_GLOB, "failover"])
    assert fine.exit_code == 0, fine.output[-500:]


# -- the installed server over HTTP ----------------------------------------------------------------


def api(port: int, **params: str | list[str]) -> tuple[int, dict[str, Any]]:
    query = urllib.parse.urlencode(params, doseq=True)
    return get(f"http://127.0.0.1:{port}/api/search?{query}")


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = example_copy(tmp_path_factory.mktemp("hostile-http"))
    with serving(root) as serving_port:
        yield serving_port


@pytest.mark.parametrize(
    "params",
    [
        {"glob": LONG_IN_A_URL},
        {"path_prefix": LONG_IN_A_URL},
        {"where": f"topic={LONG_IN_A_URL}"},
        {"q": "rollback " * 250},
        {"q": "障害対応の手順" * 300},
        {"where": ["topic=operations", "!topic"]},
        {"path_prefix": ".."},
        {"path_prefix": "../"},
        {"path_prefix": "runbooks/.."},
        {"type": "../md"},
    ],
    ids=[
        "long glob",
        "long prefix",
        "long where",
        "long query",
        "long Japanese query",
        "contradiction",
        "..",
        "../",
        "runbooks/..",
        "type",
    ],
)
def test_the_web_api_answers_400_in_one_sentence(port: int, params: dict[str, Any]) -> None:
    status, body = api(port, q=params.pop("q", "failover"), **params)
    assert status == 400, body
    assert len(body["error"]) < 2_100 and "bug" not in body["error"]
    if params.get("type"):
        assert "'../md'" in body["error"]


def test_a_url_past_its_cap_is_answered_414(port: int) -> None:
    status, body = api(port, q="failover", glob="a" * 100_000)
    assert status == 414 and len(body["error"]) < 300


def test_a_japanese_query_at_its_cap_fits_in_a_url(port: int) -> None:
    status, body = api(port, q=("障害対応の手順" * 300)[:2000], glob="runbooks/**")
    assert status == 200, body


def test_a_percent_encoded_climb_is_refused_like_a_typed_one(port: int) -> None:
    status, body = get(f"http://127.0.0.1:{port}/api/search?q=failover&path_prefix=%2e%2e%2f")
    assert status == 400 and "'..'" in body["error"]


def test_healthz_answers_while_the_worst_globs_run(port: int) -> None:
    """Four clients send the worst glob and every backtracking family over and over; meanwhile
    ``/healthz`` is asked in a loop, and every answer comes (no stall of the process)."""
    stop = threading.Event()
    answered: list[int] = []

    def hammer() -> None:
        while not stop.is_set():
            for glob, _ in [(WORST_GLOB, ""), *BACKTRACKING_FAMILIES]:
                answered.append(api(port, q="failover", glob=glob)[0])

    workers = [threading.Thread(target=hammer, daemon=True) for _ in range(4)]
    for worker in workers:
        worker.start()
    waits: list[float] = []
    try:
        for _ in range(30):
            started = time.monotonic()
            assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200
            waits.append(time.monotonic() - started)
            time.sleep(0.05)
    finally:
        stop.set()
        for worker in workers:
            worker.join(60)
    assert answered and set(answered) == {200}
    assert max(waits) < HANG_S, f"/healthz waited {max(waits):.1f} s behind the searches"


def test_a_path_of_the_tree_under_a_nfd_name_is_found_by_the_nfc_glob(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / unicodedata.normalize("NFD", "ガイド")).mkdir(parents=True)
    (root / unicodedata.normalize("NFD", "ガイド") / "setup.md").write_text("# Setup\n\nInstall the agent.\n")
    base = KnowledgeBase(root, index_dir=tmp_path / "index", embedder=FakeEmbedder())
    try:
        base.index()
        for typed in ("NFC", "NFD"):
            glob = unicodedata.normalize(typed, "ガイド/*.md")  # type: ignore[arg-type]
            hits = base.search("install agent", filters=Filters(path_globs=[glob])).hits
            assert [h.path for h in hits] == [unicodedata.normalize("NFD", "ガイド/setup.md")], typed
            prefix = unicodedata.normalize(typed, "ガイド/")  # type: ignore[arg-type]
            hits = base.search("install agent", filters=Filters(path_prefix=prefix)).hits
            assert len(hits) == 1, typed
    finally:
        base.close()


def test_a_lone_surrogate_in_an_mcp_body_is_named(port: int) -> None:
    """The SDK's parser calls it "unexpected end of hex escape"; the answer says what it is."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    for escape in (b"\\ud800", b"\\udc00", b"\\ud800\\u0041"):
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"' + escape + b'"}}'
        status, _, answer = request(f"http://127.0.0.1:{port}/mcp", headers, body)
        assert status == 400, answer
        assert answer["error"]["code"] == -32700 and "lone UTF-16 surrogate" in answer["error"]["message"]
    short = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\u12"}}'
    status, _, answer = request(f"http://127.0.0.1:{port}/mcp", headers, short)
    assert status == 400 and "surrogate" not in answer["error"]["message"]


@pytest.mark.anyio
@pytest.mark.parametrize("written", ["1_0", "+5", " 5", "٥", "５"])
async def test_a_whole_number_sent_as_text_takes_ascii_digits_only(kb: KnowledgeBase, written: str) -> None:
    """The SDK's validation would read "1_0" as 10 and "+5" as 5; the other surfaces refuse them."""
    _, text, error = await call(kb, limit=written)
    assert error and "must be a whole number written in ASCII digits (0-9)" in text, text
    data, _, error = await call(kb, limit="2")  # ASCII digits as text are still a number
    assert not error and len(data["hits"]) <= 2
