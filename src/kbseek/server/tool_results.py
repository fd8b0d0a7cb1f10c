"""A tool's answer as MCP sends it: the structured result, its text block, its size as sent, and a
refusal as an ``isError`` result. One place for every tool, of one knowledge base or of several.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from kbseek import render
from kbseek.responses import FetchResponse, SearchResponse
from kbseek.server.audit.record import note_failure
from kbseek.server.errors import translate
from kbseek.text.quoting import bounded_middle

ERROR_CHARS = 2000
"""The most an error's text may be: a refusal that quotes a long argument is cut in the middle."""

ENVELOPE_CHARS = 400
"""Room for what the SDK puts around a result: the JSON-RPC envelope and the ``serverInfo`` stamp in
``_meta`` on 2026-era sessions (about 150 characters for kbseek's name, title and version)."""

_HIT_OPTIONAL = ("highlights", "tags", "uri", "explain", "kb")
"""A hit's fields that are left out when empty or null: absent means none, as their defaults say
(``kb`` is there only in a server holding several collections)."""


def structured(model: BaseModel) -> dict[str, Any]:
    """A result's structured content: the model as JSON, less what would say a thing twice
    (decision 0035). A hit or passage leaves out ``title``, the first entry of its heading path; a
    hit leaves out an empty or null field of :data:`_HIT_OPTIONAL`. Five hits are most of a search
    answer, so that is where it counts; the answer's own fields are always there."""
    if isinstance(model, SearchResponse):
        data = model.model_dump(mode="json", exclude={"hits": {"__all__": {"title"}}})
        for hit in data["hits"]:
            for key in _HIT_OPTIONAL:
                if hit.get(key) in (None, []):
                    del hit[key]
        return data
    if isinstance(model, FetchResponse):
        return model.model_dump(mode="json", exclude={"passages": {"__all__": {"title"}}})
    return model.model_dump(mode="json")


def tool_result(model: BaseModel, text: str) -> CallToolResult:
    """``model`` as a tool's result: its structured content and ``text``, its readable rendering."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured(model))


def sent_size(model: BaseModel, text: str) -> int:
    """Characters of the result as sent: the structured content and the text block, as JSON, and the
    envelope around them."""
    return len(tool_result(model, text).model_dump_json(by_alias=True, exclude_none=True)) + ENVELOPE_CHARS


def search_size(r: SearchResponse) -> int:
    """A search result's size as a tool sends it, text block included (the text repeats most of it):
    what a search is fitted by, once (T3)."""
    return sent_size(r, render.search_text(r, brief=True))


def fetch_size(r: FetchResponse) -> int:
    """A fetch result's size as a tool sends it: the text block repeats the passages (T3)."""
    return sent_size(r, render.fetch_text(r))


@contextmanager
def tool_errors(tool: str) -> Iterator[None]:
    """Answer any error in a tool's body as the error table says: an ``isError`` result whose text
    is a refusal's own message, or for a bug the generic one (the traceback goes to the log).

    Left to the SDK, a bug would read "Error executing tool …", which an agent takes for a
    problem with its arguments.
    """
    try:
        yield
    except Exception as exc:
        note_failure(exc)  # the record's outcome: the SDK sends an isError result, not the exception
        _, text = translate(exc, f"tool {tool}")
        raise ToolError(bounded_middle(text, ERROR_CHARS)) from exc
