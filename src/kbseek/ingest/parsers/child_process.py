"""Running a document library in a bounded child process: how kbseek reads formats it cannot trust.

A hostile or damaged file can make a parsing library loop or allocate without end, so PDF and the
converted formats (Word, Excel, PowerPoint, HTML) are read by a child script that caps its own CPU
time and address space, and the parent kills it after a wall-clock limit. The child answers one JSON
object on stdout; anything else is a failure said in the words of ``unreadable.TABLE``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from kbseek.ingest.parsers.unreadable import Reason, Unreadable


def run_child(command: list[str], raw: bytes, time_limit_s: float, what: str) -> dict[str, Any]:
    """Run an extraction child on ``raw`` and return its JSON answer; the child is gone when this returns.

    The pattern of the PDF parser: a hostile file can make a library loop or
    allocate without end, so it runs in a process that is killed after a
    wall-clock limit and caps its own CPU time and address space. A child that
    cannot start, runs out of time or memory, or dies without an answer raises
    :class:`~kbseek.ingest.parsers.unreadable.Unreadable` (a ``ValueError``) worded by its one table;
    ``what`` names the format (``Word (.docx)``, ``PDF``).
    """
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise Unreadable(
            Reason.NOT_STARTED,
            f"the {what} reading process could not start ({exc.strerror or exc})",
            what=what,
        ) from None
    with process:
        try:
            out, err = process.communicate(raw, timeout=time_limit_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise Unreadable(
                Reason.TIMEOUT, f"{time_limit_s:g} s, the time one file may take", what=what
            ) from None
        except BaseException:
            process.kill()
            raise
    try:
        answer = json.loads(out.decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        answer = None
    if isinstance(answer, dict):
        return answer
    xcpu = getattr(signal, "SIGXCPU", None)
    if xcpu is not None and process.returncode == -xcpu:
        raise Unreadable(Reason.TIMEOUT, f"{time_limit_s:g} s, the time one file may take", what=what)
    if process.returncode in (-getattr(signal, "SIGABRT", 6), -getattr(signal, "SIGKILL", 9)):
        raise Unreadable(Reason.MEMORY, what=what)
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:]
    detail = f"exit status {process.returncode}" + (f": {last[0][:200]}" if last else "")
    raise Unreadable(Reason.CRASHED, detail, what=what)


def child_argv(script: Path, *args: object) -> list[str]:
    """``python -P script args…``: ``-P`` keeps this folder (``markdown.py`` shadows a package) off its path."""
    if not sys.executable:
        raise Unreadable(Reason.NOT_STARTED, "the path of the Python interpreter is unknown")
    return [sys.executable, "-P", str(script), *(str(a) for a in args)]
