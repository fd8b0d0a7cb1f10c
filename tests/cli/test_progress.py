"""What `kbseek index` shows while it works: plain lines in a log, a bar on a terminal, silence on request.

The plain-line interval is set to 0 through KBSEEK_PROGRESS_INTERVAL so that a pass of four files is
"long enough" to print: the tests pin what is printed, never how long anything took.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbseek.cli import cli

LINE = re.compile(r"^kbseek: parse \d+/4 files \(\d+%\)(, [\d.]+/s)?(, ETA \S+)?$")


def index(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["index", *args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_stderr_to_a_file_gets_plain_progress_lines_and_the_summary_stays_on_stdout(
    kb_root: Path, tmp_path: Path
) -> None:
    err_path = tmp_path / "stderr.log"
    env = {**os.environ, "KBSEEK_PROGRESS_INTERVAL": "0"}
    with err_path.open("wb") as err:
        done = subprocess.run(
            [sys.executable, "-m", "kbseek", "index", "--kb", str(kb_root), "--lexical-only"],
            stdout=subprocess.PIPE, stderr=err, env=env, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 0
    assert "indexed 4 documents" in done.stdout.decode()
    lines = err_path.read_text(encoding="utf-8").splitlines()
    assert "kbseek: scan started" in lines
    assert "kbseek: parse started: 4 files" in lines
    progress = [line for line in lines if LINE.match(line)]
    assert progress, lines
    assert progress[-1].startswith("kbseek: parse 4/4 files (100%)")
    assert not any("\r" in line or "\x1b" in line for line in lines)  # a log reads as text
    assert "kbseek:" not in done.stdout.decode()  # progress never reaches the data stream


def test_quiet_prints_nothing_to_stderr(kb_root: Path) -> None:
    code, out, err = index(
        "--kb", str(kb_root), "--lexical-only", "--quiet", env={"KBSEEK_PROGRESS_INTERVAL": "0"}
    )
    assert code == 0 and err == ""
    assert "indexed 4 documents" in out


def test_json_prints_only_the_summary_as_json_and_no_progress(kb_root: Path) -> None:
    code, out, err = index(
        "--kb", str(kb_root), "--lexical-only", "--json", env={"KBSEEK_PROGRESS_INTERVAL": "0"}
    )
    assert code == 0 and err == ""
    data = json.loads(out)
    assert sorted(data["added"]) == [
        "notes/plain.txt", "notes/障害対応.md", "runbooks/database/backup.md", "runbooks/deploy.md"
    ]  # fmt: skip


def test_a_bad_interval_is_a_usage_error(kb_root: Path) -> None:
    result = CliRunner().invoke(
        cli, ["index", "--kb", str(kb_root), "--lexical-only"], env={"KBSEEK_PROGRESS_INTERVAL": "soon"}
    )
    assert result.exit_code == 2 and "soon" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_terminal_gets_a_bar_per_phase(kb_root: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios

    controller, terminal = pty.openpty()
    # A terminal has a size; tqdm draws nothing on one that reports 0 rows (a bare pty).
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [sys.executable, "-m", "kbseek", "index", "--kb", str(kb_root), "--lexical-only"],
        stdout=subprocess.PIPE, stderr=terminal,
    ) as proc:  # fmt: skip
        os.close(terminal)
        drawn = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            drawn += chunk
        out = proc.stdout.read().decode() if proc.stdout else ""
        assert proc.wait(timeout=120) == 0
    os.close(controller)
    screen = drawn.decode("utf-8", "replace")
    assert "indexed 4 documents" in out
    assert "parse:" in screen and "/4 files" in screen and "%|" in screen
    assert "kbseek: parse" not in screen  # a terminal gets the bar, not the log lines
