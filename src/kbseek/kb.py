"""``KnowledgeBase``: one folder of notes, indexed and searchable, the API every surface uses.

The CLI, the MCP server, the web page, ``kbseek eval`` and the benchmarks all hold a
``KnowledgeBase`` and call the methods below; none of them ranks, caps or words a note itself.
The class only delegates: each behaviour lives in the module named after it (``paths``,
``live_config``, ``runner``, ``semantic``, ``catalog``, ``retrieval``, ``shaping``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from kbseek.config import Limits, Settings
from kbseek.embed.base import Embedder
from kbseek.facade import shaping
from kbseek.facade.catalog import Catalog, ResourceText
from kbseek.facade.hashes import fetch_with_hashes, search_with_hashes
from kbseek.facade.live_config import LiveConfig, PathArg
from kbseek.facade.notes import Notes
from kbseek.facade.paths import check_reader, copy_index_to, open_index, prepare_index_dir, resolve_index_dir
from kbseek.facade.related import Related
from kbseek.facade.request import search_request
from kbseek.facade.response_cap import Measure, fit_search, json_size
from kbseek.facade.retrieval import Retrieval
from kbseek.facade.runner import IndexListener, IndexRunner
from kbseek.facade.semantic import SEARCH_PATIENCE, SemanticLeg
from kbseek.filters import Filters
from kbseek.ingest.copying import CopyReport
from kbseek.ingest.indexer import IndexReport
from kbseek.progress import ProgressListener
from kbseek.responses import (
    DocumentResponse,
    FetchResponse,
    IndexSummary,
    RecentDocuments,
    RelatedResponse,
    SearchResponse,
    StatusResponse,
    TopicsResponse,
)
from kbseek.search.keywords import KeywordScale
from kbseek.search_query import SearchQuery
from kbseek.store.base import Store


class KnowledgeBase:
    """Index, search and read one knowledge base (a folder of Markdown and text notes).

    ::

        from kbseek import KnowledgeBase

        with KnowledgeBase("~/notes") as kb:
            kb.index()                                   # incremental: only changed files are read
            hits = kb.search("how do I roll back a release").hits
            passages = kb.fetch([hits[0].chunk_id], context=1).passages
            text = kb.read_document(hits[0].path).text

    Every answer is a pydantic model (``kbseek.responses``) whose ``notes`` say what was capped, cut
    or is missing. Searches and reads first pick up files changed on disk (T10).

    The embedding model loads the first time ``index()`` or ``search()`` needs it (about a second
    for the bundled model); if it cannot load, both keep working by keywords and ``status()`` says
    why. A server calls ``start_background()`` instead, so its handshake never waits for a model.

    Thread-safe: any thread may call any method; passes run one at a time (``kbseek.facade.runner``).
    """

    def __init__(
        self, root: PathArg | None = None, *, config: PathArg | None = None, index_dir: PathArg | None = None,
        semantic: bool | None = None, settings: Settings | None = None, embedder: Embedder | None = None,
        read_only: bool = False, store: str | None = None, kb_name: str | None = None, allow_write: bool = False,
    ) -> None:  # fmt: skip
        """Open the knowledge base at ``root`` (``~`` is expanded), creating its index folder.

        ``config``: a ``kbseek.toml`` to read (and re-read when it changes); it may name the root.
        ``index_dir``: the index's folder (default ``<root>/.kbseek``, or the user cache dir for a folder
        you cannot write). ``semantic=False``: keywords only. ``settings``: resolved settings instead of
        those four. ``embedder``: a model of your own (tests). ``read_only``: only look, create nothing.
        ``store``, ``kb_name``: a PostgreSQL URL to keep the index in (``[store]``), and the name in it.
        ``allow_write``: let agents write notes, as ``[write] enabled`` does (``serve --allow-write``).
        Raises :class:`~kbseek.errors.ConfigError`, saying what to change, before touching anything."""
        self._live = LiveConfig.resolve(
            root, config=config, index_dir=index_dir, semantic=semantic, settings=settings,
            store_url=store, kb_name=kb_name, allow_write=allow_write,
        )  # fmt: skip
        settings = self._live.settings
        check_reader(settings, read_only=read_only)
        self.index_dir: Path = resolve_index_dir(settings)
        self.read_only = read_only
        if not read_only:
            prepare_index_dir(self.index_dir)
        self.store: Store = open_index(settings, self.index_dir, read_only=read_only)
        """The index itself, for tools below this API (tests, benchmarks); surfaces never need it."""
        folder = None if read_only else self.index_dir  # where an approximate dense index is saved
        self._semantic = SemanticLeg(embedder, self.store, settings, folder)  # builds [embed]'s model
        self._runner = IndexRunner(
            self.store, self.index_dir, self._live, self._semantic, read_only=read_only
        )
        self._catalog = Catalog(self.store, self._live)
        self._retrieval = Retrieval(self.store, self._live, self._semantic, self._catalog)
        self._related = Related(self.store, self._live, self._semantic)
        self._notes = Notes(
            self._live, self.store, self.index_dir, read_only=read_only, index=self._runner.index_written
        )

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the watcher, let a background pass finish, and release the index."""
        self._runner.close()
        self._semantic.close()
        self.store.close()

    # -- settings and state ------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The settings in force now (a running server re-reads its config file)."""
        return self._live.settings

    @property
    def limits(self) -> Limits:
        return self._live.limits

    @property
    def root(self) -> Path | None:  # None: a server reading a database index without the files
        return self._live.settings.root

    @property
    def index_path(self) -> str:  # where the index lives, as a message names it (file or database)
        return self.store.location

    @property
    def last_report(self) -> IndexReport | None:
        """What the last finished pass did, whoever started it."""
        return self._runner.last_report

    watcher_state = property(
        lambda self: self._runner.watcher_state, doc="The file watcher's state, in words."
    )

    @property
    def semantic_error(self) -> str | None:
        """Why semantic search is unavailable, in words to show a person; ``None`` when it is not."""
        return self._semantic.error

    @property
    def model_mismatch(self) -> bool:
        """The index holds another model's vectors: passes switch them (0040); ``reembed`` drops them."""
        return self._semantic.switching_from is not None

    def summary(self) -> IndexSummary:
        """How much is indexed and searchable semantically right now: the ``index`` of every response."""
        return self._runner.summary()

    def status(self, *, max_skipped: int = 50) -> StatusResponse:
        """Everything a person needs to trust the index: counts, coverage, skips, errors, what to run."""
        return self._notes.with_last_writes(self._runner.status(max_skipped=max_skipped))

    def readiness(self) -> str | None:
        """``None`` when it can be served now, else why not (a load balancer's readiness probe)."""
        return self._runner.readiness()

    def nothing_found_note(self) -> str:
        """Why an indexed knowledge base is empty, and the two ways out: add notes, or loosen exclusions."""
        return self._runner.nothing_found_note()

    # -- indexing ----------------------------------------------------------------------------------

    def index(
        self, *, progress: ProgressListener | None = None, prune_disabled: bool = True, embed: bool = True,
        reembed: bool = False, take_over: bool = False,
    ) -> IndexReport:  # fmt: skip
        """Bring the index in line with the files: one incremental pass (after a running one finishes).

        ``progress`` gets ``status``'s snapshots. ``embed=False``: no vectors yet. ``reembed``: drop every
        vector first (else a model change runs in the background, decision 0040). ``prune_disabled=False``
        keeps disabled formats' rows. Raises ``IndexLocked`` when another process writes it; its
        ``WrittenElsewhere`` for a shared index written from another folder, unless ``take_over``."""
        load = self._semantic.ensure_loaded if embed and not self.read_only else None
        return self._runner.index(
            progress=progress, prune_disabled=prune_disabled, embed=embed, reembed=reembed, load_model=load,
            take_over=take_over,
        )  # fmt: skip

    def claim_writer(self, *, take_over: bool = False) -> str | None:
        """A serving writer's start: keep a shared index's writer lock while serving (``IndexRunner``)."""
        return self._runner.claim_writer(take_over=take_over)

    def refresh(self) -> None:
        """Index files changed since the last look, if any; never waits for a running pass (T10)."""
        self._runner.refresh()

    def load_semantic(self) -> None:
        """Load the embedding model now rather than on first need (to show progress while it loads)."""
        self._semantic.load()

    def start_background(self) -> None:
        """A server's start: catch up by keywords, load the model, then embed, all on a thread of its own."""
        self._runner.start_background()

    def start_watching(self) -> None:
        """Index edits as they happen (a file watcher thread) instead of only before the next call."""
        self._runner.start_watching()

    def on_index_change(self, listener: IndexListener) -> None:
        """Call ``listener(report)`` after every pass that changed the index, on the pass's thread."""
        self._runner.on_index_change(listener)

    def copy_index(self, to: str, *, kb_name: str | None = None) -> CopyReport:
        """This index, vectors included, into an empty one: a ``postgresql://`` URL or a SQLite file."""
        return copy_index_to(self.store, to, kb_name=kb_name, settings=self.settings)

    def reload_settings(self) -> None:
        """Re-read the config file now; what needs a restart is named in ``status().notes``."""
        self._live.reload()

    # -- answers -----------------------------------------------------------------------------------

    def search(
        self, query: str | SearchQuery, *, limit: int | None = None, filters: Filters | None = None,
        sort: str = "relevance", snippet_chars: int | None = None, explain: bool = False,
        also: Sequence[str] = (), scale: KeywordScale | None = None, measure: Measure | None = json_size,
    ) -> SearchResponse:  # fmt: skip
        """Ranked hits for a question or keywords in any language, snippets centred on the match, within
        ``filters`` (``kbseek.Filters``); ``sort="newest"``: newest first, and with no query a listing.
        Omitted ``limit``/``snippet_chars`` take today's default; values past the caps are clamped (``notes``).
        ``explain``: each leg's rank and score. ``also``: other phrasings (the other language, keywords, an
        answer). ``query`` may be a whole ``SearchQuery``. ``scale``: :meth:`keyword_scale`. ``measure``:
        how the response is sized against its cap (``None``: not fitted; whoever merges answers fits)."""
        asked = SearchQuery.of(
            query, limit=limit, filters=filters, sort=sort, snippet_chars=snippet_chars, explain=explain,
            also=also,
        )  # fmt: skip
        self._semantic.ensure_loaded(SEARCH_PATIENCE)
        self._runner.refresh()
        r = self._retrieval.search(search_request(self.limits, asked), self.summary, scale)
        if self.settings.write.enabled:
            r = search_with_hashes(r, self.store)
        return r if measure is None else fit_search(r, self.limits.max_response_chars, measure)

    def keyword_scale(self, query: SearchQuery) -> KeywordScale:
        """This collection's keyword legs for ``query`` and its best match: ``Library.search`` passes each
        collection its own, sharing the widest (``KeywordScale.sharing``), so each leg runs once (0037)."""
        self._semantic.ensure_loaded(SEARCH_PATIENCE)
        self._runner.refresh()
        return self._retrieval.keyword_scale(search_request(self.limits, query))

    def fetch(self, chunk_ids: Sequence[str], *, context: int | None = None) -> FetchResponse:
        """The full passages of hits by ``chunk_id``, with ``context`` neighbouring chunks on each side;
        an id from before an edit is reported in ``missing`` as stale, never resolved to other text."""
        self._runner.refresh()
        r = self._catalog.fetch(shaping.fetch_args(self.limits, chunk_ids, context))
        return fetch_with_hashes(r, self.store) if self.settings.write.enabled else r

    def read_document(self, path: str, *, offset: int = 0, max_chars: int | None = None) -> DocumentResponse:
        """A document by root-relative path, indexed or not (D1), a window of ``max_chars`` at a time;
        a refusal (outside the root, a link, no parser, too large) raises a ``DocumentRefused`` saying why."""
        return self._catalog.read_document(path, offset=offset, max_chars=max_chars)

    def related(
        self, path: str | None = None, *, chunk_id: str | None = None, limit: int | None = None,
        links: bool = True,
    ) -> RelatedResponse:  # fmt: skip
        """Documents related to ``path`` or ``chunk_id`` by links and by vectors, each saying why
        (``kbseek.facade.related``); ``links=False``: by vectors alone."""
        self._semantic.ensure_loaded()
        self._runner.refresh()
        return self._related.related(path=path, chunk_id=chunk_id, limit=limit, links=links)

    def topics(self) -> TopicsResponse:
        """What the knowledge base covers: documents grouped by their first one or two folders."""
        self._runner.refresh()
        return self._catalog.topics(self.summary())

    def recent_documents(self, since_ts: float, since_date: str, *, limit: int = 50) -> RecentDocuments:
        """New since a moment, by frontmatter date (``since_date``) and by index time, kept apart."""
        self._runner.refresh()
        return self._catalog.recent_documents(since_ts, since_date, limit=limit, summary=self.summary())

    # -- resources (what an MCP server offers, D2-D4) ----------------------------------------------

    def servable_document_paths(self, among: Collection[str] | None = None) -> list[str]:
        """Indexed paths a resource read serves; the one servable predicate (D4)."""
        return self._catalog.servable_document_paths(among)

    def read_resource_document(self, path: str) -> ResourceText:
        """A document as a resource: only if offered (D3), cut at the resource cap with a note (D7)."""
        self._runner.refresh()
        return self._catalog.read_resource_document(path)

    def topic_groups(self) -> list[tuple[str, int]]:
        """(prefix, servable documents) per topic: the resource listing."""
        self._runner.refresh()
        return self._catalog.topic_groups()

    def topic_body(self, prefix: str) -> str | None:
        """A topic resource's Markdown list of documents; ``None`` when no such topic is offered."""
        self._runner.refresh()
        return self._catalog.topic_body(prefix)

    # -- below the API -----------------------------------------------------------------------------

    @property
    def notes(self) -> Notes:
        """Agents' writes to notes: ``write``, ``edit``, ``move``, ``delete`` (decision 0058)."""
        return self._notes

    def retrieval(self) -> Retrieval:
        """The search legs themselves (store, model, dense index, fusion), for benchmarks and eval."""
        return self._retrieval
