"""What a check returns, what doctor was asked, and the guard that keeps a broken check from
becoming a traceback: doctor runs when things are broken, so it must always finish."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

T = TypeVar("T")

Status = Literal["ok", "warn", "fail", "skip"]
"""``skip`` marks a check that could not run because an earlier one failed or it does not apply;
it never changes the exit status."""


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict: ``detail`` says what was found, ``fix`` what to do about it (empty when ok)."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class DoctorOptions:
    """What the user gave on the command line (or in ``KBSEEK_*`` variables), unresolved."""

    kb: Path | None = None
    config: Path | None = None
    index_dir: Path | None = None
    lexical_only: bool = False
    cwd: Path = Path(".")
    store_url: str | None = field(default=None, repr=False)
    """``--store``: a PostgreSQL URL that overrides ``[store] url`` (it may hold a password)."""
    kb_name: str | None = None
    """``--kb-name``: the knowledge base's name in that database, overriding ``[store] name``."""


def guarded(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """A check that breaks unexpectedly is a failed check with its error, never a traceback."""
    try:
        return check()
    except Exception as exc:  # doctor runs when things are broken; it must always finish
        return broken(name, exc)


def guarded_pair(name: str, check: Callable[[], tuple[CheckResult, T]]) -> tuple[CheckResult, T | None]:
    try:
        return check()
    except Exception as exc:
        return broken(name, exc), None


def broken(name: str, exc: Exception) -> CheckResult:
    return CheckResult(
        name, "fail", f"the check itself failed: {type(exc).__name__}: {exc}",
        "run kbseek doctor -vv and report this with its output",
    )  # fmt: skip


def index_verdict(
    summary: str,
    *,
    recorded: str | None,
    model_id: str | None,
    vectorless: bool,
    documents: int,
    run: Callable[[str], str],
    one_model: str = "",
) -> CheckResult:
    """The ``index`` check's verdict once its facts are read, for either store: another model's
    vectors (a switch the next pass makes, decision 0040), no vectors yet or nothing indexed warn,
    else ok.

    ``run(extra)`` words the index command to suggest ("run `kbseek index …`"); ``one_model`` adds
    why the model must match (a shared index has one).
    """
    if recorded:
        summary += f", vectors from {recorded}"
    if model_id is not None and recorded and recorded != model_id:
        return CheckResult(
            "index", "warn",
            f"{summary}; the configured model is {model_id}: the next pass embeds every chunk with it beside "
            f"the old vectors and switches when it has them all, while searches use {recorded} (or keywords, "
            "if its settings were not recorded)",
            f"{run('')} to make the switch now ({run(' --reembed')} drops the old vectors first), or set "
            f"[embed] back to the model the index was built with{one_model}",
        )  # fmt: skip
    if model_id is not None and vectorless:
        return CheckResult(
            "index", "warn",
            f"{summary}; no vectors yet (indexed with --lexical-only?), so only keyword search works",
            f"{run('')} to embed the chunks",
        )  # fmt: skip
    if documents == 0:
        return CheckResult(
            "index", "warn", f"{summary}: nothing is indexed",
            "check that --kb names the folder with your notes; `kbseek status` lists skipped files and why",
        )  # fmt: skip
    return CheckResult("index", "ok", summary)
