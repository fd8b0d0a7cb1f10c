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
