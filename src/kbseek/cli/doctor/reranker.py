"""The ``reranker`` check: the configured ``[rerank]`` stage scores for real, and how fast.

A reranker that is down, slow or missing its model never breaks a search: the stage answers in
the fused order with a note (decision 0038). That is the right behaviour for a search and the
wrong one for finding out why results are not reranked, so doctor asks directly:

- ``http``: which endpoint and API, then one real scoring call of two short texts, timed against
  ``[rerank] budget_s``. Two texts are the least a search sends, so a call slower than the budget
  here means every search gives up on the reranker; the wait is allowed to run past the budget
  (up to :func:`_patience`) so that a slow server shows as slow, not as down.
- ``local``: where the model's files come from (kbseek's verified cache, or a folder), their size,
  whether they are complete and match the manifest's checksums (every byte hashed, as the
  ``model`` check does for embedding models), then that the model loads and scores.

Read-only like the rest of doctor: a model not pulled yet is reported with the ``kbseek model
pull`` command, never fetched, even when ``[rerank] allow_download = true`` would let a search
fetch it (the reranker is built here with downloads off).
"""

from __future__ import annotations

import dataclasses
import math
import time

from kbseek.cli.doctor.configuration import distribution_version
from kbseek.cli.doctor.model_files import ModelFiles
from kbseek.cli.doctor.result import CheckResult
from kbseek.embed import inspect_model
from kbseek.errors import ConfigError, EmbedderUnavailable
from kbseek.rerank import RerankFailed, RerankSpec, make_reranker

QUERY = "which pets are cats"
TEXTS = ("the cat sat on the mat", "the weather is cold")
"""The probe: two short texts, one plainly closer to the query than the other."""

INSTALL = "pip install 'kbseek[models]'"


def check_reranker(spec: RerankSpec) -> CheckResult:
    """The verdict on ``[rerank]``: ``skip`` when it is off, else whether it scores within its budget."""
    if not spec.enabled:
        return CheckResult(
            "reranker", "skip", "reranking is off (no [rerank] provider): searches keep the fused order"
        )
    if spec.provider == "local":
        return _check_local(spec)
    return _check_served(spec)


def _patience(spec: RerankSpec) -> float:
    """How long doctor waits for one scoring call: past the budget, so that slow is told from down."""
    return max(10.0, 4 * spec.budget_s)


def _check_served(spec: RerankSpec) -> CheckResult:
    """``http``, or a provider a plugin registered: build it, score the probe, time it."""
    reranker = make_reranker(spec)
    if spec.provider == "http":
        where = f"provider 'http', api {spec.http_api}, endpoint {getattr(reranker, 'endpoint', spec.url)}"
        if spec.model:
            where += f", model {spec.model}"
    else:
        where = f"provider {spec.provider!r}: {reranker.name}"
    try:
        reranker.load()
        started = time.perf_counter()
        scores = reranker.score(QUERY, list(TEXTS), timeout_s=_patience(spec))
        seconds = time.perf_counter() - started
    except RerankFailed as exc:
        fix = _hint(str(exc)) or "check the [rerank] settings and the rerank server"
        return CheckResult(
            "reranker", "fail", f"{where}: {exc}", f"{fix}; meanwhile searches keep the fused order"
        )
    return _timed(spec, where, "", scores, seconds)


def _check_local(spec: RerankSpec) -> CheckResult:
    """``local``: the model's files first (origin, size, verified), then a load and a scoring call."""
    assert spec.model is not None  # RerankSpec requires it for provider "local"
    try:
        report = inspect_model(spec.model, kind="reranker")
    except EmbedderUnavailable as exc:  # fastembed is not installed
        return CheckResult(
            "reranker", "fail", f"provider 'local': {exc}", f"{INSTALL}, or use provider 'http'"
        )
    except ConfigError as exc:  # a name fastembed does not know
        return CheckResult(
            "reranker", "fail", f"provider 'local': {exc}",
            "fix [rerank] model: a name `kbseek model list` shows as a reranker, or a model folder",
        )  # fmt: skip
    files = ModelFiles(report.origin, report.size_bytes, "; ".join(report.problems), report.fix)
    where = f"provider 'local'{distribution_version('fastembed')}: {spec.model}, {files.summary()}"
    if files.problem:
        if spec.allow_download and report.problems == ("it was never pulled",):
            return CheckResult(
                "reranker", "warn",
                f"{where}; [rerank] allow_download = true, so the first search downloads it (and "
                "answers in the fused order until it is there)",
                f"{report.fix} now, so that no search waits for the download",
            )  # fmt: skip
        return CheckResult(
            "reranker", "fail", where, f"{report.fix}; meanwhile searches keep the fused order"
        )
    # Downloads off: the files were just found complete, and doctor must not fetch anything anyway.
    reranker = make_reranker(dataclasses.replace(spec, allow_download=False))
    try:
        started = time.perf_counter()
        reranker.load()
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        scores = reranker.score(QUERY, list(TEXTS), timeout_s=_patience(spec))
        seconds = time.perf_counter() - started
    except RerankFailed as exc:
        message = str(exc)
        fix = INSTALL if "needs the fastembed package" in message else _hint(message)
        return CheckResult(
            "reranker", "fail", f"{where}; {message}",
            f"{fix or 'check [rerank] model'}; meanwhile searches keep the fused order",
        )  # fmt: skip
    return _timed(spec, where, f"loaded in {loaded:.1f} s, ", scores, seconds)


def _timed(spec: RerankSpec, where: str, loaded: str, scores: list[float], seconds: float) -> CheckResult:
    """``ok`` within the budget, ``warn`` past it, ``fail`` for scores a ranking cannot use."""
    if len(scores) != len(TEXTS) or not all(math.isfinite(s) for s in scores):
        return CheckResult(
            "reranker", "fail", f"{where}; it answered {scores!r} for {len(TEXTS)} texts",
            "check that [rerank] names a cross-encoder (one finite score per text)",
        )  # fmt: skip
    took = f"{loaded}scored {len(TEXTS)} texts in {seconds:.2f} s"
    budget = f"[rerank] budget_s = {spec.budget_s:g}"
    if seconds > spec.budget_s:
        return CheckResult(
            "reranker", "warn",
            f"{where}; {took}, over {budget}: searches give up on it and keep the fused order",
            "raise [rerank] budget_s, lower [rerank] candidates, or use a faster reranker (a search sends "
            f"{spec.candidates} texts, not {len(TEXTS)})",
        )  # fmt: skip
    return CheckResult("reranker", "ok", f"{where}; {took}, within {budget}")


def _hint(message: str) -> str:
    """The "what to do" part of a :class:`RerankFailed` message: its text after the last ``; ``."""
    return message.rsplit("; ", 1)[1] if "; " in message else ""
