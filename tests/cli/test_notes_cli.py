"""``kbseek notes``: the trail of agents' writes, the trash, and a person restoring a deleted note."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbseek.cli import cli
from kbseek.write_spec import WriteSpec
from tests.conftest import make_core


def test_a_note_an_agent_deleted_is_listed_and_restored_by_a_person(kb_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text('[write]\nenabled = true\nfolders = ["runbooks"]\n', encoding="utf-8")
    original = (kb_root / "runbooks/deploy.md").read_bytes()
    with make_core(kb_root, write=WriteSpec(enabled=True, folders=("runbooks",))) as core:
        core.index()
        hit = core.search("rollback load balancer").hits[0]
        gone = core.notes.delete(hit.path, expected_hash=hit.hash or "")
    assert gone.trash and not (kb_root / "runbooks/deploy.md").exists()
    flags = ["--kb", str(kb_root), "--config", str(config), "--lexical-only"]
    runner = CliRunner()
    listed = runner.invoke(cli, ["notes", "trash", *flags])
    assert listed.exit_code == 0, listed.output
    assert gone.trash in listed.output and "runbooks/deploy.md" in listed.output
    restored = runner.invoke(cli, ["notes", "restore", gone.trash, *flags])
    assert restored.exit_code == 0, restored.output
    assert (kb_root / "runbooks/deploy.md").read_bytes() == original
    again = runner.invoke(cli, ["notes", "restore", gone.trash, *flags])
    assert again.exit_code == 1 and "no trash entry" in again.output
    log = runner.invoke(cli, ["notes", "log", *flags])
    assert log.exit_code == 0 and log.output.splitlines()[0].split()[1] == "restore"
    assert "delete runbooks/deploy.md" in log.output
