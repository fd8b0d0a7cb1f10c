"""Plain-text renderings of responses: the readable block of a tool result and the CLI's output.

One rendering serves both, so what a person sees in a terminal is what an
agent reads next to the structured result.
"""

from __future__ import annotations

from kbseek.models import HEADING_SEPARATOR
from kbseek.progress import describe
from kbseek.responses import (
    DocumentResponse,
    Explanation,
    FetchResponse,
    SearchResponse,
    StatusResponse,
    TopicsResponse,
)
from kbseek.words import counted


def _notes(notes: list[str]) -> list[str]:
    return [f"note: {n}" for n in notes]


def _explain(e: Explanation) -> str:
    """Each leg's rank and score for one hit (``-``: that leg did not find it), to see why it ranks there."""
    lexical = f"lexical #{e.lexical_rank} (bm25 {e.lexical_score:.3f})" if e.lexical_rank else "lexical -"
    dense = f"semantic #{e.dense_rank} (cosine {e.dense_similarity:.3f})" if e.dense_rank else "semantic -"
    via = f" · via also #{e.phrasing}" if e.phrasing else ""
    return f"   explain: {lexical} · {dense} · fused {e.fused_score:.4f}{via}"


def search_text(r: SearchResponse) -> str:
    legs = f"lexical {r.legs.lexical}, semantic {r.legs.semantic}"
    head = f"{counted(len(r.hits), 'hit')} for {r.query!r}"
    head += "".join(f" / {a!r}" for a in r.also) + f" ({legs})"
    if r.low_confidence and r.hits:
        head += " — low confidence: the knowledge base may not cover this"
    lines = [head]
    for i, h in enumerate(r.hits, 1):
        lines.append(f"{i}. {h.path} — {HEADING_SEPARATOR.join(h.heading_path)}")
        lines.append(f"   score {h.score:.4f} · lines {h.line_start}–{h.line_end} · chunk_id {h.chunk_id}")
        if h.explain is not None:
            lines.append(_explain(h.explain))
        lines.append(f"   {h.snippet}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines)


def fetch_text(r: FetchResponse) -> str:
    lines: list[str] = []
    for p in r.passages:
        lines.append(
            f"── {p.path} — {HEADING_SEPARATOR.join(p.heading_path)} (lines {p.line_start}–{p.line_end})"
        )
        lines.append(p.text)
        if p.truncated:
            lines.append("[passage cut: see notes]")
    for m in r.missing:
        lines.append(f"{m.chunk_id}: {m.message}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines) if lines else "nothing fetched"


def document_text(r: DocumentResponse) -> str:
    lines = [r.text]
    if r.truncated or r.notes:
        lines.append("")
        lines.extend(_notes(r.notes))
    return "\n".join(lines)


def topics_text(r: TopicsResponse) -> str:
    lines = [f"{counted(len(r.topics), 'topic')} ({counted(r.index.documents, 'document')})"]
    for t in r.topics:
        more = f" … and {t.more_titles} more" if t.more_titles else ""
        docs = counted(t.documents, "document")
        lines.append(f"- {t.prefix or '(root)'}: {docs} — {'; '.join(t.titles)}{more}")
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
        f"knowledge base: {r.root}",
        f"index:          {r.index_path}",
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
    lines.extend(f"  - {s.path}: {s.reason}" for s in r.skipped)
    if r.warnings:
        lines.append(f"warnings:       {len(r.warnings)}")
        lines.extend(f"  - {w.path}: {w.reason}" for w in r.warnings)
    if r.last_error:
        lines.append(f"last error:     {r.last_error}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines)
