"""``Library``: several knowledge bases served as named collections, one of them the default.

Each collection is a whole :class:`~kbseek.kb.KnowledgeBase` with its own root, index, ignore rules
and parsers; nothing is shared but the process. What this module adds is the one thing a single
knowledge base cannot do alone: a search over several collections answered as one ranking.

The merge rule (docs/decisions/0037): each collection ranks the query as it would alone and the hits
are merged by their fused score. The score is on one scale across indexes because its dense part
is a cosine of one model and its lexical part a share of the query's IDF weight the chunk covers,
squared, times BM25 over the collection's best: the part that depends on the collection is bounded
by coverage, so the collection without the answer does not win on a weak keyword match. Measured
by ``benchmarks/multi_kb.py`` against one index holding both halves.

With one collection every call is the knowledge base's own answer, unchanged: no ``kb`` field,
``kb://doc/`` URIs as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbseek.config import build_settings, load_config_file
from kbseek.embed.base import Embedder
from kbseek.errors import ConfigError, InvalidArgument, UnknownField
from kbseek.facade import shaping
from kbseek.facade.response_cap import Measure, fit_search, json_size
from kbseek.filters import Filters
from kbseek.kb import KnowledgeBase
from kbseek.responses import (
    FetchResponse,
    IndexSummary,
    Legs,
    SearchHit,
    SearchResponse,
    StatusResponse,
    TopicsResponse,
)
from kbseek.search.keywords import KeywordScale, widest
from kbseek.search_query import SearchQuery
from kbseek.uris import COLLECTION_NAME, document_uri, topic_uri

KbArg = str | Sequence[str] | None
"""Which collections a call is about: a name, several, or ``None`` for every one (search) or the
default (reads)."""


def collection_name(root: Path | str) -> str:
    """The name a collection gets from its folder when none is given: the folder's name, with any
    character a ``kb://`` URI would have to escape replaced by ``-``."""
    name = "".join(c if c.isalnum() or c in "_.-" else "-" for c in Path(root).expanduser().name)
    name = name.lstrip("._-") or "kb"
    return name[:64]


def check_name(name: str) -> str:
    if not COLLECTION_NAME.fullmatch(name):
        raise InvalidArgument(
            f"collection name {name!r} is not usable: letters, digits, '_', '.', '-' (up to 64), "
            "starting with a letter or digit"
        )
    return name


class Library:
    """Named knowledge bases, searched one at a time or together.

    ::

        from kbseek import KnowledgeBase
        from kbseek.library import Library

        with Library({"notes": KnowledgeBase("~/notes"), "docs": KnowledgeBase("~/work/docs")}) as lib:
            hits = lib.search("rotate the signing key").hits        # both, merged; each hit names its kb
            hits = lib.search("rotate the signing key", kb="docs").hits

    Owns the knowledge bases it is given: ``close()`` closes them all.
    """

    def __init__(
        self, kbs: Mapping[str, KnowledgeBase], *, default: str | None = None, several: bool | None = None
    ) -> None:
        if not kbs:
            raise InvalidArgument("a library needs at least one knowledge base")
        for name in kbs:
            check_name(name)
        self._kbs = dict(kbs)
        self.default: str = default if default is not None else next(iter(self._kbs))
        if self.default not in self._kbs:
            raise InvalidArgument(f"the default collection {self.default!r} is not one of {self.names}")
        self._several = len(self._kbs) > 1 if several is None else several
        self._owner = True

    # -- the collections ---------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kbs)

    @property
    def several(self) -> bool:
        """Whether answers name their collection (a ``kb`` field, ``kb://NAME/…`` URIs)."""
        return self._several

    def only(self, names: Collection[str]) -> Library:
        """The library as a caller allowed ``names`` sees it: the other collections do not exist in it.

        Every answer, refusal and listing of the view is made from its own collections, so a
        collection left out is not searched, listed or counted, and asking for it by name is refused
        exactly as a name that never existed. The view keeps the whole library's way of naming
        (``several``), so a document's ``kb://`` URI is the same for every caller, and its default
        is the library's when that is kept, else the first kept. It shares the knowledge bases and
        does not own them: closing it closes nothing.
        """
        kept = {n: kb for n, kb in self._kbs.items() if n in names}
        if len(kept) == len(self._kbs):
            return self
        if not kept:
            raise InvalidArgument("no collection is left to read")
        view = Library(kept, default=self.default if self.default in kept else None, several=self.several)
        view._owner = False
        return view

    def __getitem__(self, name: str) -> KnowledgeBase:
        return self._kbs[self.pick_one(name)]

    def __iter__(self) -> Iterator[tuple[str, KnowledgeBase]]:
        return iter(self._kbs.items())

    def pick(self, kb: KbArg) -> list[str]:
        """The collections a search is over, in the library's order; ``None`` or empty means all."""
        if kb is None:
            return list(self._kbs)
        wanted = [kb] if isinstance(kb, str) else list(kb)
        if not wanted:
            return list(self._kbs)
        unknown = [n for n in wanted if n not in self._kbs]
        if unknown:
            raise InvalidArgument(
                f"no collection {', '.join(map(repr, unknown))}: the collections are {', '.join(self._kbs)}"
            )
        return [n for n in self._kbs if n in wanted]

    def pick_one(self, kb: str | None) -> str:
        """The one collection a read is about: ``kb``, or the default."""
        return self.pick(kb)[0] if kb is not None else self.default

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._owner:
            return
        for kb in self._kbs.values():
            kb.close()

    def start_background(self) -> None:
        for kb in self._kbs.values():
            kb.start_background()

    def readiness(self) -> str | None:
        """``None`` when every knowledge base can be served, else the first one's reason, named."""
        for name, kb in self._kbs.items():
            why = kb.readiness()
            if why is not None:
                return f"{name}: {why}" if len(self._kbs) > 1 else why
        return None

    def claim_writer(self, *, take_over: bool = False) -> str | None:
        replaced = [kb.claim_writer(take_over=take_over) for kb in self._kbs.values()]
        return "; ".join(r for r in replaced if r) or None

    def start_watching(self) -> None:
        for kb in self._kbs.values():
            kb.start_watching()

    # -- answers -----------------------------------------------------------------------------------

    def search(
        self, query: str | SearchQuery, *, kb: KbArg = None, limit: int | None = None,
        filters: Filters | None = None, sort: str = "relevance", snippet_chars: int | None = None,
        explain: bool = False, also: Sequence[str] = (), measure: Measure | None = json_size,
    ) -> SearchResponse:  # fmt: skip
        """One ranking over the chosen collections (all by default), merged by fused score (0037).

        Each collection's keyword leg is normalised by the best keyword match over all the chosen
        ones, as one index holding them all would be, so that a weak match in one collection does
        not score as that collection's best (``KnowledgeBase.keyword_scale``). The merged answer is
        fitted once, at the default collection's response cap, as ``measure`` sizes it."""
        asked = SearchQuery.of(
            query, limit=limit, filters=filters, sort=sort, snippet_chars=snippet_chars, explain=explain,
            also=also,
        )  # fmt: skip
        names = self.pick(kb)
        scales = self._keyword_scales(names, asked) if not asked.blank else {}
        shared = widest(list(scales.values()))
        answers: dict[str, SearchResponse] = {}
        unknown: UnknownField | None = None
        for name in names:
            own = scales.get(name)
            try:
                answers[name] = self._kbs[name].search(
                    asked, scale=own.sharing(shared) if own is not None else None, measure=None
                )
            except UnknownField as exc:  # a collection without the field holds no document with it
                if len(names) == 1:
                    raise
                unknown = exc
        if not answers and unknown is not None:
            raise unknown
        if self.several:
            first = self._kbs[names[0]]
            wanted = shaping.clamp(
                "limit", asked.limit, first.limits.default_limit, 1, first.limits.max_limit, []
            )
            merged = merge_searches(answers, wanted, newest=asked.sort == "newest")
        else:
            merged = answers[names[0]]
        if measure is None:
            return merged
        return fit_search(merged, self._kbs[self.default].limits.max_response_chars, measure)

    def _keyword_scales(self, names: Sequence[str], asked: SearchQuery) -> dict[str, KeywordScale]:
        """Each collection's keyword legs and best match for ``asked``; none for one collection, whose
        keyword leg is normalised by its own best."""
        if len(names) < 2:
            return {}
        return {name: self._kbs[name].keyword_scale(asked) for name in names}

    def fetch(
        self, chunk_ids: Sequence[str], *, context: int | None = None, kb: KbArg = None
    ) -> FetchResponse:
        """Passages by chunk id from whichever collection holds each id; an id none holds is missing
        as the first collection words it (stale or unknown)."""
        names = self.pick(kb)
        if len(names) == 1:
            return self._label_fetch(names[0], self._kbs[names[0]].fetch(chunk_ids, context=context))
        answers = {n: self._kbs[n].fetch(chunk_ids, context=context) for n in names}
        found = {cid for r in answers.values() for p in r.passages for cid in p.requested}
        passages = [p for n in names for p in self._label_fetch(n, answers[n]).passages]
        missing: dict[str, object] = {}
        for n in names:
            for m in answers[n].missing:
                if m.chunk_id not in found and (m.chunk_id not in missing or m.status == "stale"):
                    missing[m.chunk_id] = m
        first = answers[names[0]]
        return first.model_copy(
            update={
                "passages": passages,
                "missing": [missing[c] for c in dict.fromkeys(chunk_ids) if c in missing],
                "truncated": any(r.truncated for r in answers.values()),
                "notes": _merged_notes({n: r.notes for n, r in answers.items()}),
            }
        )

    def _label_fetch(self, name: str, r: FetchResponse) -> FetchResponse:
        if not self.several:
            return r
        return r.model_copy(
            update={
                "passages": [
                    p.model_copy(update={"uri": p.uri and document_uri(p.path, name)}) for p in r.passages
                ]
            }
        )

    def topics(self, kb: KbArg = None) -> dict[str, TopicsResponse]:
        """Each chosen collection's topics, by name (all by default)."""
        out = {}
        for name in self.pick(kb):
            r = self._kbs[name].topics()
            if self.several:
                r = r.model_copy(
                    update={
                        "topics": [
                            t.model_copy(update={"uri": t.uri and topic_uri(t.prefix, name)})
                            for t in r.topics
                        ]
                    }
                )
            out[name] = r
        return out

    def status(self, kb: KbArg = None) -> dict[str, StatusResponse]:
        """Each chosen collection's status, by name (all by default)."""
        return {name: self._kbs[name].status() for name in self.pick(kb)}

    def summary(self) -> IndexSummary:
        return _summed([kb.summary() for kb in self._kbs.values()])


def merge_searches(
    answers: Mapping[str, SearchResponse], limit: int, *, newest: bool = False
) -> SearchResponse:
    """Several collections' answers to one query as one: hits by fused score, best first (``newest``:
    newest date first), each naming its collection (and its ``kb://NAME/doc/`` uri), cut at ``limit``.

    Low confidence only when every collection is unsure: one confident collection is an answer. Notes
    that every collection gave alike are said once; the others name their collection. ``empty``
    explanations are dropped when another collection found something.
    """
    names = list(answers)
    order = {n: i for i, n in enumerate(names)}
    hits: list[tuple[str, SearchHit]] = [(n, h) for n in names for h in answers[n].hits]
    hits.sort(key=lambda nh: (-nh[1].score, order[nh[0]]))
    if newest:  # stable: within a day, the order by score stays
        hits.sort(key=lambda nh: nh[1].date or "", reverse=True)
    merged = [
        h.model_copy(update={"kb": n, "uri": h.uri and document_uri(h.path, n)}) for n, h in hits[:limit]
    ]
    notes: dict[str, list[str]] = {}
    codes: dict[str, list[str]] = {}
    for n, r in answers.items():
        pairs = list(zip(r.notes, r.note_codes or [""] * len(r.notes), strict=False))
        pairs = [(t, c) for t, c in pairs if not (merged and c == "empty")]
        notes[n] = [t for t, _ in pairs]
        codes[n] = [c for _, c in pairs]
    text = _merged_notes(notes)
    code_of = {t: c for n in names for t, c in zip(notes[n], codes[n], strict=True)}
    note_codes = [code_of.get(t, code_of.get(t.partition(": ")[2], "")) for t in text]
    first = answers[names[0]]
    semantic = {r.legs.semantic for r in answers.values()}
    lexical = {r.legs.lexical for r in answers.values()}
    return first.model_copy(
        update={
            "hits": merged,
            "legs": Legs(
                lexical="ok" if "ok" in lexical else first.legs.lexical,
                semantic=semantic.pop() if len(semantic) == 1 else "partial",
            ),
            "low_confidence": all(r.low_confidence for r in answers.values()),
            "truncated": any(r.truncated for r in answers.values()),
            "notes": text,
            "note_codes": note_codes,
            "index": _summed([r.index for r in answers.values()]),
        }
    )


def _merged_notes(notes: Mapping[str, Sequence[str]]) -> list[str]:
    """Notes every collection gave alike once; the others prefixed with their collection's name."""
    everyone = set.intersection(*(set(v) for v in notes.values())) if notes else set()
    out: list[str] = []
    for name, texts in notes.items():
        for t in texts:
            said = t if t in everyone else f"{name}: {t}"
            if said not in out:
                out.append(said)
    return out


def _summed(summaries: Sequence[IndexSummary]) -> IndexSummary:
    embedded = [s.embedded for s in summaries]
    return IndexSummary(
        documents=sum(s.documents for s in summaries),
        chunks=sum(s.chunks for s in summaries),
        indexing=any(s.indexing for s in summaries),
        embedded=None if any(e is None for e in embedded) else sum(e for e in embedded if e is not None),
    )


# -- opening several collections (``serve --kb A --kb B``, ``[[kb]]`` tables) ----------------------

COLLECTION_KEYS = frozenset({"name", "root", "index_dir", "exclude_dirs", "max_file_bytes", "parsers"})
"""What a ``[[kb]]`` table may set; everything else (the model, fusion, limits) is the file's, shared."""


def parse_kb_spec(spec: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH`` (named after its folder), as ``--kb`` takes it."""
    name, eq, path = spec.partition("=")
    if eq and COLLECTION_NAME.fullmatch(name) and not Path(spec).expanduser().exists():
        return name, Path(path).expanduser()
    return collection_name(spec), Path(spec).expanduser()


def collection_specs(
    specs: Sequence[str], file_values: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """Each collection's name and its config values: the ``--kb`` flags when given, else the file's
    ``[[kb]]`` tables, each over the file's shared values. Names must differ."""
    shared = {k: v for k, v in file_values.items() if k not in ("collections", "kb", "index_dir")}
    out: list[tuple[str, dict[str, Any]]] = []
    if specs:
        for spec in specs:
            name, root = parse_kb_spec(spec)
            out.append((name, {**shared, "kb": root}))
    else:
        for i, table in enumerate(file_values.get("collections", ())):
            if not isinstance(table, dict) or not isinstance(table.get("root"), str):
                raise ConfigError(f'[[kb]] table {i + 1} needs root = "PATH" (and may set name)')
            unknown = sorted(set(table) - COLLECTION_KEYS)
            if unknown:
                raise ConfigError(
                    f"unknown key {unknown[0]!r} in [[kb]] table {i + 1}; known keys: {', '.join(sorted(COLLECTION_KEYS))}"
                )
            base = Path(file_values.get("_base", "."))
            root = (base / Path(table["root"]).expanduser()).resolve()
            values = {**shared, **{k: v for k, v in table.items() if k not in ("name", "root")}, "kb": root}
            if "index_dir" in values:
                values["index_dir"] = (base / Path(str(values["index_dir"])).expanduser()).resolve()
            out.append((check_name(str(table.get("name") or collection_name(root))), values))
    names = [n for n, _ in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(
            f"two collections are named {repeated[0]!r}: give one a name (NAME=PATH, or name = in [[kb]])"
        )
    return out


def open_library(
    specs: Sequence[str], *, config: Path | None = None, semantic: bool | None = None, read_only: bool = False,
    allow_write: bool = False,
) -> Library:  # fmt: skip
    """The collections named by ``--kb`` flags or the config file's ``[[kb]]`` tables, opened; one
    embedding model shared by all (they share the file's ``[embed]``). The first is the default."""
    file_values = dict(load_config_file(config)) if config is not None else {}
    if config is not None:
        file_values["_base"] = str(config.parent)
    kbs: dict[str, KnowledgeBase] = {}
    embedder: Embedder | None = None
    try:
        for name, values in collection_specs(specs, file_values):
            settings = build_settings(
                root=values.pop("kb"), file_values=values, semantic=semantic, allow_write=allow_write
            )
            kbs[name] = KnowledgeBase(settings=settings, embedder=embedder, read_only=read_only)
            embedder = embedder or kbs[name].retrieval().embedder
    except BaseException:
        for kb in kbs.values():
            kb.close()
        raise
    return Library(kbs)
