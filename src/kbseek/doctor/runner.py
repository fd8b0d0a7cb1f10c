"""Every check in the order a fix usually has to happen, each run only when what it needs is there."""

from __future__ import annotations

import shlex

from kbseek.config import Settings
from kbseek.doctor.configuration import check_config, check_model
from kbseek.doctor.result import CheckResult, DoctorOptions, guarded, guarded_pair
from kbseek.doctor.sqlite_index import check_index, check_permissions, check_writer_lock
from kbseek.doctor.system import check_disk, check_python, check_watcher
from kbseek.embed import EmbedderSpec
from kbseek.paths import resolve_index_dir


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
            for name in ("index", "permissions", "writer lock", "watcher", "disk")
        )
        return results
    if settings.semantic:
        model, model_id = guarded_pair("model", lambda: check_model(settings.embed))
        results.append(model)
    else:
        why = "--lexical-only" if options.lexical_only else "semantic = false in the config"
        results.append(_model_off(why))

    index_dir = resolve_index_dir(settings)
    command = index_command(settings, options)
    results.append(guarded("index", lambda: check_index(settings, model_id, command)))
    results.append(guarded("permissions", lambda: check_permissions(index_dir, command)))
    results.append(guarded("writer lock", lambda: check_writer_lock(index_dir)))
    results.append(guarded("watcher", lambda: check_watcher(settings.root)))
    results.append(guarded("disk", lambda: check_disk(index_dir)))
    return results


def _model_off(why: str) -> CheckResult:
    return CheckResult("model", "skip", f"semantic search is off ({why}); keyword search needs no model")


def index_command(settings: Settings, options: DoctorOptions) -> str:
    """The ``kbseek index`` line that indexes the knowledge base doctor looked at, with the user's options."""
    parts = ["kbseek", "index", "--kb", str(settings.root)]
    if options.config is not None:
        parts += ["--config", str(options.config.expanduser().resolve())]
    if options.index_dir is not None:
        parts += ["--index-dir", str(options.index_dir.expanduser().resolve())]
    return shlex.join(parts)
