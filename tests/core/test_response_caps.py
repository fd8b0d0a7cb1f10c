"""Every response stays within the response cap, echoed input included (T3).

A response repeats what it was asked (the query, an unknown id, a refused path) so the reader can
tell which request it answers; a 1 MB argument must not make a 1 MB response. Each echo is cut
with a marker saying how much was left out, and a search is fitted with its text block counted,
since that is sent too. Sizes are measured on the result as the client receives it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.types import CallToolResult

from kbseek import KnowledgeBase
from kbseek.config import Limits
from kbseek.server.mcp import build_server
from kbseek.text.quoting import ECHO_CHARS, bounded, bounded_middle
from tests.conftest import make_core

pytestmark = pytest.mark.anyio

MB = 1_000_000
CAP = Limits().max_response_chars
MORE = re.compile(r"…\((\d+) more characters\)")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _call(core: KnowledgeBase, name: str, args: dict[str, Any]) -> CallToolResult:
    async with Client(build_server(core)) as client:
        return await client.call_tool(name, args)


def _size(result: CallToolResult) -> int:
    """The whole result as serialised: the text block and the structured content."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


def _text(result: CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


async def test_a_1mb_query_is_refused_in_a_sentence_within_the_cap(core: KnowledgeBase) -> None:
    result = await _call(core, "search", {"query": "x" * MB, "also": ["y" * MB]})
    assert result.is_error and _size(result) <= CAP
    assert "at most 2,000 are searched" in _text(result) and len(_text(result)) < 500


async def test_a_query_at_its_cap_comes_back_cut_with_a_marker(core: KnowledgeBase) -> None:
    most = core.settings.limits.max_query_chars
    result = await _call(core, "search", {"query": "x" * most, "also": ["y" * most]})
    assert not result.is_error and _size(result) <= CAP
    data = result.structured_content or {}
    assert data["query"] == "x" * ECHO_CHARS + f"…({most - ECHO_CHARS} more characters)"
    assert data["also"] == ["y" * ECHO_CHARS + f"…({most - ECHO_CHARS} more characters)"]
    assert "x" * (ECHO_CHARS + 1) not in _text(result)  # the text echoes no query (decision 0035), cut or not
    assert "empty" in data["note_codes"]  # the response still says why it found nothing


async def test_a_1mb_chunk_id_is_reported_missing_cut_with_a_marker_within_the_cap(
    core: KnowledgeBase,
) -> None:
    huge = "c_" + "0" * MB
    result = await _call(core, "fetch", {"chunk_ids": [huge, "c_" + "1" * MB]})
    assert not result.is_error and _size(result) <= CAP
    missing = (result.structured_content or {})["missing"]
    assert [m["status"] for m in missing] == ["unknown", "unknown"]
    assert missing[0]["chunk_id"] == huge[:ECHO_CHARS] + f"…({len(huge) - ECHO_CHARS} more characters)"


@pytest.mark.parametrize("path", ["x" * MB, "../" + "x" * MB, "notes/" * (MB // 6) + "a.md"])
async def test_get_document_with_a_1mb_path_answers_within_the_cap(core: KnowledgeBase, path: str) -> None:
    result = await _call(core, "get_document", {"path": path})
    assert result.is_error and _size(result) <= CAP


async def test_a_refusal_quoting_a_long_path_stays_short_and_keeps_its_advice(core: KnowledgeBase) -> None:
    result = await _call(core, "get_document", {"path": "../" + "x" * MB})
    text = _text(result)
    assert result.is_error and len(text) < 2_500  # the tool bounds any error's text as a last resort
    assert text.endswith("as returned by search")


async def test_a_search_is_fitted_with_its_text_block_counted(kb_root: Path) -> None:
    query = {"query": "image backups 障害 coffee machine", "limit": 10, "snippet_chars": 1200}
    whole = await _call(_capped(kb_root), "search", query)
    full_size = _size(whole)
    assert len((whole.structured_content or {})["hits"]) >= 3
    cap = full_size * 3 // 4  # more than the structured content alone, less than all that is sent
    result = await _call(_capped(kb_root, max_response_chars=cap), "search", query)
    data = result.structured_content or {}
    assert _size(result) <= cap
    assert 0 < len(data["hits"]) < len((whole.structured_content or {})["hits"])
    assert data["note_codes"].count("cut_to_fit") == 1  # fitted twice (core, then wire), said once
    assert _text(result).count("the response was cut to") == 1


async def test_a_long_prompt_argument_is_bounded(core: KnowledgeBase) -> None:
    async with Client(build_server(core)) as client:
        prompt = await client.get_prompt("answer_from_kb", {"question": "why? " * (MB // 5)})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert len(text) <= CAP and MORE.search(text)


def _capped(root: Path, **limits: int) -> KnowledgeBase:
    c = make_core(root, limits=Limits(**limits))
    c.index()
    return c


def test_bounded_keeps_short_text_and_says_how_much_was_cut() -> None:
    assert bounded("abc", 3) == "abc"
    assert bounded("abcd", 3) == "abc…(1 more character)"
    assert bounded_middle("a" * 10, 10) == "a" * 10
    cut = bounded_middle("head " + "x" * 100 + " tail", 20)
    assert cut.startswith("head ") and cut.endswith(" tail") and "…(90 more characters)…" in cut


async def test_a_fetch_of_text_json_escapes_stays_within_the_cap_and_says_where_to_read_on(
    tmp_path: Path,
) -> None:
    """Quotes and backslashes take two characters each as JSON, and the text block repeats the
    passages: a fetch within its 24,000-character budget was sent as about 100,000 characters."""
    root = tmp_path / "kb"
    root.mkdir()
    lines = ['"\\' * 40 + f" line {i}" for i in range(60)]
    for n in range(12):
        (root / f"quotes-{n}.md").write_text("# Quotes\n\n" + "\n\n".join(lines) + "\n", encoding="utf-8")
    core = _capped(root)
    ids = [h.chunk_id for h in core.search("line", limit=20).hits]
    assert len({core.fetch([i], context=0).passages[0].path for i in ids}) >= 10
    result = await _call(core, "fetch", {"chunk_ids": ids, "context": 2})
    assert not result.is_error and _size(result) <= CAP
    data = result.structured_content or {}
    assert data["truncated"] is True
    cut = [p for p in data["passages"] if p["truncated"]]
    assert cut and sum(len(p["text"]) for p in data["passages"]) > CAP // 8  # cut, not emptied
    first = cut[0]
    assert f"get_document(path={first['path']!r}, offset={first['end']})" in " ".join(data["notes"])
    for passage in cut:  # one note per cut passage, whether the budget, the fit or both cut it
        assert sum(n.startswith(f"the passage from {passage['path']} was cut ") for n in data["notes"]) == 1
    text = core.read_document(first["path"], offset=first["start"], max_chars=len(first["text"])).text
    assert text == first["text"]  # the passage is the document's own text up to where it says to read on
    core.close()


async def test_a_resource_that_is_not_offered_quotes_a_long_path_briefly_and_keeps_its_advice(
    core: KnowledgeBase,
) -> None:
    uri = "kb://doc/" + "n" * 200 + "/" + "y" * 3000 + ".md"
    async with Client(build_server(core)) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    message = str(caught.value)
    assert len(message) < 1000 and "…(" in message
    assert "is not offered as a resource" in message and "get_document(path) reads files by path" in message
