"""The edits an agent may make to a note: text in, text out, everything it does not touch unchanged.

Targeted edits rather than whole-note replacement, because the text around the edit is a person's:
each function changes one region and leaves every other character where it was. What a heading, a
section and front matter are is kbseek's own reading (the Markdown parser and the front matter
reader the index uses), so the section an agent names from a search hit is the section edited.

Joints follow one rule. The caller's text is a *block*: its line endings become the note's (the
one most of its lines have), and blank lines at either end are dropped. A block goes on lines of
its own with one blank line between it and the note's text on either side; blank lines already
there count and are kept, and none is added where none is needed (at the start of the note or
straight after its front matter). The note ends with a line ending after the edit if it did before
(or was empty).

Every edit is checked before it is returned, and refused (:class:`~kbseek.errors.InvalidArgument`,
one sentence on what was wrong and what to do) rather than returned wrong: its front matter stays
the first thing in the note and reads as before (so nothing an agent adds can become a second
block hiding the user's fields), and the headings outside the edited region stay headings (so an
unclosed code fence cannot swallow the rest of the note).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from kbseek.documents import HEADING_SEPARATOR
from kbseek.errors import InvalidArgument
from kbseek.ingest.chunker import BlockKind, LineIndex
from kbseek.ingest.parsers.markdown import MarkdownParser, first_heading, read_frontmatter
from kbseek.write.encoding import (
    NEWLINE,
    WHITE,
    as_block,
    ends_blank_line,
    newline_of,
    past_blank_lines,
)

_HASHES = re.compile(r"^#{1,6}[ \t]+")
_ATX_TEXT = re.compile(r"[ \t]*#{1,6}(?:[ \t]+|$)(.*?)(?:[ \t]+#+)?[ \t]*$")
_SHOWN = 20


# ------------------------------------------------------------------ blocks and joints


def append(text: str, addition: str) -> str:
    """``addition`` as the last block of the note."""
    block = as_block(addition, newline_of(text), "the text to append")
    return _checked(text, _place(text, len(text), block), len(text), len(text), None)


def prepend(text: str, addition: str) -> str:
    """``addition`` as the first block of the note's body: after its front matter, which stays first,
    and after any blank lines the body starts with."""
    block = as_block(addition, newline_of(text), "the text to prepend")
    at = past_blank_lines(text, body_start(text))
    if not text[at:].strip(WHITE):
        at = len(text)
    return _checked(text, _place(text, at, block), at, at, _headings(text)[1])


def _place(text: str, at: int, block: str) -> str:
    """``block`` inserted at ``at`` (a line start, or the end) with the joints of the module's rule.

    What follows ``at`` starts with a line that is not blank, or is nothing.
    """
    nl = newline_of(text)
    before, after = text[:at], text[at:]
    body_before = text[body_start(text) : at].strip(WHITE)
    for joint in ("", nl, nl + nl):
        joined = before + joint
        if ends_blank_line(joined) if body_before else not joined or joined[-1] in "\r\n":
            break
    end = nl + nl if after else nl if not text or text[-1] in "\r\n" else ""
    return before + joint + block + end + after


def _checked(old: str, new: str, start: int, end: int, was: list[_Heading] | None) -> str:
    """``new``, the edit of ``old[start:end]``, once its front matter and the headings outside the
    edited region (``was``: ``old``'s) are known to read as before. ``None`` skips the headings: text
    added at the end cannot change them, since Markdown never reads a block back into the ones above
    it once a blank line is between them; the note is parsed once less."""
    if new[: body_start(new)].rstrip("\r\n") != old[: body_start(old)].rstrip("\r\n"):
        raise InvalidArgument(
            "the text would make a '---' line open or close the note's front matter, so nothing was changed: "
            "write that line otherwise (a thematic break can be '***'), and set fields with set_frontmatter"
        )
    shift = len(new) - len(old)
    if was is None:
        return new
    now = _headings(new)[1]
    kept = [(h.start, h.level, h.name) for h in was if h.start < start or h.start >= end]
    same = [(h.start, h.level, h.name) for h in now if h.start < start]
    same += [(h.start - shift, h.level, h.name) for h in now if h.start >= end + shift]
    if kept != same:
        raise InvalidArgument(
            "the text would change the headings of the note around it (does it open a code fence, an "
            "HTML block or a comment it does not close?), so nothing was changed: close it and try again"
        )
    return new


# ------------------------------------------------------------------ headings and sections


@dataclass(frozen=True)
class _Heading:
    start: int
    end: int
    """Where the line after the heading (two lines for a setext heading) begins."""
    level: int
    name: str
    """Display text, as heading paths show it."""
    source: str
    """The heading's text as written: ``KeepAlive {#keepalive}`` for the name ``KeepAlive``."""


@dataclass(frozen=True)
class _Section:
    start: int
    body: int
    end: int
    """The next heading of the same or a higher level, or the end of the note."""
    level: int
    path: tuple[str, ...]
    """As a search hit shows it: the note's title, then the headings down to this one."""
    names: tuple[frozenset[str], ...]
    """For each entry of ``path``, the folded names it answers to."""


@cache
def _parser() -> MarkdownParser:
    return MarkdownParser()


def body_start(text: str) -> int:
    lines = LineIndex(text)
    return lines.start_of(read_frontmatter(text, lines).body_line)


def _headings(text: str) -> tuple[str, list[_Heading]]:
    """The note's title and top-level headings, as the parser the index uses reads them."""
    lines = LineIndex(text)
    meta = read_frontmatter(text, lines)
    blocks = _parser().blocks(text, lines, meta.body_line)
    headings = [
        _Heading(b.start, b.end, b.level, " ".join(b.heading.split()), _written(text[b.start : b.end]))
        for b in blocks
        if b.kind is BlockKind.HEADING and b.level > 0
    ]
    return meta.title or first_heading(blocks), headings


def _written(source: str) -> str:
    lines = NEWLINE.split(source.rstrip("\r\n"))
    atx = _ATX_TEXT.fullmatch(lines[0])
    return atx.group(1) if atx and len(lines) == 1 else " ".join(lines[:-1])


def _fold(name: str) -> str:
    return " ".join(name.split()).casefold()


def _sections(text: str, title: str, headings: list[_Heading]) -> list[_Section]:
    """Every section, with the heading path the chunker gives it (``chunker._heading_path``)."""
    ends, open_, paths = [len(text)] * len(headings), list[int](), []
    for at, heading in enumerate(headings):
        while open_ and headings[open_[-1]].level >= heading.level:
            ends[open_.pop()] = heading.start
        open_.append(at)
        chain, names = [headings[i] for i in open_], [{_fold(title)}]
        if _fold(chain[0].name) == _fold(title):  # the title is the top heading: the path names it once
            names[0].add(_fold(chain.pop(0).source))
        chain = [h for h in chain if h.name]
        names += [{_fold(h.name), _fold(h.source)} for h in chain]
        paths.append(((title, *(h.name for h in chain)), tuple(map(frozenset, names))))
    return [
        _Section(h.start, h.end, end, h.level, path, names)
        for h, end, (path, names) in zip(headings, ends, paths, strict=True)
    ]


def _section(text: str, heading_path: object) -> tuple[_Section, list[_Heading]]:
    """The one section ``heading_path`` names: a path as search hits show it (``Title › A › B``, or
    its last entries, ``A › B``; ``>`` separates too), or a heading's text alone."""
    if not isinstance(heading_path, str) or not heading_path.strip():
        raise InvalidArgument("section must name a section: a heading's text, or its heading path")
    forms = {tuple(_HASHES.sub("", p.strip(), count=1) for p in heading_path.split("›"))}
    if ">" in heading_path:
        forms.add(tuple(_HASHES.sub("", p.strip(), count=1) for p in re.split("[›>]", heading_path)))
    wanted = [tuple(map(_fold, form)) for form in forms if all(form)]
    if not wanted:
        raise InvalidArgument(
            f"the heading path {heading_path!r} has an empty entry: name each heading in it"
        )
    title, headings = _headings(text)
    sections = _sections(text, title, headings)
    found = [s for s in sections if any(_answers(s, w) for w in wanted)]
    if len(found) == 1:
        return found[0], headings
    if not sections:
        raise InvalidArgument(
            f"this note has no headings, so no section is named {heading_path!r}: use append, prepend or find_replace"
        )
    if not found:
        raise InvalidArgument(
            f"no section of this note is named {heading_path!r}; its headings are: {_listed(sections)}"
        )
    alike = len({s.path for s in found}) == 1
    raise InvalidArgument(
        f"{heading_path!r} names {len(found)} sections of this note ({_listed(found)}): "
        + (
            "they have the same heading path, so edit with find_replace instead"
            if alike
            else f"pass more of its heading path, as search hits show it ('Title{HEADING_SEPARATOR}Section')"
        )
    )


def _answers(section: _Section, wanted: tuple[str, ...]) -> bool:
    """Whether ``wanted`` is the end of the section's heading path, entry by entry."""
    names = section.names[len(section.names) - len(wanted) :]
    return len(wanted) <= len(section.names) and all(w in n for w, n in zip(wanted, names, strict=True))


def _listed(sections: list[_Section]) -> str:
    shown = "; ".join(HEADING_SEPARATOR.join(s.path) for s in sections[:_SHOWN])
    return shown + (f" and {len(sections) - _SHOWN} more" if len(sections) > _SHOWN else "")


def insert_before_section(text: str, heading_path: str, addition: str) -> str:
    """``addition`` as a block right before the heading of the section ``heading_path`` names."""
    section, headings = _section(text, heading_path)
    block = as_block(addition, newline_of(text), "the text to insert")
    return _checked(text, _place(text, section.start, block), section.start, section.start, headings)


def insert_after_section(text: str, heading_path: str, addition: str) -> str:
    """``addition`` as a block after the whole section ``heading_path`` names (its subsections too),
    before the next heading of the same or a higher level."""
    section, headings = _section(text, heading_path)
    block = as_block(addition, newline_of(text), "the text to insert")
    return _checked(text, _place(text, section.end, block), section.end, section.end, headings)


def replace_section(text: str, heading_path: str, new_body: str) -> str:
    """The body of the section ``heading_path`` names (its subsections too) replaced by ``new_body``.

    The heading line is kept. When ``new_body`` starts with a heading of the section's own level,
    that heading replaces it (a rename, or the same heading sent back with the body, which is then
    not doubled); a deeper heading there is the first subsection of the body; a higher one would
    end the section early and is refused. The blank lines between the heading and the body and
    after the body are kept; an empty ``new_body`` leaves the heading with one blank line after it.
    """
    section, headings = _section(text, heading_path)
    nl = newline_of(text)
    new = as_block(new_body, nl, "the new section text", empty=True)
    start, heading = section.body, ""
    first = next(iter(_parser().blocks(new, LineIndex(new))), None) if new else None
    if first is not None and first.kind is BlockKind.HEADING and first.start == 0 and first.level > 0:
        if first.level < section.level:
            raise InvalidArgument(
                f"the new section text starts with a level-{first.level} heading, above the section's "
                f"level {section.level}, which would end the section: leave it out, or use a level-"
                f"{section.level} heading to rename the section"
            )
        if first.level == section.level:
            old = text[section.start : section.body]
            start, heading = section.start, new[: first.end].rstrip("\r\n") + old[len(old.rstrip("\r\n")) :]
            new = as_block(new[first.end :], nl, "the new section text", empty=True)
    head = text[:start] + heading
    body, after = text[section.body : section.end], text[section.end :]
    if body.strip(WHITE):
        lead = past_blank_lines(body, 0)
        tail = NEWLINE.search(body, len(body.rstrip(WHITE)))
        trail = body[tail.start() :] if tail else ""
        result = head + (body[:lead] + new + trail if new else nl if after else "") + after
    elif new:
        result = _place(head + after, len(head), new)
    else:
        result = head + body + after
    return _checked(text, result, start, section.end, headings)


# ------------------------------------------------------------------ find and replace


def find_replace(text: str, find: str, replace: str, expected_count: int = 1) -> str:
    """Every occurrence of the literal text ``find`` replaced by ``replace``, when there are exactly
    ``expected_count``: otherwise refused, saying how many there are, since a count the caller did
    not expect means it is not editing the text it thinks it is.

    Occurrences are counted and replaced left to right without overlapping (``str.replace``). When
    ``find`` has line endings and does not occur as given, it is looked for with the note's line
    endings (an agent often sends LF for a CRLF note); lines in ``replace`` end as the note's do.
    """
    if not isinstance(find, str) or not find:
        raise InvalidArgument("find must be the text to replace, and it is empty: pass the exact text")
    if not isinstance(replace, str):
        raise InvalidArgument(f"replace must be text, not {type(replace).__name__}")
    if isinstance(expected_count, bool) or not isinstance(expected_count, int) or expected_count < 1:
        raise InvalidArgument(
            f"expected_replacements must be a whole number of 1 or more, not {expected_count!r}"
        )
    nl = newline_of(text)
    if find not in text and NEWLINE.search(find):
        find = nl.join(NEWLINE.split(find))
    starts = [found.start() for found in re.finditer(re.escape(find), text)]
    if (count := len(starts)) != expected_count:
        raise InvalidArgument(
            "the text to find does not occur in this note: read the note again and copy the text exactly"
            if count == 0
            else f"the text to find occurs {count} times in this note, not {expected_count}: pass "
            f"expected_replacements={count} to replace them all, or more of the text around the one you mean"
        )
    if any(find[0] == "\n" and text[at - 1 : at] == "\r" for at in starts) or any(
        find[-1] == "\r" and text[at + len(find) : at + len(find) + 1] == "\n" for at in starts
    ):
        raise InvalidArgument(
            "the text to find starts or ends between the CR and LF of a line ending: include it whole"
        )
    result = text.replace(find, nl.join(NEWLINE.split(replace)))
    _keep_frontmatter_readable(text, result)
    return result


def _keep_frontmatter_readable(old: str, new: str) -> None:
    was, now = (read_frontmatter(t, LineIndex(t)) for t in (old, new))
    if (was.body_line > 0) != (now.body_line > 0):
        problem = "add a front-matter block to the note" if now.body_line else "end the note's front matter"
        raise InvalidArgument(
            f"the replacement would {problem}, so nothing was changed: set fields with set_frontmatter"
        )
    if now.warnings and not was.warnings:
        raise InvalidArgument(
            f"the replacement would break the note's front matter ({now.warnings[0]}), so nothing was "
            "changed: set fields with set_frontmatter"
        )
