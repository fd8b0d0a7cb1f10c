"""The installed ``kbseek`` command, and one run of it measured: shared by the benchmarks that drive it.

The benchmarks measure what a user runs, so they start the console script beside this interpreter
(or on ``PATH``), never the package in-process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def kbseek_script() -> str:
    """The installed ``kbseek`` console script; exits with what to do when there is none."""
    beside = Path(sys.executable).parent / "kbseek"
    found = str(beside) if beside.exists() else shutil.which("kbseek")
    if not found:
        raise SystemExit("the kbseek command is not installed in this environment (pip install -e .)")
    return found


def run_child(args: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB of that process alone, stdout) of one command; exits if it fails.

    ``os.wait4`` gives the child's own resource usage, where ``RUSAGE_CHILDREN`` would report the
    largest of every child waited for so far.
    """
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(args)} failed with exit code {code}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024, out  # ru_maxrss is KiB on Linux
