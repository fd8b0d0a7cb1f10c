"""The command line answers errors from the one table: a refusal exits 1, a bug exits 70 and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.errors import KbBug

SECRET = "secret-internals-42"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_a_refusal_exits_1_with_its_message(kb_root: Path) -> None:
    result = invoke("get", "--kb", str(kb_root), "../outside.md")
    assert result.exit_code == 1 and "uses '..'" in result.stderr and "bug" not in result.stderr
    missing = invoke("search", "--kb", str(kb_root / "nowhere"), "rollback")
    assert missing.exit_code == 1 and "does not exist" in missing.stderr


@pytest.mark.parametrize("bug", [RuntimeError(SECRET), KbBug(SECRET)], ids=lambda e: type(e).__name__)
def test_a_bug_exits_70_saying_it_is_a_bug_with_the_traceback_under_v(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, bug: Exception
) -> None:
    def search(self: KnowledgeBase, *_: Any, **__: Any) -> Any:
        raise bug

    monkeypatch.setattr(KnowledgeBase, "search", search)
    quiet = invoke("search", "--kb", str(kb_root), "--lexical-only", "rollback")
    assert quiet.exit_code == 70, quiet.output
    assert "this is a bug in kbseek, please report it" in quiet.stderr and SECRET in quiet.stderr
    assert "run it again with -v" in quiet.stderr and "Traceback" not in quiet.stderr
    verbose = invoke("search", "--kb", str(kb_root), "--lexical-only", "-v", "rollback")
    assert verbose.exit_code == 70 and "Traceback" in verbose.stderr and "in search" in verbose.stderr
    assert "run it again with -v" not in verbose.stderr


def test_a_bug_in_a_command_without_v_does_not_suggest_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError(SECRET)

    monkeypatch.setattr("kbseek.cli.service.installed_units", broken)
    result = invoke("service", "status", "--manager", "systemd", "--unit-dir", str(tmp_path))
    assert result.exit_code == 70 and "this is a bug in kbseek" in result.stderr
    assert "-v" not in result.stderr


def test_usage_errors_stay_clicks_own(kb_root: Path) -> None:
    result = invoke("search", "--kb", str(kb_root), "--no-such-option", "x")
    assert result.exit_code == 2 and "No such option" in result.stderr and "bug" not in result.stderr
