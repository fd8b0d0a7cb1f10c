"""``SearchFilters``: what a search is narrowed to, as one value from the surface to the store.

A search's narrowing travels as one value: built and validated once where the request arrives
(:func:`parse_filters`, called by ``facade/shaping.py``), read by both legs of the pipeline, and
translated by each store to its own SQL (``store/sqlite/store.py``, ``store/postgres/store.py``). A filter added
later is a field here, its parsing here, and one clause per store.

Both stores must return the same documents for the same filters, so everything that could differ
between two SQL dialects is decided here in Python: front-matter values are stored already folded
(:func:`field_rows`), a glob is kept in one canonical form that both engines match alike
(``kbseek.globs``), and dates are compared as ``YYYY-MM-DD`` text.

Every value is bounded here, before any store sees it: a caller's text is matched against every
candidate document, so its length is capped (:data:`MAX_TEXT_CHARS`, the glob caps) and a longer
one is refused in one sentence rather than left to an engine's own limit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import date
from typing import Any

from kbseek.dates import parse_bound
from kbseek.errors import InvalidArgument
from kbseek.folding import ascii_lower
from kbseek.globs import keep_glob
from kbseek.text.quoting import bounded, shown_value

MAX_FIELD_VALUES = 64
"""Values one front-matter field may store per document (a list longer than this is cut): enough for
any real list of owners or tags, and a bound on what one file can add to the index."""
MAX_VALUE_CHARS = 200
"""Longer front-matter strings are prose, not a value anyone filters on; they are not stored."""
MAX_CONDITIONS = 16
"""Conditions one search may carry per kind (fields, globs, tags): each is a clause in every leg."""
MAX_TEXT_CHARS = 1024
"""The longest tag, type or ``where`` field name a filter may name: far past any real one, and a
bound on each comparison."""

SORTS = ("relevance", "newest")


def fold(text: str) -> str:
    """Text as filters compare it: blanks collapsed, ASCII letters lower-cased (as SQLite's ``lower``
    does, so the stores agree), NUL (which PostgreSQL text cannot hold) replaced."""
    return ascii_lower(" ".join(text.split())).replace("\x00", "\ufffd")


def field_value(value: Any) -> str | None:
    """A front-matter scalar as stored and compared: ``true``/``false``, a number in its shortest
    form (``3`` and ``3.0`` alike), text folded; ``None`` for what is not a filterable scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        text = fold(value)
        if not text or len(text) > MAX_VALUE_CHARS:
            return None
        number = _number(text)
        return number if number is not None else text
    return None


def _number(text: str) -> str | None:
    """A number written as text (``--where priority=2`` from a shell) in the form a YAML number takes."""
    if not re.fullmatch(r"[+-]?[0-9]+(\.[0-9]+)?", text):  # ASCII digits: "٥" stays text
        return None
    return field_value(float(text)) if "." in text else str(int(text))


def field_name(name: object) -> str:
    return fold(str(name))


def field_rows(frontmatter: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (field, value) pairs a document's front matter is filtered by: each top-level scalar, and
    each scalar item of a top-level list; nested mappings are not filterable and are left out."""
    rows: dict[tuple[str, str], None] = {}
    for key, raw in frontmatter.items():
        name = field_name(key)
        if not name:
            continue
        items = raw if isinstance(raw, list) else [raw]
        kept = 0
        for item in items:
            value = field_value(item)
            if value is not None and (name, value) not in rows:
                rows[(name, value)] = None
                kept += 1
                if kept >= MAX_FIELD_VALUES:
                    break
    return list(rows)


@dataclass(frozen=True)
class FieldCondition:
    """One ``where`` entry: the field holds one of ``values``, or (``values`` empty) exists or not."""

    field: str
    values: tuple[str, ...] = ()
    exists: bool = True

    def describe(self) -> str:
        if not self.values:
            return f"{self.field} exists" if self.exists else f"{self.field} absent"
        if len(self.values) == 1:
            return f"{self.field}={self.values[0]}"
        return f"{self.field} in ({', '.join(self.values)})"


_DESCRIBED_FIRST = ("path_prefix", "path_globs", "types", "tags", "tags_any", "after", "before")
"""The order a note names the filters in (where they narrow, then what, then when); a filter not
listed is named after them, and the ``where`` conditions last."""


@dataclass(frozen=True)
class SearchFilters:
    """The conditions a hit's document must meet, AND-ed; the default narrows nothing.

    ``path_prefix`` is root-relative, compared literally with ASCII letters folded, as given (the
    facade has cleaned it); ``tags`` must all be on the document and one of ``tags_any`` must be,
    compared folded; ``path_globs``: the path matches one of them (``kbseek.globs``); ``types``:
    the document's parser is one of them; ``after``/``before``: its date is on or after / on or
    before that day; ``where``: each condition holds on its front matter.
    """

    path_prefix: str | None = None
    tags: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    path_globs: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    after: str | None = None
    before: str | None = None
    where: tuple[FieldCondition, ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether any condition is set (no filter: the store reads no document table)."""
        return any(getattr(self, f.name) for f in fields(self))

    def describe(self) -> str:
        """The filters as a person would read them back, for a note that names what matched nothing."""
        parts: list[str] = []
        named = [f.name for f in fields(self) if f.name not in (*_DESCRIBED_FIRST, "where")]
        for name in (*_DESCRIBED_FIRST, *named):
            value = getattr(self, name)
            if value:
                parts.append(f"{name}={value if isinstance(value, str) else ', '.join(value)}")
        parts += [f"where {c.describe()}" for c in self.where]
        return "; ".join(parts)


NO_FILTERS = SearchFilters()
"""The search over the whole knowledge base."""


# -- reading what a caller sent ----------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """What a caller asks a search to be narrowed to, as given: the library's argument, which every
    surface (MCP, CLI, HTTP, the page) fills from its own arguments. Nothing is checked here; the
    knowledge base reads it once (:func:`parse_filters`) and refuses what it cannot use.

    ``after``/``before``: a day (``date``, ``"2026-03-01"``) or an age (``"7d"``, ``"2w"``, ``"1y"``),
    both included. ``where``: front-matter field → value, → list of values (any one), or →
    ``{"exists": bool}``. ``tags``: all of them; ``tags_any``: one of them. ``path_globs``: one of
    them (``runbooks/**``, ``*.pdf``). ``types``: parser names (``md``, ``pdf``, ``docx`` …).
    """

    path_prefix: str | None = None
    tags: Sequence[str] = ()
    tags_any: Sequence[str] = ()
    path_globs: Sequence[str] = ()
    types: Sequence[str] = ()
    after: str | date | None = None
    before: str | date | None = None
    where: Mapping[str, Any] | None = None

    def read(
        self, *, path_prefix: str | None, known_types: Sequence[str] = (), today: date | None = None
    ) -> SearchFilters:
        """These filters checked once (:func:`parse_filters`), with ``path_prefix`` as the caller has
        cleaned it (a path is read against the root, which this module does not know)."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        return parse_filters(**{**given, "path_prefix": path_prefix}, known_types=known_types, today=today)


def parse_filters(
    *,
    path_prefix: str | None = None,
    tags: Iterable[str] | None = None,
    tags_any: Iterable[str] | None = None,
    path_globs: Iterable[str] | None = None,
    types: Iterable[str] | None = None,
    after: object = None,
    before: object = None,
    where: Mapping[str, Any] | None = None,
    known_types: Sequence[str] = (),
    today: date | None = None,
) -> SearchFilters:
    """Filters as sent by any surface, checked once: a malformed date, an impossible range, an unknown
    type or an unreadable condition is an :class:`InvalidArgument` that says what is accepted.

    ``path_prefix`` is taken as already cleaned (``shaping.clean_prefix``); ``known_types`` are the
    parser names a ``types`` entry may take (``md``, ``pdf`` …; a leading dot is allowed).
    """
    first, last = parse_bound("after", after, today=today), parse_bound("before", before, today=today)
    if first and last and first > last:
        raise InvalidArgument(
            f"after={first} is later than before={last}: no day is both; after is the earliest day "
            "kept and before the latest, each included"
        )
    return SearchFilters(
        path_prefix=path_prefix,
        tags=_texts("tags", tags),
        tags_any=_texts("tags_any", tags_any),
        path_globs=tuple(dict.fromkeys(keep_glob(g) for g in _texts("path_globs", path_globs))),
        types=_types(types, known_types),
        after=first,
        before=last,
        where=_conditions(where),
    )


def _texts(name: str, values: Iterable[str] | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a list of strings, not one holding {bounded(repr(value))}")
        if name != "path_globs" and len(value) > MAX_TEXT_CHARS:
            raise InvalidArgument(
                f"{name} entry {bounded(value)!r} is {len(value)} characters long; at most "
                f"{MAX_TEXT_CHARS} are accepted"
            )
        if value.strip():
            out.append(value.strip())
    out = list(dict.fromkeys(out))
    if len(out) > MAX_CONDITIONS:
        raise InvalidArgument(f"{name} has {len(out)} entries; at most {MAX_CONDITIONS} are accepted")
    return tuple(out)


def _types(values: Iterable[str] | None, known: Sequence[str]) -> tuple[str, ...]:
    """Parser names, each as typed or with one leading dot (``.pdf``); an unknown one is quoted as
    the caller wrote it."""
    typed = {(t[1:] if t.startswith(".") else t).lower(): t for t in _texts("types", values)}
    unknown = [t for name, t in typed.items() if known and name not in known]
    if unknown:
        raise InvalidArgument(
            f"types: {', '.join(repr(bounded(t, 80)) for t in unknown)} is not a file type kbseek reads; "
            f"accepted: {', '.join(known)}"
        )
    return tuple(typed)


def _conditions(where: Mapping[str, Any] | None) -> tuple[FieldCondition, ...]:
    """The ``where`` conditions, AND-ed. Two keys that fold to one field (``Topic``, ``topic``) are two
    conditions that must both hold, never one silently replacing the other."""
    if where is None:
        return ()
    if not isinstance(where, Mapping):
        raise InvalidArgument(
            'where must be an object of front-matter field to value, e.g. {"status": "accepted"}'
        )
    if len(where) > MAX_CONDITIONS:
        raise InvalidArgument(f"where has {len(where)} fields; at most {MAX_CONDITIONS} are accepted")
    out: list[FieldCondition] = []
    for key, wanted in where.items():
        text = str(key)
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidArgument(
                f"where names the field {bounded(text)!r}, {len(text)} characters long; at most "
                f"{MAX_TEXT_CHARS} are accepted"
            )
        name = field_name(text)
        if not name:
            raise InvalidArgument("where has an empty field name")
        out.append(_condition(name, text, wanted))
    return tuple(dict.fromkeys(out))


WHERE_FORMS = (
    'a value ("accepted", 3, true), a list of values meaning any one of them (["open", "triage"]), '
    'or {"exists": true} / {"exists": false}'
)


def _condition(name: str, key: str, wanted: Any) -> FieldCondition:
    shown = bounded(key, 80)
    if isinstance(wanted, Mapping):
        if set(wanted) == {"exists"} and isinstance(wanted["exists"], bool):
            return FieldCondition(name, (), wanted["exists"])
        raise InvalidArgument(
            f"where[{shown!r}] = {shown_value(wanted)} is not understood: expected {WHERE_FORMS}"
        )
    items = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
    if not items:
        raise InvalidArgument(
            f"where[{shown!r}] is an empty list: no value could match; expected {WHERE_FORMS}"
        )
    if len(items) > MAX_FIELD_VALUES:
        raise InvalidArgument(f"where[{shown!r}] lists {len(items)} values; at most {MAX_FIELD_VALUES}")
    values: list[str] = []
    for item in items:
        value = field_value(item)
        if value is None or isinstance(item, (Mapping, list, tuple)):
            raise InvalidArgument(
                f"where[{shown!r}] holds {shown_value(item)}, which no field can equal: expected {WHERE_FORMS}"
            )
        values.append(value)
    return FieldCondition(name, tuple(dict.fromkeys(values)))


def where_from_text(entries: Iterable[str]) -> dict[str, Any]:
    """``where`` from ``field=value`` entries, as typed on a command line or in a URL: a field given
    twice takes any of its values; ``field`` alone means it exists, ``!field`` that it does not.

    Entries naming one field (ASCII case aside) combine, and all must hold: ``topic`` beside
    ``topic=ops`` is ``topic=ops``; a field both required and ``!``-excluded is refused, since no
    document could pass and a later entry must never quietly replace an earlier one.
    """
    wanted: dict[str, tuple[str, list[str] | None, bool]] = {}  # folded → (as typed, values, exists)
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        if "=" in entry:
            key, value = (part.strip() for part in entry.split("=", 1))
            if key.startswith("!"):
                raise InvalidArgument(
                    f"where {bounded(entry, 80)!r}: a value cannot be negated; !{bounded(key[1:], 80)} alone "
                    "keeps the documents without that field"
                )
            values: list[str] | None = [value]
            exists = True
        else:
            exists = not entry.startswith("!")
            key, values = entry.lstrip("!").strip(), None
        folded = field_name(key)
        if folded not in wanted:
            wanted[folded] = (key, values, exists)
            continue
        typed, before, existed = wanted[folded]
        if existed != exists:
            raise InvalidArgument(
                f"where gives the field {bounded(typed, 80)!r} both as required and as absent (!): no "
                "document can pass both; keep one of the two"
            )
        if values is not None:
            before = [*(before or []), *values]
        wanted[folded] = (typed, before, existed)
    return {
        typed: {"exists": exists} if values is None else values for typed, values, exists in wanted.values()
    }
