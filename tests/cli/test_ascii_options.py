"""The command line's whole-number options take ASCII digits only, each refusal saying how to write it.

click's ``INT`` is Python's ``int``: ``--limit ٥`` (Arabic-Indic five), ``--port ８７６５`` (fullwidth)
and ``--limit 1_0`` were each read as a number, where the help says ``INTEGER``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli

REFUSED = "is not a whole number written in ASCII digits (0-9)"
SERVE = ["serve", "--no-watch", "--http", "--host", "192.0.2.1"]
"""``serve`` on an address it refuses without ``--allow-remote``: a number read by mistake ends in that
refusal, never in a running server."""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["search", "--lexical-only", "rollback"], "--limit"),
        (["search", "--lexical-only", "rollback"], "--snippet-chars"),
        (["fetch", "c_0000000000000000"], "--context"),
        (["get", "runbooks/deploy.md"], "--offset"),
        (["get", "runbooks/deploy.md"], "--max-chars"),
        (["related", "--lexical-only", "runbooks/deploy.md"], "--limit"),
        (SERVE, "--port"),
        (SERVE, "--max-sessions"),
        (SERVE, "--max-body-bytes"),
    ],
)
@pytest.mark.parametrize(
    ("raw", "meant"), [("٥", "5"), ("５", "5"), ("1_0", "10"), ("+5", "5"), (" 5", "5"), ("1.5", None)]
)
def test_a_number_option_not_in_ascii_digits_is_a_usage_error_saying_how_to_write_it(
    kb_root: Path, command: list[str], option: str, raw: str, meant: str | None
) -> None:
    result = invoke(command[0], "--kb", str(kb_root), option, raw, *command[1:])
    hint = f": write {meant}" if meant is not None else ""
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.stderr or f"/ '{option}'" in result.stderr
    assert f"{raw!r} {REFUSED}{hint}" in result.stderr


def test_the_service_port_takes_ascii_digits_only(tmp_path: Path) -> None:
    kb = tmp_path / "notes"
    kb.mkdir()
    base = ["service", "install", "--kb", str(kb), "--manager", "systemd", "--print"]
    refused = invoke(*base, "--port", "٨٠٠١")
    assert refused.exit_code == 2 and f"'٨٠٠١' {REFUSED}: write 8001" in refused.stderr
    printed = invoke(*base, "--port", "8001")
    assert printed.exit_code == 0 and "--port 8001" in printed.stdout
    out_of_range = invoke(*base, "--port", "0")
    assert out_of_range.exit_code == 2 and "0 is not in the range 1<=x<=65535" in out_of_range.stderr


def test_a_service_name_ending_in_a_newline_is_refused(tmp_path: Path) -> None:
    """``$`` in the name's pattern matched before a final newline, which went into the file name."""
    kb = tmp_path / "notes"
    kb.mkdir()
    result = invoke("service", "install", "--kb", str(kb), "--manager", "systemd", "--unit-dir",
                    str(tmp_path / "units"), "--name", "notes\n")  # fmt: skip
    assert result.exit_code != 0 and "service name 'notes\\n' is not usable" in result.stderr
    assert not (tmp_path / "units").exists() or not list((tmp_path / "units").iterdir())


def test_numbers_in_ascii_digits_work_as_before(kb_root: Path) -> None:
    searched = invoke("search", "--kb", str(kb_root), "--lexical-only", "--limit", "2", "--json", "rollback")
    assert searched.exit_code == 0, searched.output
    read = invoke("get", "--kb", str(kb_root), "--offset", "-5", "--max-chars", "010", "runbooks/deploy.md")
    assert read.exit_code == 0 and "offset=-5 was raised to 0" in read.output


def test_a_long_option_value_is_quoted_in_part_and_a_long_number_refused(kb_root: Path) -> None:
    junk = invoke("search", "--kb", str(kb_root), "--limit", "x" * 100_000, "rollback")
    assert junk.exit_code == 2 and REFUSED in junk.stderr and len(junk.stderr) < 1_000
    huge = invoke("search", "--kb", str(kb_root), "--limit", "9" * 101, "rollback")
    assert huge.exit_code == 2 and "the number has 101 digits, more than the 100 read" in huge.stderr
