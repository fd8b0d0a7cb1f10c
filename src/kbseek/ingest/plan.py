"""What a pass would change, worked out before anything is written (T10).

A pass is two steps: :func:`plan_pass` compares the scan with what the store recorded, and
``Indexer.apply`` writes what the plan found.
Keeping the comparison apart makes it something to look at on its own (a dry run, a test of the
rules that decide what is new, changed or gone) without a store transaction being opened.

The plan only knows what ``stat`` and the store tell it. Whether a changed file really changed, and
whether a new file is a renamed one, depends on its content hash, which only reading the file gives;
that read happens once, in the apply step, through the guard's reader, so the plan lists the
documents a new file may have been renamed from (``rename_sources``) rather than guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kbseek.ingest.parsers import Registry
from kbseek.ingest.scan import FileStat, ScanResult, Scope
from kbseek.store.base import Store
from kbseek.store.records import DocumentState


@dataclass(frozen=True)
class IndexPlan:
    """The comparison of one scan with the store: what to read, what is unchanged, what is gone."""

    to_read: tuple[FileStat, ...]
    """Files to read, in scan order: new ones and those whose size or mtime moved (every file when
    ``reparse``)."""
    unchanged: tuple[str, ...]
    """Files whose size and mtime match the store's record: not opened at all."""
    removed: Mapping[str, DocumentState]
    """Indexed documents the scan no longer lists, by path: deleted unless a new file turns out to
    hold the same content (a rename)."""
    states: Mapping[str, DocumentState]
    """What the store recorded for the documents the pass covers, by path."""
    skipped: tuple[tuple[str, str], ...]
    """What the scan left out, with its reason."""
    reparse: bool
    """Whether the index was written by an older ``PARSE_VERSION``, so every file is read again."""
    scope: Scope | None = None
    """The part of the tree the pass covers; ``None`` for the whole tree."""

    @property
    def new(self) -> tuple[str, ...]:
        """Files the store holds no document for (a new file, or the new name of a renamed one)."""
        return tuple(fs.path for fs in self.to_read if fs.path not in self.states)

    @property
    def changed(self) -> tuple[str, ...]:
        """Indexed files to read again; an identical hash makes one unchanged after all."""
        return tuple(fs.path for fs in self.to_read if fs.path in self.states)

    @property
    def rename_sources(self) -> dict[str, DocumentState]:
        """Removed documents by content hash: a new file with one of these hashes is their rename.

        The first removed document of a hash wins, so two removed copies of one file give one rename
        and one deletion. A fresh dict each time, since the apply step consumes it.
        """
        by_hash: dict[str, DocumentState] = {}
        for state in self.removed.values():
            by_hash.setdefault(state.content_hash, state)
        return by_hash


def plan_pass(
    store: Store,
    registry: Registry,
    result: ScanResult,
    *,
    reparse: bool,
    scope: Scope | None = None,
    prune_disabled: bool = True,
) -> IndexPlan:
    """Compare ``result`` with the store's records; reads the store only, writes nothing.

    ``prune_disabled=False`` keeps documents whose extension ``registry`` no longer opens out of
    ``removed``, so narrowing the enabled parsers does not delete them (D4). With a ``scope`` only
    documents under it are compared, so a file outside it is not taken for deleted.
    """
    states = store.document_states() if scope is None else store.document_states(scope.paths, scope.folders)
    to_read: list[FileStat] = []
    unchanged: list[str] = []
    for path, fs in result.files.items():
        old = states.get(path)
        if old is not None and not reparse and (old.size, old.mtime_ns) == (fs.size, fs.mtime_ns):
            unchanged.append(path)
        else:
            to_read.append(fs)
    removed = {
        p: s
        for p, s in states.items()
        if p not in result.files and (prune_disabled or registry.for_path(p) is not None)
    }
    return IndexPlan(
        to_read=tuple(to_read), unchanged=tuple(unchanged), removed=removed, states=states,
        skipped=tuple((s.path, s.reason) for s in result.skipped), reparse=reparse, scope=scope,
    )  # fmt: skip
