"""Drive the installed ``kbseek serve`` over stdio with a real MCP client and print what an agent sees.

Run by ``make demo`` after ``kbseek index --kb examples/kb``; ``python examples/demo.py KB`` serves
another folder. Each search's question is printed above the hits it got.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

KB = Path(__file__).resolve().parent / "kb"
QUERIES = [
    "get the project working on my workstation",  # a paraphrase: no words shared with the answer
    "TLS 証明書の更新手順",  # Japanese question, English-only page
    "is it okay to write customer email addresses to the logs",  # English question, Japanese-only page
    "LNT-4012",  # an exact identifier
    "how do I claim travel expenses for a conference",  # not covered: low confidence
]


def _script() -> str:
    here = Path(sys.executable).parent / "kbseek"
    found = str(here) if here.exists() else shutil.which("kbseek")
    if not found:
        sys.exit("kbseek is not installed in this environment: run `make demo`")
    return found


async def main(kb: Path = KB) -> None:
    params = StdioServerParameters(command=_script(), args=["serve", "--kb", str(kb)])
    async with Client(params) as client:
        tools = await client.list_tools()
        print("tools:", ", ".join(t.name for t in tools.tools))
        for _ in range(600):  # the model loads in the background; lexical search answers meanwhile
            status = await client.call_tool("index_status", {})
            if (status.structured_content or {}).get("semantic") != "loading":
                break
            await asyncio.sleep(0.1)
        print("semantic search:", (status.structured_content or {}).get("semantic"))
        for query in QUERIES:
            result = await client.call_tool("search", {"query": query, "limit": 3})
            print()
            print(f"search: {query}")
            print(result.content[0].text)
        first = await client.call_tool("search", {"query": QUERIES[0], "limit": 1})
        hits = (first.structured_content or {}).get("hits", [])
        if hits:
            fetched = await client.call_tool("fetch", {"chunk_ids": [hits[0]["chunk_id"]], "context": 1})
            print("\nfetch of the best hit for", repr(QUERIES[0]))
            print(fetched.content[0].text[:1200])


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else KB))
