"""How a stored link finds the document it points to: the same rules on every backend.

A document's links are stored as the parser read them (``models.Link``), as *keys*, and every
document is stored under the *names* a link may call it by, each with a rank; a link resolves when
read, by joining its key to the names. Resolving when read, not when written, is what lets a link
to a note that is indexed later, or renamed, find it at the next read with no pass over the linker.

Keys and names (docs/decisions/0036):

- A Markdown link ``p:<root-relative path>`` matches a document's exact path (rank 0), its path
  without the extension (rank 1: ``learn/state`` finds ``learn/state.md``, as a docs site links),
  or its folder when the document is the folder's ``index`` or ``README`` (rank 2).
- A wiki link ``w:<name>``, compared without case, matches a document's file name with or without
  its extension, or its path with or without it (rank 0), else its title (rank 1).

When several documents answer one key, the lowest rank wins, then a document in the linking
document's own folder, then the shortest path, then the first path in code-point order: Obsidian's
"shortest path" rule, made total so every backend picks the same one. Only the
:data:`CANDIDATES` best by rank and length are weighed, so a name every folder holds
(``README``) costs a bounded read.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from kbseek.documents import Link
from kbseek.store.records import LinkRow

CANDIDATES = 64
"""The most documents weighed for one key (by rank, then path length)."""

_FOLDER_PAGES = frozenset({"index", "readme", "_index"})
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def link_key(link: Link) -> str:
    """The key a link is stored under."""
    if link.kind == "wiki":
        return "w:" + _storable(link.target.strip().strip("/").casefold())
    return "p:" + _storable(link.target)


def _storable(text: str) -> str:
    """``text`` as every backend's text column holds it: no NUL (PostgreSQL's text cannot), no lone
    surrogate (not UTF-8); each becomes U+FFFD on both sides of a match alike."""
    return _UNSTORABLE.sub("\ufffd", text)


def link_keys(links: Iterable[Link]) -> list[str]:
    """The keys of a document's links, in the order written, each once."""
    return list(dict.fromkeys(link_key(link) for link in links))


def document_names(path: str, title: str) -> dict[str, int]:
    """Every key that resolves to the document at ``path`` titled ``title``, with its rank."""
    stem_path, ext = posixpath.splitext(path)
    folder, base = posixpath.split(path)
    names: dict[str, int] = {}

    def add(name: str, rank: int) -> None:
        if len(name) > 2 and rank < names.get(name, 3):
            names[name] = rank

    add("p:" + _storable(path), 0)
    if ext:
        add("p:" + _storable(stem_path), 1)
    if folder and posixpath.splitext(base)[0].casefold() in _FOLDER_PAGES:
        add("p:" + _storable(folder), 2)
    for name in (base, posixpath.splitext(base)[0], path, stem_path):
        add("w:" + _storable(name.casefold()), 0)
    if title.strip():
        add("w:" + _storable(title.strip().casefold()), 1)
    return names


def kind_of(key: str) -> str:
    return "wiki" if key.startswith("w:") else "path"


def resolve(source: str, candidates: Sequence[tuple[str, int]]) -> str | None:
    """The path a link in ``source`` resolves to among ``(path, rank)`` candidates (rules above)."""
    if not candidates:
        return None
    folder = posixpath.dirname(source)
    best = min(
        candidates,
        key=lambda c: (c[1], posixpath.dirname(c[0]) != folder, len(c[0]), c[0]),
    )
    return best[0]


def outgoing(
    source: str, keys: Sequence[str], named: Mapping[str, Sequence[tuple[str, int]]]
) -> list[LinkRow]:
    """The resolved links of ``source`` from its keys: one per target, sorted, itself left out."""
    rows: dict[str, LinkRow] = {}
    for key in keys:
        target = resolve(source, named.get(key, ()))
        if target is not None and target != source and target not in rows:
            rows[target] = LinkRow(source, target, kind_of(key))
    return [rows[t] for t in sorted(rows)]


def incoming(
    target: str, linking: Sequence[tuple[str, str]], named: Mapping[str, Sequence[tuple[str, int]]]
) -> list[LinkRow]:
    """The backlinks of ``target`` from ``(source, key)`` pairs naming it: those that resolve to it
    (another document of the same name may be the one a source means), one per source, sorted."""
    rows: dict[str, LinkRow] = {}
    for source, key in linking:
        if source != target and source not in rows and resolve(source, named.get(key, ())) == target:
            rows[source] = LinkRow(source, target, kind_of(key))
    return [rows[s] for s in sorted(rows)]


class LinkReads:
    """The link reads of the ``Store`` protocol over three reads a backend writes in its own SQL."""

    def _link_keys(self, path: str, limit: int) -> list[str]:
        """The keys of the links written in ``path``, in the order written, at most ``limit``."""
        raise NotImplementedError

    def _linking(self, path: str, limit: int) -> list[tuple[str, str]]:
        """``(source path, key)`` of at most ``limit`` links whose key is one of ``path``'s names."""
        raise NotImplementedError

    def _named(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """For each key, at most :data:`CANDIDATES` ``(path, rank)`` it names, by rank then length."""
        raise NotImplementedError

    def links_from(self, path: str, *, limit: int) -> list[LinkRow]:
        keys = self._link_keys(path, limit) if limit > 0 else []
        return outgoing(path, keys, self._named(keys) if keys else {})

    def links_to(self, path: str, *, limit: int) -> list[LinkRow]:
        linking = self._linking(path, limit) if limit > 0 else []
        keys = sorted({key for _, key in linking})
        return incoming(path, linking, self._named(keys) if keys else {})
