"""A tool argument that fails the schema, answered in one sentence an agent can act on.

The SDK validates a call's arguments with pydantic and answers a failure with pydantic's report:
several lines, the model's internal name (``searchArguments``), error codes in brackets and a link to
pydantic's website. An agent needs three things instead: which argument, what it sent, and what the
tool takes. The last is read from the tool's own input schema, so the sentence can never disagree
with what ``tools/list`` told the agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kbseek.text.quoting import shown_value

__all__ = ["argument_refusal", "boolean_for_number", "kinds"]

_KINDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "null": "null",
}


def argument_refusal(tool: str, error: ValidationError, schema: Mapping[str, Any]) -> str:
    """One sentence for the first failing argument of ``error`` (and how many more failed), naming
    what was given and what ``schema`` (the tool's input schema) accepts there."""
    problems = error.errors(include_url=False)
    first = problems[0]
    location = list(first.get("loc", ()))
    name = str(location[0]) if location else "the arguments"
    where = name + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location[1:])
    wanted = accepted(_property(schema, location))
    if first.get("type") == "missing":
        sentence = f"{tool}: the argument {where} is missing; it takes {wanted}"
    else:
        given = first.get("input")
        sentence = f"{tool}: {where} takes {wanted}, not {shown_value(given)} ({_kind_of(given)})"
    others = len({str(p.get("loc", ("",))[0]) for p in problems} - {name})
    if others:
        sentence += f"; {others} more argument{'s' if others > 1 else ''} did not fit either"
    return sentence


def boolean_for_number(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The refusal of ``true``/``false`` sent for a number, which pydantic would read as 1 or 0: JSON
    keeps the two kinds apart, and an agent that sent ``limit: true`` meant something else."""
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return None
    for name, value in arguments.items():
        if isinstance(value, bool) and kinds(properties.get(name, {})) & {"integer", "number"}:
            return (
                f"{tool}: {name} takes {accepted(properties[name])}, not {shown_value(value)} (true or false)"
            )
    return None


def kinds(node: Any) -> set[str]:
    """The JSON types a schema node allows: its ``type`` (one or a list) and its ``anyOf``'s."""
    if not isinstance(node, Mapping):
        return set()
    kind = node.get("type")
    found = {k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)}
    for option in node.get("anyOf", []) if isinstance(node.get("anyOf"), list) else []:
        found |= kinds(option)
    return found


def _property(schema: Mapping[str, Any], location: list[Any]) -> Mapping[str, Any]:
    """The schema of the value at ``location``: a property, an item of a list, a value of an object."""
    node: Any = schema
    for part in location:
        node = _without_null(node)
        if isinstance(part, int):
            node = node.get("items", {}) if isinstance(node, Mapping) else {}
        elif isinstance(node, Mapping) and isinstance(node.get("properties"), Mapping):
            node = node["properties"].get(part, {})
        elif isinstance(node, Mapping) and isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            return {}
    return node if isinstance(node, Mapping) else {}


def _without_null(node: Any) -> Any:
    """``X`` of an optional ``X`` (``anyOf: [X, null]`` or ``type: [x, "null"]``): what a value must be
    when one is given."""
    if isinstance(node, Mapping) and isinstance(node.get("anyOf"), list):
        kept = [n for n in node["anyOf"] if not (isinstance(n, Mapping) and n.get("type") == "null")]
        if len(kept) == 1:
            return kept[0]
    return node


def accepted(node: Mapping[str, Any]) -> str:
    """What a schema node accepts, in words: its kind, its bounds or choices, and "or null" when it may
    be left out as null."""
    node = dict(node)
    nullable = False
    if isinstance(node.get("anyOf"), list):
        kinds = [accepted(n) for n in node["anyOf"] if isinstance(n, Mapping) and n.get("type") != "null"]
        nullable = any(isinstance(n, Mapping) and n.get("type") == "null" for n in node["anyOf"])
        words = " or ".join(dict.fromkeys(kinds)) or "a value"
        return f"{words} (or null to leave it out)" if nullable else words
    kind = node.get("type")
    if isinstance(kind, list):
        nullable = "null" in kind
        kind = next((k for k in kind if k != "null"), None)
    if "enum" in node:
        words = "one of " + ", ".join(repr(v) for v in node["enum"])
    elif kind == "array":
        item = accepted(node.get("items", {})) if isinstance(node.get("items"), Mapping) else "values"
        words = f"a list of {_plural(item)}"
    else:
        words = _KINDS.get(str(kind), "a value")
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None and high is not None:
            words += f" from {low} to {high}"
        elif low is not None:
            words += f" of at least {low}"
        elif high is not None:
            words += f" of at most {high}"
    return f"{words} (or null to leave it out)" if nullable else words


def _plural(words: str) -> str:
    return {"text": "texts", "a whole number": "whole numbers", "a number": "numbers"}.get(words, words)


_SENT: tuple[tuple[type, str], ...] = (
    (bool, "true or false"),  # before int: a bool is an int in Python, never in JSON
    (int, "a whole number"),
    (float, "a number"),
    (str, "text"),
    (list, "a list"),
    (dict, "an object"),
)


def _kind_of(value: object) -> str:
    """The JSON kind of what a caller sent, as the sentence names it."""
    if value is None:
        return "null"
    return next((words for kind, words in _SENT if isinstance(value, kind)), type(value).__name__)
