"""What an agent reads, measured through a real MCP client in process (decision 0035).

Every character of the tool list and of an answer is paid for in the agent's context window, so
the sizes are budgets: the tool list at most 8,000 characters, a default search answer's text at
most 2,500 for its five hits on the example notes. They are content sizes, the same on every
machine. The budget for an answer is for the default configuration, with the embedding model
(a slow test); by keywords alone hits are weaker, a weak answer carries a note more, and the fast
test holds the mean to the budget. The compacted schemas still validate: the client checks every
structured result against the schema it was listed with, and the tests here check that compaction
changed no verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client
from pydantic import TypeAdapter

from kbseek import KnowledgeBase
from kbseek.responses import DocumentResponse, FetchResponse, SearchResponse, StatusResponse, TopicsResponse
from kbseek.server.mcp import build_server, compact_schema, outline
from tests.fixture_copies import EXAMPLE_KB

pytestmark = pytest.mark.anyio

TYPICAL = (
    "how do I roll back a bad release",
    "rate limiting design",
    "証明書の更新手順",
    "postgres failover",
    "logging conventions for request ids",
    "what to hand over at the end of an on-call week",
)
"""Questions like those an agent asks of the example notes, English and Japanese, as in
``benchmarks/answer_size.py``."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """The example notes, by keywords, indexed outside the example tree."""
    kb = KnowledgeBase(EXAMPLE_KB, index_dir=tmp_path_factory.mktemp("index"), semantic=False)
    kb.index()
    yield kb
    kb.close()


async def _default_answers(kb: KnowledgeBase) -> list[tuple[str, str, dict[str, Any]]]:
    """(query, text, structured content) of a search with every argument but the query left out."""
    answers = []
    async with Client(build_server(kb)) as client:
        for query in TYPICAL:
            result = await client.call_tool("search", {"query": query})  # the client validates it
            assert not result.is_error, query
            answers.append((query, result.content[0].text, result.structured_content or {}))  # type: ignore[union-attr]
    return answers


def _chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


async def test_the_tool_list_is_at_most_8000_characters_as_the_client_receives_it(
    examples: KnowledgeBase,
) -> None:
    async with Client(build_server(examples)) as client:
        listed = await client.list_tools()
    sent = listed.model_dump_json(by_alias=True, exclude_none=True)
    assert len(sent) <= 8000, len(sent)
    for tool in listed.tools:
        schemas = json.dumps([tool.input_schema, tool.output_schema], separators=(",", ":"))
        # no title annotation; a property that is named title (a related hit's) is a field, not one
        assert '"title"' not in schemas.replace('"title":{', ""), tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name


@pytest.mark.slow
async def test_a_default_search_answer_is_five_hits_in_at_most_2500_characters_of_text(
    tmp_path: Path,
) -> None:
    kb = KnowledgeBase(EXAMPLE_KB, index_dir=tmp_path)  # the default configuration: the bundled model
    try:
        kb.index()
        answers = await _default_answers(kb)
    finally:
        kb.close()
    for query, text, data in answers:
        assert data["legs"]["semantic"] == "ok" and len(data["hits"]) == 5, query
        assert len(text) <= 2500, (query, len(text))


async def test_a_default_search_answer_holds_what_triage_needs_and_nothing_twice(
    examples: KnowledgeBase,
) -> None:
    answers = await _default_answers(examples)
    for query, text, data in answers:
        assert len(data["hits"]) == 5, query
        dated: set[str] = set()
        for i, hit in enumerate(data["hits"], 1):
            # the section, the chunk id, the file and its lines, the snippet: each once; the
            # document's date at its first hit
            assert f"\n{i}. " in text and text.count(hit["chunk_id"]) == 1, query
            date = "" if hit["path"] in dated else f" date={hit['date']}"
            dated.add(hit["path"])
            assert f'path="{hit["path"]}" lines={hit["line_start"]}-{hit["line_end"]}{date}>>>' in text, query
            assert hit["snippet"][-40:] in text, query
        assert query not in text  # the agent knows what it asked
        assert all(f"note: {n}" in text for n in data["notes"])
    assert sum(len(text) for _, text, _ in answers) / len(answers) <= 2500


async def test_structured_hits_say_nothing_twice(examples: KnowledgeBase) -> None:
    async with Client(build_server(examples)) as client:
        result = await client.call_tool("search", {"query": "postgres failover", "limit": 20})
    hits = (result.structured_content or {})["hits"]
    assert hits
    for hit in hits:
        assert "title" not in hit  # the first entry of heading_path
        assert "explain" not in hit  # not asked for
        assert all(hit[k] not in (None, []) for k in ("highlights", "tags", "uri") if k in hit)
    # the library, the CLI's JSON and the web page keep the title, from the same heading path
    for hit in examples.search("postgres failover", limit=20).hits:
        assert hit.title == hit.heading_path[0] and hit.model_dump()["title"] == hit.title


async def test_every_tool_answers_within_its_listed_schema(examples: KnowledgeBase) -> None:
    """The client validates each result against the listed (compacted) schema and raises if one does not
    conform; an explain search and a fetch carry the fields a default search leaves out."""
    async with Client(build_server(examples)) as client:
        found = await client.call_tool(
            "search", {"query": "rollback", "explain": True, "also": ["ロールバック"]}
        )
        hits = (found.structured_content or {})["hits"]
        assert hits and all("explain" in h for h in hits)
        calls = [
            ("fetch", {"chunk_ids": [hits[0]["chunk_id"], "c_0000000000000000"]}),
            ("get_document", {"path": hits[0]["path"], "max_chars": 100}),
            ("list_topics", {}),
            ("index_status", {}),
        ]
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert not result.is_error and result.structured_content, name


RESPONSES = (SearchResponse, FetchResponse, DocumentResponse, TopicsResponse, StatusResponse)


@pytest.mark.parametrize("model", RESPONSES, ids=lambda m: m.__name__)
def test_compaction_keeps_every_verdict_and_the_outline_only_forgets_presence(model: type) -> None:
    """Compacting a schema changes no verdict on any instance tried; the outline (no ``required``)
    also accepts an answer with fields missing, and still refuses a field of the wrong type."""
    full = TypeAdapter(model).json_schema()
    compact = compact_schema(full)
    listed = outline(compact)
    assert _chars(listed) < _chars(full)
    for instance in _instances(full):
        verdict = _valid(full, instance)
        assert _valid(compact, instance) == verdict, instance
        if verdict:
            assert _valid(listed, instance), instance
    wrong = {name: 12345 if prop.get("type") == "string" else "x" for name, prop in _props(listed).items()}
    assert not _valid(listed, wrong)


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    return dict(schema["properties"])


def _instances(schema: dict[str, Any]) -> list[Any]:
    """A minimal valid instance of ``schema``, and that instance with each top-level field set to
    null, to a value of another type, and removed: cases on both sides of every verdict."""
    base = _example(schema, schema)
    out: list[Any] = [base, {}, None, "x"]
    for name in base:
        for value in (None, "x", 1, 1.5, True, [], {}):
            out.append({**base, name: value})
        out.append({k: v for k, v in base.items() if k != name})
    return out


def _example(node: dict[str, Any], root: dict[str, Any]) -> Any:
    if "$ref" in node:
        return _example(root["$defs"][node["$ref"].rsplit("/", 1)[1]], root)
    if "anyOf" in node:
        return _example(node["anyOf"][0], root)
    kind = node.get("type")
    if kind == "object":
        return {k: _example(v, root) for k, v in node.get("properties", {}).items()}
    if kind == "array":
        return [_example(node["items"], root)] if "items" in node else []
    return {"string": "s", "integer": 1, "number": 0.5, "boolean": False, "null": None}.get(str(kind), 0)
