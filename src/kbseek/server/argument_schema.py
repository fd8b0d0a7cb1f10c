"""Tool arguments as an agent's host reads them: each with what it is for, its default and its bounds.

The SDK derives a tool's input schema from the function's signature. What the signature cannot say is
what the server will do with an argument left out or out of range, because both come from the
``[limits]`` in force (a ``limit`` of 80 is clamped to ``max_limit``; none means ``default_limit``).
Without them an agent guessed, and learned the cap of 50 from a "clamped" note after the fact. The
schema is therefore finished when the tool list is asked for, from the limits in force then.

An optional argument is written as its one type, not as ``["integer", "null"]``: some hosts'
function calling refuses type arrays, and an agent leaves an argument out rather than sending
``null``. The server still takes ``null`` as "left out".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbseek.config import Limits
from kbseek.facade.related import DEFAULT_LIMIT as RELATED_DEFAULT
from kbseek.facade.related import MAX_LIMIT as RELATED_MAX

__all__ = ["ARGUMENTS", "argument_schema"]


@dataclass(frozen=True)
class Argument:
    """What the schema says of one argument beyond its type."""

    description: str
    default: Callable[[Limits], Any] | None = None
    minimum: int | None = None
    maximum: Callable[[Limits], int] | None = None
    max_items: Callable[[Limits], int] | None = None


ARGUMENTS: Mapping[tuple[str, str], Argument] = {
    ("search", "limit"): Argument("Hits.", lambda lim: lim.default_limit, 1, lambda lim: lim.max_limit),
    ("search", "snippet_chars"): Argument(
        "Characters.", lambda lim: lim.default_snippet_chars, 40, lambda lim: lim.max_snippet_chars
    ),
    ("fetch", "chunk_ids"): Argument("From search hits.", max_items=lambda lim: lim.max_chunk_ids),
    ("fetch", "context"): Argument(
        "Chunks around each.", lambda lim: lim.default_context, 0, lambda lim: lim.max_context
    ),
    ("get_document", "offset"): Argument("Start at.", lambda _: 0, 0),
    ("get_document", "max_chars"): Argument(
        "Characters.", lambda lim: lim.default_document_chars, 1, lambda lim: lim.max_document_chars
    ),
    ("related", "path"): Argument("Or chunk_id, not both."),
    ("related", "chunk_id"): Argument("Or path, not both."),
    ("related", "limit"): Argument("Documents.", lambda _: RELATED_DEFAULT, 1, lambda _: RELATED_MAX),
    ("related", "links"): Argument("Use links."),
}
"""The arguments whose meaning, default or bounds the signature cannot say, by (tool, argument).
A collections server's tools of the same names take the same."""


def argument_schema(tool: str, schema: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """``schema`` (a tool's compacted input schema) with each optional argument as its one type and
    the descriptions, defaults and bounds of :data:`ARGUMENTS` filled in from ``limits``."""
    out = dict(schema)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return out
    finished: dict[str, Any] = {}
    for name, node in properties.items():
        node = _one_type(node)
        said = ARGUMENTS.get((tool, name))
        if said is not None:
            node = {"description": said.description, **{k: v for k, v in node.items() if k != "description"}}
            if said.default is not None:
                node["default"] = said.default(limits)
            if said.minimum is not None:
                node["minimum"] = said.minimum
            if said.maximum is not None:
                node["maximum"] = said.maximum(limits)
            if said.max_items is not None:
                node["maxItems"] = said.max_items(limits)
        finished[name] = node
    out["properties"] = finished
    return out


def _one_type(node: Any) -> Any:
    """An optional argument's ``["x", "null"]`` as ``"x"``: left out is how an agent says none."""
    if isinstance(node, Mapping) and isinstance(node.get("type"), list):
        kinds = [k for k in node["type"] if k != "null"]
        if len(kinds) == 1:
            return {**node, "type": kinds[0]}
    return node
