"""The settings in force while kbseek runs, and re-reading them when the config file changes.

A server runs for days; a person edits ``kbseek.toml`` meanwhile and expects the edit to apply
without a restart. What a running process can apply (``config.RELOADABLE``: exclusions, parsers,
limits, fusion, freshness) is swapped in; what it cannot (the root, the index folder, the model,
chunking, ``approximate_above``) is named in ``index_status`` as waiting for a restart. A broken
file keeps the old settings and says why, since a typo in an editor must never take a running server down.

The settings and the parser registry built from them are swapped as one value (:class:`Active`),
so no reader can see the new settings with the old parsers, and a registry that cannot be built
(an unknown parser name) leaves both as they were.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from kbseek.config import RELOADABLE, RESTART_NEEDED, Limits, Settings, SettingsSource
from kbseek.errors import ConfigError, KbError
from kbseek.ingest.parsers import Registry
from kbseek.search import ranker
from kbseek.search.request import SearchPolicy

log = logging.getLogger(__name__)

PathArg = str | os.PathLike[str]


@dataclass(frozen=True)
class Active:
    """The settings in force and the parser registry built from them: replaced together, never apart.

    :attr:`policy` is how every search under these settings ranks, built once with them, so a
    search reads one consistent set of weights and caps even while a reload swaps the settings.
    """

    settings: Settings
    registry: Registry
    policy: SearchPolicy = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "policy", search_policy(self.settings))


def search_policy(settings: Settings) -> SearchPolicy:
    """How searches rank and are bounded under ``settings`` (``[search]``, ``[limits]``)."""
    limits = settings.limits
    return SearchPolicy(
        fusion=settings.fusion, dense_weight=settings.dense_weight, matched_weight=settings.dense_weight_matched,
        rrf_k=settings.rrf_k, far_ahead=settings.far_ahead, also_agreement=settings.also_agreement,
        bridge_weight=settings.bridge_weight, max_terms=limits.max_query_terms,
        max_hits_per_document=limits.max_hits_per_document, max_limit=limits.max_limit,
        ranker=ranker.shipped() if settings.fusion == "learned" else None,
    )  # fmt: skip


class LiveConfig:
    """The one place every collaborator reads the current settings from.

    Readers take :attr:`active` (or a property) once per call and use that value throughout,
    so a reload in the middle of a call cannot mix old and new settings.
    """

    @classmethod
    def resolve(
        cls,
        root: PathArg | None,
        *,
        config: PathArg | None,
        index_dir: PathArg | None,
        semantic: bool | None,
        settings: Settings | None,
        store_url: str | None = None,
        kb_name: str | None = None,
        allow_write: bool = False,
    ) -> LiveConfig:
        """The settings a ``KnowledgeBase`` is opened with: given whole, or read from a config file and
        options (which a reload reads again). Raises :class:`ConfigError` for a missing root folder
        and, building the parser registry, for an unknown parser."""
        source: SettingsSource | None = None
        if settings is None:
            source = SettingsSource(
                _path(config, resolve=True), root=_path(root), index_dir=_path(index_dir), semantic=semantic,
                store_url=store_url, kb_name=kb_name, allow_write=allow_write,
            )  # fmt: skip
            settings = source.load()
        elif any(v is not None for v in (root, config, index_dir, semantic, store_url, kb_name)):
            raise TypeError("pass either settings= or root/config/index_dir/semantic/store, not both")
        if settings.root is not None and not settings.root.is_dir():
            raise ConfigError(
                f"knowledge base folder {settings.root} does not exist or is not a folder: "
                "pass the folder that holds your notes"
            )
        return cls(settings, source)

    def __init__(self, settings: Settings, source: SettingsSource | None = None) -> None:
        self.active = Active(settings, Registry(settings.parsers))
        self.source = source
        self.note: str | None = None
        """Why the config file is not (fully) applied, for ``index_status``; ``None`` when it is."""
        self._lock = threading.Lock()  # the watcher thread and a caller's freshness check may race
        self._seen = self._signature()

    @property
    def settings(self) -> Settings:
        return self.active.settings

    @property
    def registry(self) -> Registry:
        return self.active.registry

    @property
    def limits(self) -> Limits:
        return self.active.settings.limits

    @property
    def config_path(self) -> Path | None:
        return self.source.config_path if self.source is not None else None

    def _signature(self) -> tuple[int, int] | None:
        path = self.config_path
        try:
            st = path.stat() if path else None
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size) if st else None

    def reload_if_changed(self) -> None:
        """Re-read the config file if it changed since last seen.

        Checked on every watcher batch and every freshness scan: editors that save by renaming
        defeat a watch on the file itself, a stat does not.
        """
        if self.config_path is None:
            return
        with self._lock:
            seen = self._signature()
            if seen == self._seen:
                return
            self._seen = seen
            self._reload()

    def reload(self) -> None:
        """Read the config file again now and apply what a running process can (``config.RELOADABLE``)."""
        if self.source is None:
            return
        with self._lock:
            self._seen = self._signature()
            self._reload()

    def _reload(self) -> None:
        assert self.source is not None
        try:
            new = self.source.load()
            registry = Registry(new.parsers)
        except KbError as exc:
            self.note = f"the changed config file was not applied: {exc}"
            log.error("%s", self.note)
            return
        current = self.active.settings
        pending = [name for name in RESTART_NEEDED if getattr(new, name) != getattr(current, name)]
        applied = replace(current, **{name: getattr(new, name) for name in RELOADABLE})
        self.active = Active(applied, registry)
        self.note = (
            f"config changes to {', '.join(pending)} apply when kbseek is restarted" if pending else None
        )
        log.info("config file re-read%s", f"; {self.note}" if pending else "")


def _path(value: PathArg | None, *, resolve: bool = False) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    return path.resolve() if resolve else path
