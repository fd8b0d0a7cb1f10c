"""What an agent reads: the size of ``tools/list`` and of a default search answer, in characters.

    python benchmarks/answer_size.py [--kb examples/kb] [--lexical-only] [--json]

Every character a tool list or an answer holds is paid for in the agent's context window, so
these sizes are measured as a real MCP client receives them: the server runs in process behind
the SDK's client, over the example knowledge base, indexed into a temporary folder (the example
tree is left as it is). ``tools/list`` is counted per tool as the JSON of its description, input
schema and output schema; a search answer as its text block and its structured content (compact
JSON, as sent), for a few typical questions with every argument but the query left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.server.mcp import build_server

HERE = Path(__file__).resolve().parent
QUERIES = (
    "how do I roll back a bad release",
    "rate limiting design",
    "証明書の更新手順",
    "postgres failover",
    "logging conventions for request ids",
)
"""Questions like those an agent asks of the example notes: English and Japanese, a question and
keywords. None is from the development sets, which measure ranking, not size."""


def _chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON, the way it travels (non-ASCII kept as written)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


async def measure(kb: KnowledgeBase) -> dict[str, Any]:
    async with Client(build_server(kb)) as client:
        listed = await client.list_tools()
        tools = {
            t.name: {
                "description": len(t.description or ""),
                "input schema": _chars(t.input_schema),
                "output schema": _chars(t.output_schema),
                "total": _chars(t.model_dump(mode="json", by_alias=True, exclude_none=True)),
            }
            for t in listed.tools
        }
        total = _chars(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
        answers = []
        for query in QUERIES:
            result = await client.call_tool("search", {"query": query})
            text = "".join(c.text for c in result.content if c.type == "text")
            structured = result.structured_content or {}
            answers.append(
                {"query": query, "hits": len(structured.get("hits", [])), "text": len(text), "structured": _chars(structured)}
            )  # fmt: skip
    return {"tools/list": total, "tools": tools, "search": answers}


def report(sizes: dict[str, Any]) -> str:
    tools = sizes["tools"]
    lines = [
        f"tools/list: {sizes['tools/list']:,} characters",
        "",
        "| tool | description | input schema | output schema | total |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, t in tools.items():
        lines.append(
            f"| {name} | {t['description']:,} | {t['input schema']:,} | {t['output schema']:,} | {t['total']:,} |"
        )
    sums = {
        k: sum(t[k] for t in tools.values())
        for k in ("description", "input schema", "output schema", "total")
    }
    lines.append(
        f"| all | {sums['description']:,} | {sums['input schema']:,} | {sums['output schema']:,} | {sums['total']:,} |"
    )
    lines += ["", "| default search | hits | text | structured |", "|---|---:|---:|---:|"]
    for a in sizes["search"]:
        lines.append(f"| {a['query']} | {a['hits']} | {a['text']:,} | {a['structured']:,} |")
    n = len(sizes["search"])
    mean = {k: sum(a[k] for a in sizes["search"]) / n for k in ("hits", "text", "structured")}
    lines.append(f"| mean | {mean['hits']:.1f} | {mean['text']:,.0f} | {mean['structured']:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, default=HERE.parent / "examples" / "kb")
    parser.add_argument("--lexical-only", action="store_true", help="No embedding model (keywords only).")
    parser.add_argument("--json", action="store_true", help="Print the sizes as JSON.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbseek-answer-size-") as index_dir:
        kb = KnowledgeBase(args.kb, index_dir=index_dir, semantic=False if args.lexical_only else None)
        try:
            kb.index()
            sizes = anyio.run(measure, kb)
        finally:
            kb.close()
    print(json.dumps(sizes, indent=2) if args.json else report(sizes))
    print(f"measured on {args.kb}", file=sys.stderr)


if __name__ == "__main__":
    main()
