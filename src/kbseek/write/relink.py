"""The links to a moved note, written again to name where it went.

A move that left every link to the note pointing at nothing would break the notes around it, so
each Markdown link that resolved to the old path (as the index reads links: ``kbseek.ingest.links``)
gets the new one, written as the link was: relative to its note's folder, or from the root when it
started with ``/``, its ``#anchor`` and ``?query`` kept, an extension left out where it was left
out. A ``[[wiki link]]`` names a note by its file name, so it is rewritten only when the name
changed. Each rewritten note is then written as any other edit is: guarded, and based on its hash.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import quote

from kbseek.ingest.links import path_link_spans, prose_only, resolve_target

_WIKI = re.compile(r"\[\[([^\[\]\n|#^]*)(?:[#^][^\[\]\n|]*)?(?:\|[^\[\]\n]*)?\]\]")
_SUFFIX = re.compile(r"[#?].*$")


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]


def _names(raw: str, folder: str, old: str) -> bool:
    """Whether the link target ``raw``, written in a note in ``folder``, names the note at ``old``
    (with its extension, or without it, as the index matches ``learn/state`` to ``learn/state.md``)."""
    target = resolve_target(folder, raw)
    return target is not None and target in (old, posixpath.splitext(old)[0])


def _written(raw: str, folder: str, old: str, new: str) -> str:
    """``new`` written the way ``raw`` wrote ``old``."""
    bracketed = raw.startswith("<") and raw.endswith(">")
    bare = raw[1:-1].strip() if bracketed else raw.strip()
    suffix = _SUFFIX.search(bare)
    kept = suffix.group(0) if suffix else ""
    path = bare[: len(bare) - len(kept)]
    target = (
        new
        if path.endswith(posixpath.splitext(old)[1]) or not posixpath.splitext(old)[1]
        else posixpath.splitext(new)[0]
    )
    shown = "/" + target if path.startswith("/") else posixpath.relpath(target, folder or ".")
    shown = shown if bracketed else quote(shown, safe="/._-~()")
    return f"<{shown}{kept}>" if bracketed else shown + kept


def relinked(text: str, note: str, old: str, new: str) -> tuple[str, int]:
    """``text`` of the note at ``note`` with its links to ``old`` naming ``new``, and how many changed."""
    folder = posixpath.dirname(note)
    out: list[str] = []
    at = changed = 0
    for start, end, raw in path_link_spans(text):
        if start < at or not _names(raw, folder, old):
            continue
        out += [text[at:start], _written(raw, folder, old, new)]
        at = end
        changed += 1
    out.append(text[at:])
    result = "".join(out)
    if _stem(old) == _stem(new):
        return result, changed
    pieces: list[str] = []
    at = 0
    for match in _WIKI.finditer(prose_only(result)):  # a [[link]] shown in code is not a link
        if match.group(1).strip() == _stem(old):
            pieces += [result[at : match.start(1)], _stem(new)]
            at = match.end(1)
            changed += 1
    pieces.append(result[at:])
    return "".join(pieces), changed
