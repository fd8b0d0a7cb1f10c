"""Every check in the order a fix usually has to happen, each run only when what it needs is there."""

from __future__ import annotations

import shlex

from kbseek.cli.doctor.configuration import check_config, check_model
from kbseek.cli.doctor.reranker import check_reranker
from kbseek.cli.doctor.result import CheckResult, DoctorOptions, broken, guarded, guarded_pair
from kbseek.cli.doctor.sqlite_index import check_index, check_permissions, check_writer_lock
from kbseek.cli.doctor.system import check_disk, check_python, check_watcher
from kbseek.config import Settings
from kbseek.embed import EmbedderSpec
from kbseek.facade.paths import resolve_index_dir
from kbseek.store.opening import kb_name_of


def run_doctor(options: DoctorOptions) -> list[CheckResult]:
    """Every check, in the order a fix usually has to happen; later ones skip when what they need failed."""
    results = [guarded("python", check_python)]
    config, settings = guarded_pair("config", lambda: check_config(options))
    results.append(config)

    model_id: str | None = None
    if settings is None:
        if options.lexical_only:
            results.append(_model_off("--lexical-only"))
        else:
            note = " (default model: the config did not parse)"
            results.append(guarded_pair("model", lambda: check_model(EmbedderSpec(), note=note))[0])
        results.extend(
            CheckResult(name, "skip", "needs a config that parses", "fix the config first")
            for name in ("reranker", "index", "permissions", "writer lock", "watcher", "disk")
        )
        return results
    if settings.semantic:
        model, model_id = guarded_pair("model", lambda: check_model(settings.embed))
        results.append(model)
    else:
        why = "--lexical-only" if options.lexical_only else "semantic = false in the config"
        results.append(_model_off(why))
    results.append(guarded("reranker", lambda: check_reranker(settings.rerank)))

    root = settings.root
    if settings.store_url is not None:
        results.extend(_postgres_checks(settings, options, model_id))
        if root is None:
            results.append(
                CheckResult("watcher", "skip", "no knowledge-base folder: this reads the index only")
            )
        else:
            results.append(guarded("watcher", lambda: check_watcher(root)))
        results.append(_disk_elsewhere())
        return results
    if root is None:  # the settings allow no folder only for an index in a database
        return results

    index_dir = resolve_index_dir(settings)
    command = index_command(settings, options)
    results.append(guarded("index", lambda: check_index(settings, model_id, command)))
    results.append(guarded("permissions", lambda: check_permissions(index_dir, command)))
    results.append(guarded("writer lock", lambda: check_writer_lock(index_dir)))
    results.append(guarded("watcher", lambda: check_watcher(root)))
    results.append(guarded("disk", lambda: check_disk(index_dir)))
    return results


def _postgres_checks(settings: Settings, options: DoctorOptions, model_id: str | None) -> list[CheckResult]:
    """The database, pgvector, the schema, and the advisory lock in place of the SQLite file's checks.

    The PostgreSQL driver is an extra, imported only here: a SQLite user's doctor never needs it.
    """
    assert settings.store_url is not None
    try:
        from kbseek.cli.doctor import postgres_store as pg
    except ImportError as exc:
        fix = "pip install 'kbseek[postgres]', or leave out --store and [store] url to use a SQLite index"
        missing = f"the PostgreSQL driver is not installed ({exc.name or exc})"
        return [CheckResult("database", "fail", missing, fix)] + [
            CheckResult(name, "skip", "needs the PostgreSQL driver", fix)
            for name in ("pgvector", "index", "permissions", "writer lock")
        ]
    name = settings.kb_name
    if name is None and settings.root is not None:
        name = kb_name_of(settings.root)
    command = pg.index_command(
        _index_parts(settings, options),
        settings.store_url,
        name or "NAME",
        url_given=options.store_url is not None,
    )
    try:
        return pg.postgres_checks(settings.store_url, name, model_id, command)
    except Exception as exc:  # doctor must always finish; the driver's surprises included
        return [broken("database", exc)] + [
            CheckResult(check, "skip", "needs the database check to finish", "fix the database check first")
            for check in ("pgvector", "index", "permissions", "writer lock")
        ]


def _disk_elsewhere() -> CheckResult:
    return CheckResult(
        "disk", "skip", "the index is in PostgreSQL, on the database server's disk: watch its free space "
        "there (the index check gives the knowledge base's size)",
    )  # fmt: skip


def _model_off(why: str) -> CheckResult:
    return CheckResult("model", "skip", f"semantic search is off ({why}); keyword search needs no model")


def index_command(settings: Settings, options: DoctorOptions) -> str:
    """The ``kbseek index`` line that indexes the knowledge base doctor looked at, with the user's options."""
    return shlex.join(_index_parts(settings, options))


def _index_parts(settings: Settings, options: DoctorOptions) -> list[str]:
    parts = ["kbseek", "index"] + (["--kb", str(settings.root)] if settings.root is not None else [])
    if options.config is not None:
        parts += ["--config", str(options.config.expanduser().resolve())]
    if options.index_dir is not None:
        parts += ["--index-dir", str(options.index_dir.expanduser().resolve())]
    return parts
