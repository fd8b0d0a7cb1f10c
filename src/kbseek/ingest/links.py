"""The links a Markdown note writes to other notes: what ``related`` and backlinks are built from.

Two kinds are read (docs/decisions/0036):

- **Markdown links** ``[text](target)``, ``![alt](target)`` and reference definitions
  ``[label]: target``. A target with a scheme (``https:``, ``mailto:``), a protocol-relative
  ``//host`` or only an ``#anchor`` is not a note and is dropped. The anchor and query are dropped,
  ``%20`` and the like decoded, and the rest resolved against the document's folder; one starting
  with ``/`` is taken from the knowledge base's root, as a docs site (React's ``/learn/…``) writes
  them. A target that leaves the root is dropped. No extension is guessed here: the store matches
  ``learn/state`` to ``learn/state.md`` (``kbseek.store.links``), since only it knows which files exist.
- **Wiki links** ``[[Name]]``, ``[[Name|shown text]]``, ``[[Name#Heading]]``, ``![[Name]]``: the
  name is kept as written and resolved when read, by file name, then path, then title, because the
  note it names may not be indexed yet.

Code is not prose: text inside fenced code blocks and inline code spans is never read for links,
so a tutorial that shows ``[x](y)`` links to nothing. markdown-it's inline pass is off for speed
(``parsers.markdown``), so the spans are found here with a few regular expressions over the text.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from kbseek.documents import Link

MAX_LINKS = 1000
"""Links kept per document, the first ones written: a generated index page of 50,000 links would
otherwise write 50,000 rows per pass for a signal that a few hundred already give."""

_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})", re.MULTILINE)
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_INLINE = re.compile(
    r"!?\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
)
"""``[text](target`` up to the target's end: one level of brackets in the text, of parentheses in the
target (``wiki/Foo_(bar)``), or an ``<angle bracketed>`` target."""
_REFERENCE = re.compile(r"^ {0,3}\[[^\[\]\n]+\]:[ \t]*(<[^<>\n]*>|\S+)", re.MULTILINE)
_WIKI = re.compile(r"\[\[([^\[\]\n|#^]*)(?:[#^][^\[\]\n|]*)?(?:\|[^\[\]\n]*)?\]\]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_links(path: str, text: str) -> tuple[Link, ...]:
    """The links of a Markdown document at root-relative ``path``, in order of first appearance, each
    once, at most :data:`MAX_LINKS`; links to itself are left out."""
    prose = prose_only(text)
    found: list[tuple[int, Link]] = []
    folder = posixpath.dirname(path)
    for pattern in (_INLINE, _REFERENCE):
        for match in pattern.finditer(prose):
            target = resolve_target(folder, match.group(1))
            if target is not None:
                found.append((match.start(), Link("path", target)))
    for match in _WIKI.finditer(prose):
        name = match.group(1).strip()
        if name:
            found.append((match.start(), Link("wiki", name)))
    found.sort(key=lambda item: item[0])
    links = dict.fromkeys(link for _, link in found if not (link.kind == "path" and link.target == path))
    return tuple(links)[:MAX_LINKS]


def path_link_spans(text: str) -> list[tuple[int, int, str]]:
    """Where each Markdown link's target is written in ``text``: ``(start, end, raw target)``, in
    order, read exactly as :func:`markdown_links` reads them (code left out), so what is rewritten
    when a note moves is what the index resolved."""
    prose = prose_only(text)
    spans = [(m.start(1), m.end(1), m.group(1)) for p in (_INLINE, _REFERENCE) for m in p.finditer(prose)]
    return sorted(spans)


def prose_only(text: str) -> str:
    """``text`` with its code (fenced blocks and inline spans) blanked, each character where it was:
    where links are read, and where they are not."""
    return _INLINE_CODE.sub(_blank, _without_fences(text))


def resolve_target(folder: str, raw: str) -> str | None:
    """A Markdown link target as a root-relative path, or ``None`` when it is not a note of this root."""
    target = raw.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    if not target or target.startswith(("#", "//")) or _SCHEME.match(target):
        return None
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not target:
        return None
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
    resolved = posixpath.normpath(joined) if joined else ""
    if resolved in ("", ".") or resolved == ".." or resolved.startswith("../"):
        return None
    return resolved


def _without_fences(text: str) -> str:
    """``text`` with every fenced code block blanked (its length kept), fences in lists and quotes too;
    an unclosed fence runs to the end, as CommonMark reads it."""
    out: list[str] = []
    rest = 0
    opened: re.Match[str] | None = None
    for match in _FENCE.finditer(text):
        if opened is None:
            out.append(text[rest : match.start()])
            opened, rest = match, match.start()
        elif match.group(1)[0] == opened.group(1)[0] and len(match.group(1)) >= len(opened.group(1)):
            end = text.find("\n", match.end())
            end = len(text) if end < 0 else end
            out.append(_blank_text(text[rest:end]))
            opened, rest = None, end
    tail = text[rest:]
    out.append(_blank_text(tail) if opened is not None else tail)
    return "".join(out)


def _blank(match: re.Match[str]) -> str:
    return _blank_text(match.group(0))


def _blank_text(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)
