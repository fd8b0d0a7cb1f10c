"""Plain-text renderings of responses: the readable block of a tool result and the CLI's output.

One rendering serves both, so what a person sees in a terminal is what an
agent reads next to the structured result.
"""

from __future__ import annotations

from kbseek.models import HEADING_SEPARATOR
from kbseek.responses import DocumentResponse, FetchResponse, SearchResponse, StatusResponse, TopicsResponse


def _notes(notes: list[str]) -> list[str]:
    return [f"note: {n}" for n in notes]


def search_text(r: SearchResponse) -> str:
    legs = f"lexical {r.legs.lexical}, semantic {r.legs.semantic}"
    head = f"{len(r.hits)} hit{'s' if len(r.hits) != 1 else ''} for {r.query!r} ({legs})"
    if r.low_confidence and r.hits:
        head += " — low confidence: the knowledge base may not cover this"
    lines = [head]
    for i, h in enumerate(r.hits, 1):
        lines.append(f"{i}. {h.path} — {HEADING_SEPARATOR.join(h.heading_path)}")
        lines.append(f"   score {h.score:.4f} · lines {h.line_start}–{h.line_end} · chunk_id {h.chunk_id}")
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
    lines = [f"{len(r.topics)} topics ({r.index.documents} documents)"]
    for t in r.topics:
        more = f" … and {t.more_titles} more" if t.more_titles else ""
        lines.append(f"- {t.prefix or '(root)'}: {t.documents} documents — {'; '.join(t.titles)}{more}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines)


def status_text(r: StatusResponse) -> str:
    lines = [
        f"knowledge base: {r.root}",
        f"index:          {r.index_path}",
        f"documents:      {r.documents}",
        f"chunks:         {r.chunks}",
        f"indexing:       {'running' if r.indexing else 'idle'}",
        f"last indexed:   {r.last_index_at or 'never'}",
        f"semantic:       {r.semantic}" + (f" ({r.model})" if r.model else ""),
        f"watcher:        {r.watcher}",
        f"parsers:        {', '.join(r.parsers)}",
        f"skipped:        {r.skipped_total} file(s)",
    ]
    lines.extend(f"  - {s.path}: {s.reason}" for s in r.skipped)
    if r.warnings:
        lines.append(f"warnings:       {len(r.warnings)}")
        lines.extend(f"  - {w.path}: {w.reason}" for w in r.warnings)
    if r.last_error:
        lines.append(f"last error:     {r.last_error}")
    lines.extend(_notes(r.notes))
    return "\n".join(lines)
