"""Settings, resolved once at the edge and handed to the ``KnowledgeBase`` as a frozen value.

Precedence: command-line flag > ``KBSEEK_*`` environment variable (read by the
CLI, never by the library) > ``kbseek.toml`` > default. A config file is strict:
an unknown key is an error naming the key, because a misspelt option that is
silently ignored is a setting the user believes is on.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kbseek.audit_spec import AuditSpec
from kbseek.auth_spec import AuthSpec
from kbseek.dates import DATE_FIELDS
from kbseek.embed.base import EmbedderSpec
from kbseek.errors import ConfigError
from kbseek.ingest.chunker import ChunkOptions
from kbseek.ingest.filenames import (
    CONFIG_FILENAME as CONFIG_FILENAME,  # re-exported: callers know them from here
)
from kbseek.ingest.filenames import IGNORE_FILENAME as IGNORE_FILENAME
from kbseek.ingest.filenames import INDEX_DIRNAME as INDEX_DIRNAME
from kbseek.ingest.parsers import AVAILABLE_PARSERS, DEFAULT_ENABLED
from kbseek.rerank.base import RerankSpec
from kbseek.store.opening import is_database_url
from kbseek.write_spec import WriteSpec

MiB = 1024 * 1024
MAX_ALSO_CEILING = 8
"""``[limits].max_also`` above this would let one call cost as many searches as a caller likes."""

FUSIONS = ("blend", "learned", "rrf")
"""``[search].fusion``: how the two legs become one ranking (``search.fusion``, ``search.ranker``)."""


@dataclass(frozen=True)
class Limits:
    """Every cap the server enforces on what an agent may ask for (T3).

    ``default_*`` is what an omitted argument means; ``max_*`` is the clamp.
    """

    default_limit: int = 5
    """Hits a search returns when the caller does not say: enough to choose from (the answer is among
    the first five for 99 questions in 100 when an agent sends ``also``, held-out development sets),
    and each hit is paid for in the agent's context window (decision 0035)."""
    max_limit: int = 50
    """The most hits one search may ask for (``limit``); a larger ``limit`` is lowered to it, with a
    note. ``sort = "newest"`` also orders at most this many of the best matches by date."""
    default_snippet_chars: int = 300
    """Characters of text shown with each hit when a search does not give ``snippet_chars``."""
    max_snippet_chars: int = 1200
    """The largest ``snippet_chars`` a search may ask for (the smallest is 40); beyond it, lowered with
    a note."""
    default_context: int = 1
    """Neighbouring chunks on each side of every requested chunk that a ``fetch`` returns when the
    caller does not say; ``0``: the requested chunks alone."""
    max_context: int = 5
    """The largest ``context`` a ``fetch`` may ask for; beyond it, lowered with a note."""
    max_chunk_ids: int = 20
    """Chunk ids one ``fetch`` takes; the ids after the first this many are not fetched, and a note
    says so."""
    max_fetch_chars: int = 24_000
    """Characters of passage text one ``fetch`` returns in all; the passage that reaches it is cut, with
    a note giving the offset to read on from with ``get_document``."""
    default_document_chars: int = 40_000
    """Characters ``get_document`` returns from its ``offset`` when the caller gives no ``max_chars``;
    a document that goes on says where the rest starts (``next_offset``)."""
    max_document_chars: int = 200_000
    """The largest ``max_chars`` a ``get_document`` call may ask for; beyond it, lowered with a note."""
    max_response_chars: int = 60_000
    """The most characters a search or fetch response may take as sent (its JSON, with the text beside
    it where a surface sends both): past it a search drops its last hits and a fetch shortens its last
    passages, with a note. ``related`` gets half of it."""
    max_query_chars: int = 2000
    """The longest query (and each ``also`` phrasing) a search takes, in characters: a question, or a
    paragraph pasted as one. A longer one is refused with a message rather than read, since every
    character costs time in the keyword and bilingual legs before any term cap applies."""
    max_query_terms: int = 32
    """Distinct searchable terms of a query (and of each ``also`` phrasing) the keyword search uses, the
    first ones first; the rest are dropped with a note, which bounds what a very long query costs."""
    max_hits_per_document: int = 3
    """Hits one document may take in a search's results while other matching documents wait for a
    place; once every matching document is shown, any room left goes to more chunks of them."""
    max_also: int = 3
    """Alternative phrasings a search takes besides its query (``also``); each runs both legs again, so
    it multiplies a search's cost. ``0`` turns alternatives off (they are dropped with a note)."""
    max_topics: int = 200
    """Topics (documents grouped by their first two folder levels) ``list_topics`` lists; the rest are
    left out with a note."""
    max_titles_per_topic: int = 10
    """Document titles ``list_topics`` shows per topic, newest first; the others are counted
    (``more_titles``) and a search with that ``path_prefix`` finds them."""
    max_resource_bytes: int = 1024 * 1024
    """Indexed documents larger than this (recorded size) are not offered as resources (D3)."""
    max_resource_chars: int = 1024 * 1024
    """A resource read returns at most this much text, then a delimited note (D7)."""

    def __post_init__(self) -> None:
        may_be_zero = ("default_context", "max_also")
        for f in fields(self):
            if getattr(self, f.name) < 0 or (f.name not in may_be_zero and getattr(self, f.name) == 0):
                raise ConfigError(f"[limits].{f.name} must be positive")
        if self.max_also > MAX_ALSO_CEILING:
            raise ConfigError(
                f"[limits].max_also must be at most {MAX_ALSO_CEILING}: every phrasing is a search of its own"
            )
        pairs = [
            ("default_limit", "max_limit"),
            ("default_snippet_chars", "max_snippet_chars"),
            ("default_context", "max_context"),
            ("default_document_chars", "max_document_chars"),
        ]
        for low, high in pairs:
            if getattr(self, low) > getattr(self, high):
                raise ConfigError(f"[limits].{low} must not exceed [limits].{high}")


@dataclass(frozen=True)
class Settings:
    """Everything kbseek needs to know about one knowledge base."""

    root: Path | None
    """The folder of notes. ``None``: a server that only reads an index kept in a database, on a
    machine without the files, serving the text the index holds (docs/decisions/0031)."""
    index_dir: Path | None = None
    """Where the index lives; ``None`` means ``<root>/.kbseek`` (or the user cache dir if read-only)."""
    exclude_dirs: tuple[str, ...] = ()
    """Folder names or root-relative folder paths kept out of the index (never out of reads, D1)."""
    max_file_bytes: int = 4 * MiB
    """Files larger than this are skipped by indexing and refused by the document guard."""
    parsers: tuple[str, ...] = DEFAULT_ENABLED
    """The parsers, by name, whose files are indexed and read: ``md`` (``.md``, ``.markdown``, ``.mdx``),
    ``txt``, ``docx``, ``xlsx``, ``ipynb``, and, off by default, ``pdf`` and ``pptx`` (each needs its
    extra, ``kbseek[pdf]`` or ``kbseek[pptx]``) and ``html`` (a folder's HTML is usually a built site)."""
    chunking: ChunkOptions = field(default_factory=ChunkOptions)
    """How documents are cut into chunks, in characters (the ``[chunking]`` table, ``ChunkOptions``); after
    a change the next pass reads every file again, since the index records the sizes it was cut with."""
    limits: Limits = field(default_factory=Limits)
    """The caps on what one call may ask for and return (the ``[limits]`` table, ``Limits``)."""
    embed: EmbedderSpec = field(default_factory=EmbedderSpec)
    """The embedding model of the semantic leg (the ``[embed]`` table, ``EmbedderSpec``); unused when
    ``semantic`` is false. Another model re-embeds every chunk in the background while the old
    vectors keep answering (docs/decisions/0040)."""
    semantic: bool = True
    """``False`` runs lexical-only and never loads a model."""
    fusion: str = "blend"
    """``"blend"`` (weighted normalised scores), ``"learned"`` (the blend's best candidates reordered
    by the shipped ranking model, ``search.ranker``) or ``"rrf"`` (reciprocal rank fusion)."""
    dense_weight: float = 0.85
    """The dense leg's share of a blended score when no lexical candidate covers the query."""
    dense_weight_matched: float = 0.2
    """Its share when one covers all of the query's terms; between the two it moves linearly."""
    rrf_k: int = 60
    """With ``fusion = "rrf"`` only: the ``k`` of reciprocal rank fusion, where each leg adds
    ``1 / (k + rank)`` to a chunk's score; a larger ``k`` narrows the gap between the top ranks and
    the rest."""
    far_ahead: float = 0.5
    """A second chunk of a document keeps its rank only at ``1 + far_ahead`` times the next new
    document's score; otherwise distinct documents come first (docs/decisions/0012). ``inf``: never."""
    also_agreement: float = 0.3
    """With alternative phrasings (``also``), a chunk scores its best phrasing's score plus this share
    of the mean of the other phrasings' scores for it, so agreement between phrasings counts
    (docs/decisions/0025). ``0``: the best phrasing alone."""
    bridge_weight: float = 0.5
    """The weight, beside the query's own legs, of a keyword search for the query's words in the
    other language (Japanese for English, English for Japanese) found in the shipped bilingual
    lexicon and held by the index (docs/decisions/0027). ``0``: no bridge."""
    freshness_interval_s: float = 1.0
    """Minimum time between two stat scans made before answering a call (T10), when no watcher runs."""
    reconcile_interval_s: float = 300.0
    """While the file watcher runs: time between two full stat scans on a background thread, which
    recover what the watcher missed (an overflowed event queue, a change before it started) without
    putting a scan on any call's path (docs/decisions/0015)."""
    store_url: str | None = None
    """A ``postgresql://`` URL to keep the index in PostgreSQL (one database for a
    team, ``kbseek[postgres]``); ``None`` keeps it in a SQLite file under :attr:`index_dir`."""
    kb_name: str | None = None
    """The knowledge base's name in that database (its schema); ``None`` derives
    it from the root folder's name (``store.opening.kb_name_of``)."""
    approximate_above: int = 100_000
    """Above this many chunk vectors the dense leg searches an approximate (HNSW, int8) index saved
    beside the index instead of scanning every vector exactly (docs/decisions/0017); ``0``: always."""
    date_fields: tuple[str, ...] = DATE_FIELDS
    """The front-matter fields a document's date is read from, the first present first; failing all,
    its file's modification time (``kbseek.dates``). A change has every file re-read once."""
    rerank: RerankSpec = field(default_factory=RerankSpec)
    """A cross-encoder that re-orders the best fused candidates, within a time budget;
    off unless a provider is set (docs/decisions/0038)."""
    auth: AuthSpec = field(default_factory=AuthSpec)
    """Sign-in for ``serve --http`` (the ``[auth]`` table, ``AuthSpec``): the issuer, the public
    resource URL, the scopes and the static tokens; unset, no token is asked for (docs/decisions/0054)."""
    audit: AuditSpec = field(default_factory=AuditSpec)
    """The record of who read what, kept by a server with sign-in (the ``[audit]`` table,
    ``AuditSpec``): where, whether query text is in it, and its rotation (docs/decisions/0055)."""
    write: WriteSpec = field(default_factory=WriteSpec)
    """Whether agents may write notes, and where (the ``[write]`` table, ``WriteSpec``); off
    unless asked."""

    def __post_init__(self) -> None:
        # A library caller writes Settings(root="~/notes"): a string (or any os.PathLike) is taken as
        # the path it names, as KnowledgeBase("~/notes") takes it, instead of failing later on
        # str.is_dir.
        for name in ("root", "index_dir"):
            value = getattr(self, name)
            if value is None or isinstance(value, Path):
                continue
            if not isinstance(value, str | os.PathLike):
                raise ConfigError(f"Settings.{name} must be a path, not {type(value).__name__} {value!r}")
            object.__setattr__(self, name, Path(value).expanduser())
        if self.max_file_bytes <= 0:
            raise ConfigError("max_file_bytes must be a positive number of bytes")
        unknown = [name for name in self.parsers if name not in AVAILABLE_PARSERS]
        if unknown:
            raise ConfigError(
                f"unknown parser(s) {', '.join(unknown)} in [parsers].enabled; "
                f"available: {', '.join(AVAILABLE_PARSERS)}"
            )
        if self.fusion not in FUSIONS:
            raise ConfigError(
                f"[search].fusion must be one of {', '.join(map(repr, FUSIONS))}, not {self.fusion!r}"
            )
        for name in ("dense_weight", "dense_weight_matched"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"[search].{name} must be between 0 and 1, not {getattr(self, name)}")
        if self.rrf_k <= 0:
            raise ConfigError("[search].rrf_k must be positive")
        if not self.far_ahead >= 0:  # also refuses NaN
            raise ConfigError(f"[search].far_ahead must be 0 or more (inf: never), not {self.far_ahead}")
        if not 0 <= self.also_agreement < math.inf:  # also refuses NaN
            raise ConfigError(
                f"[search].also_agreement must be a finite number, 0 or more, not {self.also_agreement}"
            )
        if not 0 <= self.bridge_weight < math.inf:  # also refuses NaN
            raise ConfigError(
                f"[search].bridge_weight must be a finite number, 0 or more, not {self.bridge_weight}"
            )
        if self.freshness_interval_s < 0:
            raise ConfigError("[index].freshness_interval must not be negative")
        if not 0 < self.reconcile_interval_s < math.inf:  # also refuses NaN
            raise ConfigError(
                "[index].reconcile_interval must be a finite number of seconds above 0, "
                f"not {self.reconcile_interval_s}"
            )
        if self.store_url is not None and not is_database_url(self.store_url):
            raise ConfigError(
                "[store].url must be a PostgreSQL URL (postgresql://user@host/database); "
                "leave it out to keep the index in a SQLite file beside the notes"
            )
        if not self.date_fields or not all(isinstance(f, str) and f.strip() for f in self.date_fields):
            raise ConfigError(
                f"[index].date_fields must be a list of front-matter field names, e.g. {list(DATE_FIELDS)}"
            )
        if self.approximate_above < 0:
            raise ConfigError(
                f"[index].approximate_above must be 0 (always approximate) or more, not {self.approximate_above}"
            )


@dataclass(frozen=True)
class Key:
    """One config-file key and the :class:`Settings` field it sets.

    The table below is the whole config-file layout: the loader checks keys against it, the
    builder types and copies values by it, and a running server learns from it which settings it
    may apply without a restart. A new option is a field on ``Settings`` and one line here.
    """

    table: str | None
    """The ``[table]`` the key sits in; ``None`` for a top-level key."""
    name: str
    field: str
    kind: type
    reloadable: bool
    """Whether a running server applies a change to it when the config file changes."""

    @property
    def label(self) -> str:
        return f"[{self.table}].{self.name}" if self.table else self.name


KEYS: tuple[Key, ...] = (
    Key(None, "exclude_dirs", "exclude_dirs", tuple, reloadable=True),
    Key(None, "max_file_bytes", "max_file_bytes", int, reloadable=True),
    Key(None, "semantic", "semantic", bool, reloadable=False),
    Key("parsers", "enabled", "parsers", tuple, reloadable=True),
    Key("search", "fusion", "fusion", str, reloadable=True),
    Key("search", "dense_weight", "dense_weight", float, reloadable=True),
    Key("search", "dense_weight_matched", "dense_weight_matched", float, reloadable=True),
    Key("search", "rrf_k", "rrf_k", int, reloadable=True),
    Key("search", "far_ahead", "far_ahead", float, reloadable=True),
    Key("search", "also_agreement", "also_agreement", float, reloadable=True),
    Key("search", "bridge_weight", "bridge_weight", float, reloadable=True),
    Key("index", "freshness_interval", "freshness_interval_s", float, reloadable=True),
    Key("index", "reconcile_interval", "reconcile_interval_s", float, reloadable=True),
    Key("index", "approximate_above", "approximate_above", int, reloadable=False),
    Key("index", "date_fields", "date_fields", tuple, reloadable=False),
    Key("store", "url", "store_url", str, reloadable=False),
    Key("store", "name", "kb_name", str, reloadable=False),
)

SECTIONS: dict[str, tuple[type, bool]] = {
    "chunking": (ChunkOptions, False),
    "limits": (Limits, True),
    "embed": (EmbedderSpec, False),
    "rerank": (RerankSpec, True),
    "auth": (AuthSpec, False),
    "audit": (AuditSpec, False),
    "write": (WriteSpec, False),
}
"""Tables that fill a settings object of their own, field by field: table → (its class, reloadable)."""

_PATHS = ("kb", "index_dir")
"""Top-level keys naming folders, resolved against the config file's folder."""
_MODEL_FOLDERS = ("embed", "rerank")
"""Tables whose ``model`` may be a folder: written ``./…`` or ``../…``, it is resolved against the
config file's folder too, so a server started from another directory finds the same model."""

RELOADABLE: tuple[str, ...] = (
    *(k.field for k in KEYS if k.reloadable),
    *(table for table, (_, reloadable) in SECTIONS.items() if reloadable),
)
"""Settings a running server applies when its config file changes."""

RESTART_NEEDED: tuple[str, ...] = (
    "root",
    "index_dir",
    *(k.field for k in KEYS if not k.reloadable),
    *(table for table, (_, reloadable) in SECTIONS.items() if not reloadable),
)
"""Settings a running process keeps as it started with; a change to them waits for a restart."""

_TOP_LEVEL = set(_PATHS) | {k.name for k in KEYS if k.table is None}
_TABLES: dict[str, set[str]] = {
    **{table: {f.name for f in fields(cls)} for table, (cls, _) in SECTIONS.items()},
    **{table: {k.name for k in KEYS if k.table == table} for table in {k.table for k in KEYS} if table},
}


def find_config(cwd: Path) -> Path | None:
    """The ``kbseek.toml`` in ``cwd``, if there is one."""
    candidate = cwd / CONFIG_FILENAME
    return candidate if candidate.is_file() else None


def load_config_file(path: Path) -> dict[str, Any]:
    """Parse and validate a config file into keyword overrides for :func:`build_settings`."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc

    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [{key}] must be a table")
            unknown = sorted(set(value) - _TABLES[key])
            if unknown:
                raise ConfigError(
                    f"{path}: unknown key {unknown[0]!r} in [{key}]; "
                    f"known keys: {', '.join(sorted(_TABLES[key]))}"
                )
            out[key] = dict(value)
        elif key == "kb" and isinstance(value, list):
            out["collections"] = value  # [[kb]] tables: several collections (kbseek.library reads them)
        elif key in _TOP_LEVEL:
            out[key] = value
        else:
            known = sorted(_TOP_LEVEL | {f"[{t}]" for t in _TABLES})
            raise ConfigError(f"{path}: unknown key {key!r}; known keys: {', '.join(known)}")

    base = path.parent
    for key in ("kb", "index_dir"):
        if key in out:
            if not isinstance(out[key], str):
                raise ConfigError(f"{path}: {key} must be a string path")
            out[key] = (base / Path(out[key]).expanduser()).resolve()
    for table in _MODEL_FOLDERS:
        model = out.get(table, {}).get("model")
        if isinstance(model, str) and model.startswith(("./", "../")):
            out[table]["model"] = str((base / model).resolve())
    return out


def _typed(label: str, value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is tuple:
        if isinstance(value, tuple):  # given by a caller, already typed
            value = list(value)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{label} must be a list of strings")
        return tuple(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{label} must be of type {expected.__name__}, not {value!r}")
    return value


def _section(cls: type, section: str, values: dict[str, Any]) -> Any:
    defaults = cls()
    typed = {}
    for f in fields(cls):
        if f.name in values:
            current = getattr(defaults, f.name)
            if current is None:  # optional setting: the section's own validation checks it
                typed[f.name] = values[f.name]
            else:
                typed[f.name] = _typed(f"[{section}].{f.name}", values[f.name], type(current))
    try:
        return replace(defaults, **typed)
    except ValueError as exc:
        raise ConfigError(f"[{section}]: {exc}") from exc


def table_of(file_values: dict[str, Any], table: str) -> Any:
    """One ``SECTIONS`` table of a parsed config file as :func:`build_settings` reads it (its
    defaults when the file has none), for a check of that table alone: ``kbseek doctor --auth``
    checks ``[auth]`` without needing a knowledge base."""
    cls, _ = SECTIONS[table]
    return _section(cls, table, file_values[table]) if table in file_values else cls()


def build_settings(
    *,
    root: Path | None,
    index_dir: Path | None = None,
    file_values: dict[str, Any] | None = None,
    semantic: bool | None = None,
    store_url: str | None = None,
    kb_name: str | None = None,
    allow_write: bool = False,
) -> Settings:
    """Combine explicit values (flags/environment) with config-file values and defaults.

    ``allow_write``: ``serve --allow-write``, which turns ``[write]`` on over the file."""
    fv = dict(file_values or {})
    if allow_write:
        fv["write"] = {**fv.get("write", {}), "enabled": True}
    kb = root if root is not None else fv.get("kb")
    url = store_url if store_url is not None else fv.get("store", {}).get("url")
    if kb is None and url is not None:
        kb_dir: Path | None = None  # a reader of a database index: no files (checked by KnowledgeBase)
    elif kb is None:
        raise ConfigError(
            "no knowledge base given: pass --kb PATH, set KBSEEK_KB, "
            f'or put kb = "PATH" in {CONFIG_FILENAME} in the current directory'
        )
    else:
        kb_dir = Path(kb).expanduser().resolve()
        if not kb_dir.exists():
            raise ConfigError(
                f"knowledge base folder {kb_dir} does not exist: pass the folder that holds your notes "
                "(create it first for a new knowledge base)"
            )
        if not kb_dir.is_dir():
            raise ConfigError(f"knowledge base {kb_dir} is not a folder")

    kwargs: dict[str, Any] = {"root": kb_dir}
    idx = index_dir if index_dir is not None else fv.get("index_dir")
    if idx is not None:
        kwargs["index_dir"] = Path(idx).expanduser().resolve()
    explicit = {"semantic": semantic, "store_url": url, "kb_name": kb_name}
    for key in KEYS:
        value = explicit.get(key.field)
        if value is None:
            table = fv if key.table is None else fv.get(key.table, {})
            if key.name not in table:
                continue
            value = table[key.name]
        kwargs[key.field] = _typed(key.label, value, key.kind)
    for table, (cls, _) in SECTIONS.items():
        if table in fv:
            kwargs[table] = _section(cls, table, fv[table])
    return Settings(**kwargs)


@dataclass(frozen=True)
class SettingsSource:
    """How the settings were made (flags and a config file), so a server can read them again.

    A running server re-reads its config file when it changes; the flags given at
    start stay as they were, and keep their precedence over the file.
    """

    config_path: Path | None
    root: Path | None = None
    index_dir: Path | None = None
    semantic: bool | None = None
    store_url: str | None = None
    kb_name: str | None = None
    allow_write: bool = False

    def load(self) -> Settings:
        file_values = load_config_file(self.config_path) if self.config_path else {}
        return build_settings(
            root=self.root, index_dir=self.index_dir, file_values=file_values, semantic=self.semantic,
            store_url=self.store_url, kb_name=self.kb_name, allow_write=self.allow_write,
        )  # fmt: skip
