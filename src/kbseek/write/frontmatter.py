"""Front-matter fields set by an agent: one block, the user's keys, order, formatting and comments
kept, the body after it byte-identical.

A second block in front of the user's own hid their fields in another server; here there is only
ever one. A changed key is rewritten where it stands, a new key goes at the end of the block, and
``None`` deletes a key. The result is read back with kbseek's own front-matter reader and must give
the old fields with the changes, in order, and the same body, or the edit is refused
(:class:`~kbseek.errors.InvalidArgument`) rather than guessed at.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kbseek.errors import InvalidArgument, KbBug
from kbseek.ingest.chunker import LineIndex
from kbseek.ingest.parsers.markdown import read_frontmatter
from kbseek.write.edits import body_start
from kbseek.write.encoding import NEWLINE, SPACE, WHITE, line_start, newline_of


class _Dumper(yaml.SafeDumper):
    """Writes a string with a line break as one double-quoted line (``"a\\nb"``), so every value
    written stays on its key's line and no line of it can be read as the block's closing ``---``."""


_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_Dumper.add_representer(
    str,
    lambda dumper, data: dumper.represent_scalar(
        "tag:yaml.org,2002:str", data, style='"' if _BREAKS.intersection(data) else None
    ),
)


def _yaml(value: Any) -> str:
    """``value`` as YAML on one line: a scalar, or a flow list or mapping (``[a, 'b: c']``)."""
    written = yaml.dump(
        value, Dumper=_Dumper, default_flow_style=True, allow_unicode=True, width=1 << 30, sort_keys=False
    )
    return written.removesuffix("\n...\n").removesuffix("\n")


@dataclass(frozen=True)
class _Entry:
    """One top-level field of the block, as offsets into the YAML between the ``---`` lines."""

    name: str | None
    """The field's name as the reader names it; ``None`` for a key that is not a scalar."""
    key: int
    colon: int | None
    """The ``:`` after the key, or ``None`` when it is not on the key's line (``? key``)."""
    value: int
    end: int
    """After the value's last character: what follows on that line (a comment) is not the value."""
    block_list: str | None
    """For a value written as a block list, the indentation of its ``-`` lines."""
    anchored: bool


def set_frontmatter(text: str, fields: Mapping[str, object]) -> str:
    """The note's front matter with ``fields`` set (``None`` deletes one), in its one block.

    A field already there is rewritten where it is (its key as written, a comment after a one-line
    value kept; a list written as ``-`` lines stays so); a new field is added at the end of the
    block; every other line of the block, comments and formatting included, and the body after the
    block are unchanged. A note without front matter gets a block at the top. Values are written as
    one line of YAML, quoted where needed. Front matter that is not a valid YAML mapping is refused
    rather than guessed at, and so is the result unless the reader kbseek indexes with reads exactly
    the fields asked for from it.
    """
    nl, changes = newline_of(text), _fields(fields)
    lines = LineIndex(text)
    meta = read_frontmatter(text, lines)
    if not meta.body_line:
        if text[: lines.start_of(1)].rstrip(WHITE) == "---" and lines.count > 1:
            raise InvalidArgument(
                "the note starts with '---' but no line closes it, so kbseek reads no front matter in it: "
                "close the block with a '---' line first"
            )
        added = "".join(f"{_yaml(k)}: {_yaml(v)}{nl}" for k, v in changes.items() if v is not None)
        return _verified(text, f"---{nl}{added}---{nl}{text}" if added else text, {}, changes)
    start, end = lines.start_of(1), lines.start_of(meta.body_line - 1)
    source = text[start:end]
    try:
        data = yaml.safe_load(source)
        events = list(yaml.parse(source, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError):
        data = events = None
    top = events[2] if events and len(events) > 2 else None
    if (
        events is None
        or not isinstance(data, dict | None)
        or not isinstance(top, yaml.MappingStartEvent | None)
    ):
        problem = meta.warnings[0] if meta.warnings else "frontmatter is not a mapping of fields"
        raise InvalidArgument(
            f"the note's {problem}: fix it by hand first, since set_frontmatter does not guess"
        )
    if isinstance(top, yaml.MappingStartEvent) and top.flow_style:
        raise InvalidArgument(
            "the note's front matter is one flow mapping ({...}), which set_frontmatter does not rewrite: "
            "write it as one 'key: value' line per field first"
        )
    entries = _entries(source, events)
    indent = source[line_start(source, entries[0].key) : entries[0].key] if entries else ""
    edits: list[tuple[int, int, str]] = []
    added = ""
    for name, value in changes.items():
        mine = [e for e in entries if e.name == name]
        if not mine:
            added += f"{indent}{_yaml(name)}: {_yaml(value)}{nl}" if value is not None else ""
            continue
        odd = {
            "more than once": len(mine) > 1,
            "with a YAML anchor": mine[0].anchored,
            "as '? key'": mine[0].colon is None,
        }
        if why := next((why for why, found in odd.items() if found), None):
            raise InvalidArgument(f"the note's front matter has the field {name!r} {why}: change it by hand")
        edits.append(_rewrite(source, mine[0], value, nl))
    for at, stop, new in sorted(edits, reverse=True):
        source = source[:at] + new + source[stop:]
    return _verified(text, text[:start] + source + added + text[end:], data or {}, changes)


def _fields(fields: object) -> dict[str, Any]:
    if not isinstance(fields, Mapping) or not fields:
        raise InvalidArgument("fields must map at least one field name to its value (null deletes the field)")
    checked: dict[str, Any] = {}
    for name, value in fields.items():
        if not isinstance(name, str) or not name.strip() or not name.isprintable():
            raise InvalidArgument(f"a field name must be text on one line, not {name!r}")
        checked[name] = None if value is None else _value(value, name, 0)
    return checked


def _value(value: object, name: str, depth: int) -> Any:
    if isinstance(value, (str, bool, int, dt.date)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    if depth < 20 and isinstance(value, (list, tuple)):
        return [None if v is None else _value(v, name, depth + 1) for v in value]
    if depth < 20 and isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: None if v is None else _value(v, name, depth + 1) for k, v in value.items()}
    raise InvalidArgument(
        f"field {name!r} cannot hold {value!r}: pass text, a number, true or false, a date, or a list or mapping of those"
    )


def _entries(source: str, events: list[yaml.Event]) -> list[_Entry]:
    """The top-level fields of a block mapping, from the parser's events and their marks."""
    entries: list[_Entry] = []
    at = 3
    while at < len(events) and not isinstance(events[at], yaml.MappingEndEvent):
        key = events[at]
        after_key, key_end, key_anchored = _node(source, events, at)
        after_value, end, anchored = _node(source, events, after_key)
        value = events[after_key]
        colon = key_end + len(source[key_end:]) - len(source[key_end:].lstrip(SPACE))
        empty = isinstance(value, yaml.ScalarEvent) and value.value == "" and value.style is None
        block = isinstance(value, yaml.SequenceStartEvent) and not value.flow_style
        value_line = line_start(source, _at(value))
        entries.append(
            _Entry(
                name=_name(key) if isinstance(key, yaml.ScalarEvent) else None,
                key=_at(key),
                colon=colon if source[colon : colon + 1] == ":" else None,
                value=_at(value),
                end=colon + 1 if empty and source[colon : colon + 1] == ":" else end,
                block_list=source[value_line : _at(value)] if block else None,
                anchored=key_anchored or anchored,
            )
        )
        at = after_value
    return entries


def _node(source: str, events: list[yaml.Event], at: int) -> tuple[int, int, bool]:
    """Past the node that starts at event ``at``: the next event, where its text ends, and whether
    it holds an anchor. A block collection's end mark lies past comments after it, so its end is
    its last scalar's, alias's or flow collection's; a block scalar's is trimmed of blank lines."""
    depth, end, anchored = 0, _at(events[at]), False
    flows: list[bool] = []
    while True:
        event = events[at]
        at += 1
        anchored = anchored or getattr(event, "anchor", None) is not None
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            flows.append(bool(event.flow_style))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            if flows.pop():
                end = max(end, _at(event, end=True))
        elif isinstance(event, yaml.ScalarEvent):
            stop = _at(event, end=True)
            if event.style in ("|", ">"):
                stop = _at(event) + len(source[_at(event) : stop].rstrip(WHITE))
            end = max(end, stop)
        else:
            end = max(end, _at(event, end=True))
        if depth == 0:
            return at, end, anchored


def _at(event: yaml.Event, *, end: bool = False) -> int:
    mark = event.end_mark if end else event.start_mark
    return mark.index if mark is not None else 0


def _name(key: yaml.ScalarEvent) -> str:
    """A key's name as the reader gives it: what YAML makes of it, as text."""
    loader = yaml.SafeLoader("")
    tag = key.tag if key.tag not in (None, "!") else loader.resolve(yaml.ScalarNode, key.value, key.implicit)  # type: ignore[no-untyped-call]
    return _field(loader.construct_object(yaml.ScalarNode(tag, key.value, style=key.style)))


def _rewrite(source: str, entry: _Entry, value: Any, nl: str) -> tuple[int, int, str]:
    """The replacement that sets ``entry`` to ``value``, or deletes its lines for ``None``."""
    if value is None:
        stop = NEWLINE.search(source, entry.end)
        return line_start(source, entry.key), stop.end() if stop else len(source), ""
    assert entry.colon is not None
    same_line = not NEWLINE.search(source, entry.colon, entry.value)
    scalars = isinstance(value, list) and value and not any(isinstance(v, (list, dict)) for v in value)
    if entry.block_list is not None and scalars:
        first = line_start(source, entry.value)
        return first, entry.end, nl.join(f"{entry.block_list}- {_yaml(v)}" for v in value)
    if same_line and entry.end > entry.value and entry.end > entry.colon + 1:
        return entry.value, entry.end, _yaml(value)
    return entry.colon + 1, entry.end, " " + _yaml(value)


def _verified(old: str, new: str, data: dict[Any, Any], changes: dict[str, Any]) -> str:
    """``new`` once the reader reads in it the fields of ``old`` with ``changes`` made, in order,
    and the same body; refused otherwise (anchors, aliases and merge keys can tie fields together)."""
    known = {_field(key) for key in data}
    expected = {
        k: changes.get(_field(k), v)
        for k, v in data.items()
        if _field(k) not in changes or changes[_field(k)] is not None
    }
    expected |= {k: v for k, v in changes.items() if k not in known and v is not None}
    reference = "---\n" + yaml.dump(expected, Dumper=_Dumper, allow_unicode=True, sort_keys=False) + "---\n"
    want = read_frontmatter(reference, LineIndex(reference))
    got = read_frontmatter(new, LineIndex(new))
    if (
        json.dumps(list(got.fields.items())) != json.dumps(list(want.fields.items()))
        or got.warnings != want.warnings
    ):
        raise InvalidArgument(
            "the note's front matter would not read back as asked (YAML anchors, aliases or merge keys "
            "tie its fields together?), so nothing was changed: edit it by hand"
        )
    if new[body_start(new) :] != old[body_start(old) :]:
        raise KbBug("set_frontmatter changed the body of a note")
    return new


def _field(key: Any) -> str:
    """A key as the reader names a field (``markdown._scalar_text``)."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return key.isoformat() if isinstance(key, dt.date) else str(key)
