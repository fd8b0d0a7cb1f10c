"""Path globs: the form a glob is kept in, the regular expression PostgreSQL reads, and a matcher
whose time is linear in the path's length whatever the glob.

A glob is a caller's text run against every candidate path, so its cost must not depend on how it
was written. A backtracking engine (Python's ``re``) takes time exponential in the number of
wildcards on a path that almost matches: ``**`` twelve times before ``k*/failover.md`` took 38 s
and held the interpreter lock the whole time, stalling every other request. Three things keep a
glob cheap here:

- :func:`keep_glob` writes a glob in one canonical form: a run of two or more ``*`` is ``**``,
  repeated ``**/`` are one, so a run of stars costs what one does;
- :func:`keep_glob` refuses a glob longer than :data:`MAX_GLOB_CHARS` or with more than
  :data:`MAX_GLOB_WILDCARDS` wildcards: no path needs more, and each is a clause in a query;
- :class:`GlobMatcher` (the SQLite store's matcher) simulates the glob's automaton on all of its
  states at once, as bits of one integer: each character of the path costs a few integer
  operations, never a retry. PostgreSQL reads :func:`glob_regex` with its own engine, which does
  not backtrack on these expressions.

Paths and globs are compared in both Unicode normal forms: a name typed on one system (NFC) finds a
file named on another (macOS writes NFD), so each glob is matched as typed, in NFC and in NFD.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from kbseek.errors import InvalidArgument
from kbseek.folding import ascii_lower
from kbseek.text.quoting import bounded

MAX_GLOB_CHARS = 512
"""The longest glob accepted: a path pattern, not a document; longer ones are refused."""
MAX_GLOB_WILDCARDS = 32
"""Wildcards (``*``, ``**``, ``?``) one glob may hold, once runs of stars are collapsed."""

GLOB_FORMS = "e.g. runbooks/**/*.md or *.pdf"


def keep_glob(pattern: str) -> str:
    """A glob as kept and compared: separators as ``/``, a leading ``/`` or ``./`` dropped, ASCII
    letters folded (paths compare folded, as prefixes do), and runs of stars collapsed. It is not
    normalised: a name is matched as typed too (:func:`path_forms`), so a character NFC replaces
    (``豈`` U+F900, ``Ω`` U+2126) still finds a file named with it.

    Raises :class:`InvalidArgument` for an empty glob, one holding NUL, or one over the caps.
    """
    if len(pattern) > MAX_GLOB_CHARS * 4:  # not worth cleaning: far past the cap whatever it holds
        raise InvalidArgument(_too_long(pattern))
    cleaned = ascii_lower(pattern.replace("\\", "/").lstrip("/"))
    while cleaned.startswith("./"):
        cleaned = cleaned[2:].lstrip("/")
    if not cleaned or "\x00" in cleaned:
        raise InvalidArgument(f"path_globs entry {bounded(pattern)!r} is empty; {GLOB_FORMS}")
    kept = _collapsed(cleaned)
    if len(kept) > MAX_GLOB_CHARS:
        raise InvalidArgument(_too_long(pattern))
    wildcards = sum(1 for t in _tokens(kept) if t != _LITERAL)
    if wildcards > MAX_GLOB_WILDCARDS:
        raise InvalidArgument(
            f"path_globs entry {bounded(pattern)!r} holds {wildcards} wildcards; at most "
            f"{MAX_GLOB_WILDCARDS} are accepted ({GLOB_FORMS})"
        )
    return kept


def _too_long(pattern: str) -> str:
    return (
        f"path_globs entry {bounded(pattern)!r} is {len(pattern)} characters long; at most "
        f"{MAX_GLOB_CHARS} are accepted ({GLOB_FORMS})"
    )


def _collapsed(glob: str) -> str:
    """Runs of ``*`` as ``**`` or ``*``, and ``**/`` repeated (or followed by ``**``) as one: the
    same paths match, and no run of wildcards can multiply a matcher's work."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob[i] != "*":
            out.append(glob[i])
            i += 1
            continue
        j = i
        while j < len(glob) and glob[j] == "*":
            j += 1
        out.append("**" if j - i >= 2 else "*")
        i = j
    text = "".join(out)
    rooted = "/" in text.rstrip("/")  # a glob without / matches a name in any folder: keep which
    while True:  # each pass shortens the text, so this ends
        shorter = text
        for longer, short in (("**/**/", "**/"), ("**/**", "**")):
            candidate = shorter.replace(longer, short)
            if ("/" in candidate.rstrip("/")) == rooted:
                shorter = candidate
        if shorter == text:
            return text
        text = shorter


# -- tokens --------------------------------------------------------------------------------------------

_LITERAL, _ONE, _STAR, _ANY, _DIRS = "lit", "?", "*", "**", "**/"

MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u3099\u309a\u1160-\u11ff"
"""The combining characters a decomposed (NFD) name puts after a letter: Latin accents, the kana
voicing marks, a Hangul syllable's vowel and final jamo. ``?`` takes them with its character."""
_MARK = re.compile(f"[{MARKS}]")


def _tokens(glob: str) -> list[str]:
    """The kept glob as wildcard tokens and single literal characters, as :func:`glob_regex` and the
    matcher read it: ``**/`` (any folders, or none), ``**`` (anything), ``*`` (within a folder),
    ``?`` (one character but ``/``); literal characters are marked ``_LITERAL`` here."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append(_DIRS)
            i += 3
        elif glob.startswith("**", i):
            out.append(_ANY)
            i += 2
        elif glob[i] in "*?":
            out.append(glob[i])
            i += 1
        else:
            out.append(_LITERAL)
            i += 1
    return out


def _parts(glob: str) -> list[tuple[str, str]]:
    """``(kind, literal character)`` for each token of the glob as matched: a glob without ``/``
    matches a file name in any folder (a leading ``**/``), one ending in ``/`` everything under it."""
    if "/" not in glob.rstrip("/"):
        glob = "**/" + glob
    out: list[tuple[str, str]] = []
    i = 0
    for kind in _tokens(glob):
        out.append((kind, glob[i] if kind == _LITERAL else ""))
        i += len(kind) if kind != _LITERAL else 1
    if glob.endswith("/"):
        out.append((_ANY, ""))
    return out


def glob_regex(glob: str) -> str:
    """The anchored regular expression a kept glob means, matched against a path with ASCII letters
    folded. ``*`` and ``?`` stay within one folder, ``**`` crosses folders (``a/**/b`` also matches
    ``a/b``), and a glob without ``/`` matches a file name in any folder (as in ``.gitignore``).

    Only ``^ $ . * ( ) | [^/]`` and backslash escapes of punctuation are produced, which Python's
    ``re`` and PostgreSQL's regular expressions read alike. ``?`` is one character with the marks
    that follow it (:data:`MARKS`), so it matches ``ガ`` whether the name was written composed or not.
    """
    pieces = {_DIRS: "(.*/)?", _ANY: ".*", _STAR: "[^/]*", _ONE: f"[^/{MARKS}][{MARKS}]*"}
    out: list[str] = ["^"]
    for kind, char in _parts(glob):
        if kind != _LITERAL:
            out.append(pieces[kind])
        elif not char.isalnum() and char.isascii() and char not in "/_ -":
            out.append("\\" + char)
        else:
            out.append(char)
    out.append("$")
    return "".join(out)


def path_forms(text: str) -> tuple[str, ...]:
    """A path, prefix or glob as typed, then in NFC and in NFD, each once: a store's paths are as the
    file system named them, in either form, and a filter must find both (and the name as typed,
    where normalising would replace one of its characters)."""
    return tuple(
        dict.fromkeys((text, unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text)))
    )


# -- the matcher ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Automaton:
    """One glob form as bit masks over its states (bit ``i``: the first ``i`` tokens are matched).

    For a character ``c`` of the path: the states whose token takes ``c`` and moves on
    (``advance``) shift one bit up; the states whose token takes ``c`` and stays (a star's loop,
    ``loop``) keep their bit; then the states a star may skip add the bits after them (``skip1``,
    and ``skip2`` for ``**/``, which may skip its two states at once). Each character costs a few
    operations on one integer however many states are live: the time is linear in the path.
    """

    advance: dict[str, int]
    """By literal character of the glob, :data:`_MARK_KEY` for a combining mark it does not name,
    :data:`_OTHER_KEY` for any other character."""
    loop: dict[str, int]
    skip1: int
    skip2: int
    accept: int

    def closure(self, states: int) -> int:
        while True:
            wider = states | ((states & self.skip1) << 1) | ((states & self.skip2) << 2)
            if wider == states:
                return states
            states = wider

    def step(self, states: int, char: str) -> int:
        key = char if char in self.advance else _MARK_KEY if _MARK.match(char) else _OTHER_KEY
        advance, loop = self.advance[key], self.loop[key]
        return self.closure(((states & advance) << 1) | (states & loop))


STEPS_KEPT = 4096
"""Steps (live states, character) a matcher remembers: a path of the same folder is then read at a
dictionary lookup a character. Bounded, so a glob with many live-state sets costs memory no more."""


class _Form:
    """One normal form of a glob: its automaton, and the steps already taken (a lazily built DFA)."""

    __slots__ = ("_automaton", "_start", "_steps")

    def __init__(self, glob: str) -> None:
        self._automaton = _automaton(glob)
        self._start = self._automaton.closure(1)
        self._steps: dict[tuple[int, str], int] = {}

    def matches(self, path: str) -> bool:
        states, steps, automaton = self._start, self._steps, self._automaton
        for char in path:
            key = (states, char)
            after = steps.get(key)
            if after is None:
                after = automaton.step(states, char)
                if len(steps) < STEPS_KEPT:
                    steps[key] = after
            if not after:
                return False
            states = after
        return bool(states & automaton.accept)


_MARK_KEY, _OTHER_KEY = "mark", ""
"""The keys of the masks for a combining mark the glob does not name, and for any other character
the glob does not name (neither is one character, so neither is a literal's key)."""


def _automaton(glob: str) -> _Automaton:
    """The states of one glob form: a literal and ``*`` one state each, ``?`` two (its character,
    then the marks that follow it), ``**`` one, ``**/`` two (its entry, which may skip or enter, and
    its loop, which leaves on a ``/``)."""
    literals: set[str] = {"/"}
    states: list[tuple[str, str]] = []  # (kind, literal) per state
    for kind, char in _parts(glob):
        if kind == _DIRS:
            states += [("dirs-entry", ""), ("dirs-loop", "")]
        elif kind == _ONE:
            states += [(_ONE, ""), ("marks", "")]
        else:
            states.append((kind, char))
            if kind == _LITERAL:
                literals.add(char)

    def masks(char: str) -> tuple[int, int]:
        """(advance, loop) for ``char``: a literal, :data:`_MARK_KEY` or :data:`_OTHER_KEY`."""
        mark = char == _MARK_KEY or (len(char) == 1 and _MARK.match(char) is not None)
        advance = loop = 0
        for i, (kind, literal) in enumerate(states):
            bit = 1 << i
            takes = char != "/"  # what ?, * and a literal other than / take
            if (kind == _LITERAL and char == literal) or (kind == _ONE and takes and not mark):
                advance |= bit
            elif (kind == _STAR and takes) or kind == _ANY or (kind == "marks" and mark):
                loop |= bit
            elif kind == "dirs-loop":
                loop |= bit
                if char == "/":
                    advance |= bit
        return advance, loop

    skippable = (_STAR, _ANY, "dirs-entry", "marks")
    skip1 = sum(1 << i for i, (kind, _) in enumerate(states) if kind in skippable)
    skip2 = sum(1 << i for i, (kind, _) in enumerate(states) if kind == "dirs-entry")
    by_char = {c: masks(c) for c in (*literals, _MARK_KEY, _OTHER_KEY)}
    return _Automaton(
        advance={c: m[0] for c, m in by_char.items()},
        loop={c: m[1] for c, m in by_char.items()},
        skip1=skip1,
        skip2=skip2,
        accept=1 << len(states),
    )


REGEX_WILDCARDS = 2
"""Globs with at most this many unbounded wildcards (``*``, ``**``, ``**/``, counting the ``**/`` a
glob without ``/`` starts with) are matched by Python's ``re``, ten times faster than the automaton
on a path: a backtracking engine tries at most every pair of positions for two of them, which for a
path is a few thousand steps. More wildcards, and the automaton's linear time is taken instead."""
REGEX_CHARS = 64
"""…and only when the glob is at most this long, so that each of those tries is short too."""


class GlobMatcher:
    """Whether a path (ASCII letters folded) matches a kept glob, in either Unicode normal form, in
    time linear in the path's length: the matcher the SQLite store runs on each candidate path."""

    __slots__ = ("_forms",)

    def __init__(self, glob: str) -> None:
        unbounded = sum(1 for kind, _ in _parts(glob) if kind in (_STAR, _ANY, _DIRS))
        if unbounded <= REGEX_WILDCARDS and len(glob) <= REGEX_CHARS:
            self._forms: tuple[Callable[[str], object], ...] = tuple(
                re.compile(glob_regex(form), re.DOTALL).search for form in path_forms(glob)
            )
        else:
            self._forms = tuple(_Form(form).matches for form in path_forms(glob))

    def matches(self, path: str) -> bool:
        return any(form(path) for form in self._forms)
