"""What ``index_status`` reports: the facts the runner gathers, the response built from them, and the
notes that tell a person what to run when the index is empty.

Kept apart from ``shaping`` (search, fetch, documents, topics) because it answers a different
question: not "what did the notes say", but "can this index be trusted, and what is it doing".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbseek.config import Settings
from kbseek.facade.semantic import SemanticState
from kbseek.facade.shaping import iso
from kbseek.progress import ProgressSnapshot
from kbseek.responses import IndexProgress, SkippedFile, StatusResponse
from kbseek.text.plurals import counted

FACET_FIELDS = 20
"""Front-matter fields ``index_status`` lists, those most documents have first: the ones worth a filter."""
FACET_VALUES = 8
"""Values listed per field, commonest first: enough to learn a field's vocabulary (``status: accepted``)."""


def _common(values: Sequence[tuple[str, int]]) -> dict[str, int]:
    """A field's listed values, or none when no two documents share one (a title, a date): a list
    of values each held once teaches nothing about what to filter by, and costs the answer."""
    return dict(values) if any(n > 1 for _, n in values) else {}


def index_command(settings: Settings) -> str:
    """The command that indexes this knowledge base, for notes that tell a person what to run."""
    if settings.root is None:
        return f"kbseek index --kb PATH --store URL --kb-name {settings.kb_name}"
    option = f" --index-dir {settings.index_dir}" if settings.index_dir is not None else ""
    return f"kbseek index --kb {settings.root}{option}"


def reader_empty_note(location: str, command: str) -> str:
    """Why a server reading a database index without the files finds it empty, and what to run where."""
    return (
        f"the index {location} holds no documents: nothing has been indexed under this name yet; on the "
        f"machine that has the notes run `{command}` (the same --kb-name), or check the name"
    )


def nothing_found_note(
    root: Path, extensions: Collection[str], skipped: Sequence[tuple[str, str]] = ()
) -> str:
    """Why an indexed knowledge base is empty, and what to do about it.

    With files found and every one skipped (``skipped``: the last pass's ``(path, reason)``; a folder's
    path ends with ``/``), the reasons are where to look, so the note sends the reader to them rather
    than telling them to add notes to a folder that has some. With none found, the two ways out: add
    notes, or loosen exclusions.
    """
    files = sum(1 for path, _ in skipped if not path.endswith("/"))
    if files:
        every = "it was skipped" if files == 1 else "all were skipped"
        return (
            f"found {counted(files, 'file')} under {root}, but {every}, so nothing is indexed: see "
            "`kbseek status` for why (each reason says what would make the file readable)"
        )
    exts = ", ".join(sorted(extensions))
    return (
        f"no Markdown or other indexable files were found under {root}: kbseek indexes {exts} "
        "files — add notes there, or check the exclusions (exclude_dirs in the config, .kbseekignore)"
    )


@dataclass(frozen=True)
class StatusFacts:
    """Everything ``status`` reports, gathered from the store, the runner and the semantic leg."""

    root: Path | None
    index_path: str
    documents: int
    chunks: int
    skipped: Sequence[tuple[str, str]]
    warnings: Sequence[tuple[str, str]]
    last_pass_at: float | None
    indexing: bool
    progress: ProgressSnapshot | None
    last_pass_seconds: float | None
    semantic: SemanticState
    embedded: int | None
    semantic_note: str | None
    semantic_error: str | None
    model: str | None
    watcher: str
    parsers: Sequence[str]
    config_note: str | None
    other_writer: str | None
    last_error: str | None
    index_command: str
    nothing_found: str
    freshness: str = "stat scan before each call"
    fields: Sequence[tuple[str, int, list[tuple[str, int]]]] = ()
    date_sources: Mapping[str, int] = field(default_factory=dict)
    warm_note: str | None = None
    """A reader warming its store, or warmed by a slower method than it could (``facade.warmth``)."""


def status_response(facts: StatusFacts, *, max_skipped: int) -> StatusResponse:
    """``index_status``: counts, coverage and state, with a note for each thing a person should act on."""
    f = facts
    notes: list[str] = []
    if f.semantic_error:
        notes.append(f"semantic search unavailable: {f.semantic_error}")
    if f.config_note:
        notes.append(f.config_note)
    if f.other_writer:
        notes.append(
            f"another kbseek process ({f.other_writer}) was updating this index at the last pass; "
            "its changes are read from the shared index"
        )
    if len(f.skipped) > max_skipped:
        notes.append(f"{counted(len(f.skipped), 'path')} were skipped; the first {max_skipped} are listed")
    if f.last_pass_at is None and not f.indexing:
        notes.append(f"not indexed yet: run `{f.index_command}` to build the index")
    elif f.last_pass_at is not None and f.documents == 0 and not f.indexing:
        notes.append(f.nothing_found)
    if f.semantic_note:
        notes.append(f.semantic_note)
    if f.warm_note:
        notes.append(f.warm_note)
    return StatusResponse(
        root=str(f.root) if f.root is not None else None, index_path=f.index_path, documents=f.documents, chunks=f.chunks,
        indexing=f.indexing, progress=progress_model(f.progress),
        last_index_at=iso(f.last_pass_at) if f.last_pass_at else None,
        last_pass_seconds=round(f.last_pass_seconds, 3) if f.last_pass_seconds is not None else None,
        semantic=f.semantic.value, embedded=f.embedded, watcher=f.watcher, freshness=f.freshness,
        model=f.model,
        parsers=list(f.parsers), skipped=[SkippedFile(path=p, reason=r) for p, r in f.skipped[:max_skipped]],
        skipped_total=len(f.skipped),
        warnings=[SkippedFile(path=p, reason=w) for p, w in f.warnings[:max_skipped]],
        fields={name: _common(values) for name, _, values in f.fields},
        date_sources=dict(f.date_sources),
        last_error=f.last_error, notes=notes,
    )  # fmt: skip


def progress_model(snap: ProgressSnapshot | None) -> IndexProgress | None:
    """The running pass as ``index_status`` reports it (rounded: an agent plans in seconds, not µs)."""
    if snap is None:
        return None
    return IndexProgress(
        phase=snap.phase, done=snap.done, total=snap.total, unit=snap.unit,
        rate=round(snap.rate, 2) if snap.rate is not None else None,
        eta=round(snap.eta, 1) if snap.eta is not None else None,
    )  # fmt: skip
