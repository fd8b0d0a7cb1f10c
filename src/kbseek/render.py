"""Plain-text renderings of responses: the readable block of a tool result and the CLI's output.

One rendering serves both, so what a person sees in a terminal is what an
agent reads next to the structured result.

Document text is data (decision 0018). Every piece of it in a text block (a snippet, a passage,
a document window) sits between two delimiter lines that carry a boundary token drawn afresh
for each response::

    <<<kbseek-doc 3f9a1c2b7d4e5f60 path="notes/x.md" lines=10-24>>>
    …the document's text…
    <<<kbseek-end 3f9a1c2b7d4e5f60>>>

A document cannot know the token, so it cannot close its block early or open one for another
file; :func:`document_body` also breaks up what imitates kbseek's framing (see there). File
names, titles and headings shown outside a block are printed on one line with control, format
and bidirectional characters escaped (:func:`escaped`). Structured content keeps every value raw.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterable

from kbseek.documents import HEADING_SEPARATOR
from kbseek.progress import describe
from kbseek.responses import (
    DocumentResponse,
    Explanation,
    FetchResponse,
    NoteChange,
    RelatedResponse,
    SearchResponse,
    StatusResponse,
    TopicsResponse,
)
from kbseek.text.plurals import counted
from kbseek.text.quoting import bounded

# -- untrusted text ------------------------------------------------------------------------------------

DOC_OPEN = "<<<kbseek-doc"
DOC_CLOSE = "<<<kbseek-end"
DELIMITER_PREFIX = "<<<kbseek"
"""Both delimiter lines start with this; document text never contains it as written (see :func:`document_body`)."""

MARK = "\u200b"
"""ZERO WIDTH SPACE: inserted into document text to break a sequence that imitates framing."""

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NAME_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_BODY_ESCAPED = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # control characters but tab and newline
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e\u2066-\u2069"  # bidirectional embeddings, overrides and isolates
    "\U000e0000-\U000e007f]"  # tag characters: invisible on screen, read by a language model
    "|\r(?!\n)"  # a carriage return that does not end a line
)
_FORGED = re.compile(
    r"<<<(?=kbseek)"  # the delimiter prefix, anywhere in the text
    r"|(?m:^(?=── |note: |\[passage cut|\[kbseek))"  # a line that starts like kbseek's own framing
    r"|<(?=/?(?:system|assistant|user|human|tool_result|tool_use|function_results|function_calls)\b)",
    re.IGNORECASE,
)


def _escape_char(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escaped(name: str) -> str:
    r"""A file name, title, heading or note as one line of text: control, format (bidirectional
    overrides, zero-width and tag characters), line-separator and surrogate characters are written
    as escapes (``\n``, ``\u001b``, ``\u202e``). The structured result keeps the value as it is,
    so a path still round-trips."""
    if name.isprintable():
        return name
    return "".join(_escape_char(c) if unicodedata.category(c) in _NAME_ESCAPED else c for c in name)


def _quoted(value: str) -> str:
    """``value`` as a double-quoted string on one line, ``\\`` and ``"`` escaped as in JSON."""
    return '"' + escaped(value.replace("\\", "\\\\").replace('"', '\\"')) + '"'


def document_body(text: str) -> str:
    """Document text as it goes between the delimiters: its lines kept, nothing in it able to pass
    for kbseek's framing.

    - C0 and C1 control characters other than tab and newline (a carriage return only when no
      newline follows it), U+2028/U+2029, the bidirectional embedding, override and isolate
      characters and the tag characters U+E0000–U+E007F are written as escapes (``\\u001b``,
      ``\\u202e``): they can move or hide text on a screen, start a line where the text has none,
      or carry words a reader cannot see.
    - :data:`MARK` is inserted after ``<<<`` wherever ``kbseek`` follows (any case), so
      ``<<<kbseek-end …>>>`` in a document is never a delimiter; before a line that starts like a
      passage header (``── ``), a note (``note: ``) or a cut marker (``[passage cut``, ``[kbseek``);
      and after ``<`` in tags that imitate a conversation's framing (``</tool_result>``, ``<system>``,
      ``<user>`` …).
    """
    shown = _BODY_ESCAPED.sub(lambda m: _escape_char(m[0]), text)
    return _FORGED.sub(lambda m: m[0] + MARK, shown)


def boundary() -> str:
    """A fresh token for one response's delimiters: 64 random bits, which no document can predict."""
    return secrets.token_hex(8)


def passage(token: str, text: str, path: str, where: str) -> list[str]:
    """The lines of one delimited block of document text from ``path``; ``where`` says which part
    (``lines=10-24``, ``chars=0-4000``)."""
    head = f"{DOC_OPEN} {token} path={_quoted(path)} {where}>>>"
    return [head, document_body(text), f"{DOC_CLOSE} {token}>>>"]


def _heading(parts: Iterable[str]) -> str:
    return escaped(HEADING_SEPARATOR.join(parts))


def _notes(notes: list[str]) -> list[str]:
    return [f"note: {escaped(n)}" for n in notes]


def _explain(e: Explanation) -> str:
    """Each leg's rank and score for one hit (``-``: that leg did not find it), to see why it ranks there."""
    lexical = f"lexical #{e.lexical_rank} (bm25 {e.lexical_score:.3f})" if e.lexical_rank else "lexical -"
    dense = f"semantic #{e.dense_rank} (cosine {e.dense_similarity:.3f})" if e.dense_rank else "semantic -"
    via = f" · via also #{e.phrasing}" if e.phrasing else ""
    via += f" (+{e.agreement:.4f} from the other phrasings)" if e.agreement else ""
    via += f" · rerank {e.rerank_score:.4f}" if e.rerank_score is not None else ""
    if e.learned:
        via += " · learned: " + ", ".join(f"{name} {part:+.2f}" for name, part in e.learned.items())
    return f"   explain: {lexical} · {dense} · fused {e.fused_score:.4f}{via}"


def _section(heading_path: list[str]) -> list[str]:
    """The headings a hit's line shows: the path below the document title when there is one, since
    the file's path is on the next line; the title alone for a hit in a document's opening."""
    return heading_path[1:] if len(heading_path) > 1 else heading_path


def _without_heading(snippet: str, heading_path: list[str]) -> str:
    """``snippet`` less the section heading it starts with, when its window opens at the head of its
    chunk: the hit's line already says it. The structured snippet keeps it, with its highlights."""
    heading = heading_path[-1] if heading_path else ""
    rest = snippet[len(heading) :]
    return rest.lstrip() if heading and snippet.startswith(heading) and rest[:1].isspace() else snippet


def search_text(r: SearchResponse, token: str | None = None, *, brief: bool = False) -> str:
    """Each hit as one line (rank, section, chunk id) above its snippet's delimited block, whose
    opening line names the file and its lines; then the notes.

    Each hit names its file once (in the block's opening line), its section once (the snippet is
    shown without a heading it starts with) and its score only with ``explain``: the order is the
    ranking, and a score is comparable only within one answer. ``brief`` (the MCP tool) leaves out
    of the first line what the caller knows or a note says: the query and each phrasing it sent,
    which would cost their length again in every answer, and the legs' states (a leg that is not
    ``ok`` has its note, or is off by configuration). Decision 0035.
    """
    token = token or boundary()
    if r.legs.lexical == "none":  # no query: the newest documents passing the filters (sort="newest")
        lines = [f"{counted(len(r.hits), 'document')}, newest first"]
        return "\n".join(lines + _hit_lines(r, token) + _notes(r.notes))
    head = counted(len(r.hits), "hit")
    if not brief:
        legs = f"lexical {r.legs.lexical}, semantic {r.legs.semantic}"
        head += f" for {r.query!r}" + "".join(f" / {a!r}" for a in r.also) + f" ({legs})"
    notes = list(r.notes)
    doubt = [notes.pop(r.note_codes.index("low_confidence"))] if "low_confidence" in r.note_codes else []
    if r.low_confidence and r.hits and not doubt:
        head += " — low confidence: the knowledge base may not cover this"
    return "\n".join([head, *_notes(doubt), *_hit_lines(r, token), *_notes(notes)])  # why, before the hits


def _hit_lines(r: SearchResponse, token: str) -> list[str]:
    lines: list[str] = []
    dated_paths: set[str] = set()
    for i, h in enumerate(r.hits, 1):
        lines.append(f"{i}. {_heading(_section(h.heading_path))} · chunk_id {escaped(h.chunk_id)}")
        if h.explain is not None:
            lines.append(f"   score {h.score:.4f}")
            lines.append(_explain(h.explain))
        snippet = _without_heading(h.snippet, h.heading_path)
        # A document's date is said at its first hit only (the answer's budget, decision 0043); it is
        # always YYYY-MM-DD, written by kbseek.dates, never text from the file.
        first = h.path not in dated_paths
        dated = f" date={h.date}" if h.date and first else ""
        dated += f" hash={h.hash}" if h.hash and first else ""  # only when agents may write (0058)
        dated_paths.add(h.path)
        lines.extend(passage(token, snippet, h.path, f"lines={h.line_start}-{h.line_end}{dated}"))
    return lines


def fetch_text(r: FetchResponse, token: str | None = None) -> str:
    token = token or boundary()
    lines: list[str] = []
    for p in r.passages:
        lines.append(f"── {escaped(p.path)} — {_heading(p.heading_path)} (lines {p.line_start}–{p.line_end})")
        hashed = f" hash={p.hash}" if p.hash else ""
        lines.extend(passage(token, p.text, p.path, f"lines={p.line_start}-{p.line_end}{hashed}"))
        if p.truncated:
            lines.append("[passage cut: see notes]")
    for m in r.missing:
        lines.append(f"{escaped(m.chunk_id)}: {escaped(m.message)}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines) if lines else "nothing fetched"


def document_text(r: DocumentResponse, token: str | None = None) -> str:
    chars = f"chars={r.offset}-{r.offset + r.returned_chars}" + (f" hash={r.hash}" if r.hash else "")
    lines = passage(token or boundary(), r.text, r.path, chars)
    if r.truncated or r.notes:
        lines.append("")
        lines.extend(_notes(r.notes))
    return "\n".join(lines)


def topics_text(r: TopicsResponse) -> str:
    lines = [f"{counted(len(r.topics), 'topic')} ({counted(r.index.documents, 'document')})"]
    for t in r.topics:
        more = f" … and {t.more_titles} more" if t.more_titles else ""
        docs = counted(t.documents, "document")
        titles = "; ".join(escaped(title) for title in t.titles)
        lines.append(f"- {escaped(t.prefix) or '(root)'}: {docs} — {titles}{more}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines)


def related_text(r: RelatedResponse) -> str:
    """One line per related document: path, title (escaped, never instructions) and why it is there."""
    lines = [f"{counted(len(r.hits), 'related document')} for {escaped(r.path)}"]
    for i, h in enumerate(r.hits, 1):
        lines.append(f"{i}. {escaped(h.path)} — {escaped(h.title)} [{'; '.join(h.why)}; score {h.score:.2f}]")
    if r.backlinks:
        lines.append("backlinks: " + ", ".join(escaped(p) for p in r.backlinks))
    lines.extend(_notes(r.notes))
    return "\n".join(lines)


def _indexing(r: StatusResponse) -> str:
    """``running — embed 340/1200 chunks (28%), 11.2/s, ETA 1m17s``: the same wording as the CLI's lines."""
    if not r.indexing:
        return "idle"
    p = r.progress
    if p is None:
        return "running"
    return f"running — {describe(p.phase, p.done, p.total, p.unit, p.rate, p.eta)}"


def status_text(r: StatusResponse) -> str:
    if not r.chunks:
        r = r.model_copy(update={"embedded": None})  # "0 of 0 chunks embedded" says nothing
    lines = [
        f"knowledge base: {escaped(r.root) if r.root is not None else '(no folder: served from the index)'}",
        f"index:          {escaped(r.index_path)}",
        f"documents:      {r.documents}",
        f"chunks:         {r.chunks}",
        f"indexing:       {_indexing(r)}",
        f"last indexed:   {r.last_index_at or 'never'}",
        f"semantic:       {r.semantic}"
        + (f" ({r.model})" if r.model else "")
        + (f", {r.embedded} of {counted(r.chunks, 'chunk')} embedded" if r.embedded is not None else ""),
        f"watcher:        {r.watcher}",
        f"freshness:      {r.freshness}",
        f"parsers:        {', '.join(r.parsers)}",
        f"skipped:        {counted(r.skipped_total, 'file or folder', 'files or folders')}",
    ]
    lines.extend(f"  - {escaped(s.path)}: {escaped(s.reason)}" for s in r.skipped)
    if r.warnings:
        lines.append(f"warnings:       {len(r.warnings)}")
        lines.extend(f"  - {escaped(w.path)}: {escaped(w.reason)}" for w in r.warnings)
    if r.last_error:
        lines.append(f"last error:     {escaped(r.last_error)}")
    if r.date_sources:
        lines.append("dates from:     " + ", ".join(f"{escaped(k)} {n}" for k, n in r.date_sources.items()))
    if r.fields:
        lines.append("front matter:   filter with search where={field: value}; common values:")
        lines.extend(
            f"  - {_short(field)}: "
            + (
                ", ".join(f"{_short(v)} ({n})" for v, n in values.items())
                or "a value of its own in each document"
            )
            for field, values in r.fields.items()
        )
    if r.last_writes:
        lines.append("last writes:    newest first (kbseek notes log lists more)")
        lines.extend(
            f"  - {w.get('time')} {w.get('operation')} {escaped(str(w.get('path')))}"
            + (f" by {escaped(str(w['client']))}" if w.get("client") else "")
            for w in r.last_writes
        )
    lines.extend(_notes(r.notes))
    return "\n".join(lines)


def _short(text: str) -> str:
    """A front-matter name or value from a file: one line, escaped, at most 40 characters."""
    return escaped(bounded(" ".join(text.split()), 40))


def note_change_text(r: NoteChange) -> str:
    """A write's answer for the agent: what was done, the hash to send next, then the diff."""
    done = "would " + r.operation if r.dry_run else r.operation
    where = escaped(r.path) + (f" → {escaped(r.new_path)}" if r.new_path else "")
    lines = [f"{done}: {where}", f"hash: {r.hash or '(none: the note is gone)'}"]
    if r.previous_hash:
        lines.append(f"previous hash: {r.previous_hash}")
    if r.trash:
        lines.append(f"trash entry: {escaped(r.trash)}")
    if r.links_rewritten:
        lines.append("links rewritten in: " + ", ".join(escaped(p) for p in r.links_rewritten))
    if r.dry_run:
        lines.append("dry run: nothing was written")
    elif r.searchable:
        lines.append("indexed: search finds it now")
    lines.extend(_notes(r.notes))
    if r.diff:
        lines += ["", r.diff.rstrip("\n")]
    return "\n".join(lines)
