"""``kbseek service``: unit files generated as pure functions, written into a folder the test owns.

No test starts a service manager; where ``systemd-analyze`` exists it checks the generated unit.
"""

from __future__ import annotations

import json
import plistlib
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbseek.cli import cli
from kbseek.cli.units import (
    ServiceError,
    ServiceSpec,
    default_name,
    find_program,
    launchd_plist,
    systemd_quote,
    systemd_unit,
)


@pytest.fixture(autouse=True)
def no_real_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Whatever a test forgets to pass, nothing reaches the real user's unit folders."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture
def spaced_kb(tmp_path: Path) -> Path:
    kb = tmp_path / "my notes"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n", encoding="utf-8")
    return kb


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def spec_for(kb: Path, program: str = "/opt/kbseek tools/bin/kbseek", **kw: object) -> ServiceSpec:
    return ServiceSpec("my-notes", (program,), kb, **kw)  # type: ignore[arg-type]


# -- the unit files --------------------------------------------------------------------------------


def test_the_systemd_unit_quotes_paths_and_restarts_on_failure(spaced_kb: Path) -> None:
    unit = systemd_unit(spec_for(spaced_kb, port=8800, config=Path("/etc/kb 100%/$HOME.toml")))
    lines = unit.splitlines()
    exec_start = next(line for line in lines if line.startswith("ExecStart="))
    assert exec_start == (
        f'ExecStart="/opt/kbseek tools/bin/kbseek" serve --kb "{spaced_kb}" --http --port 8800 '
        '--config "/etc/kb 100%%/$$HOME.toml"'
    )
    assert "Restart=on-failure" in lines
    assert "WantedBy=default.target" in lines
    assert lines.index("[Service]") < lines.index("Restart=on-failure") < lines.index("[Install]")
    assert f"# knowledge base: {spaced_kb}" in lines


def test_systemd_quoting_escapes_what_systemd_would_expand() -> None:
    assert systemd_quote("/usr/bin/kbseek") == "/usr/bin/kbseek"
    assert systemd_quote('a "b" \\c') == '"a \\"b\\" \\\\c"'
    assert systemd_quote("50%") == "50%%"
    assert systemd_quote("ノート") == '"ノート"'
    with pytest.raises(ServiceError, match="control character"):
        systemd_quote("a\nb")


def _verify(unit: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )


def test_systemd_analyze_accepts_the_unit(spaced_kb: Path, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd provides it)")
    units = tmp_path / "units"
    units.mkdir()
    known_good = units / "kbseek-probe.service"
    known_good.write_text("[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    probe = _verify(known_good)
    if probe.returncode != 0:
        pytest.skip(f"systemd-analyze cannot verify units here: {probe.stderr.strip()[:200]}")
    # A program path with a space: verify checks that this exact file is executable, so a
    # quoting mistake (looking for ".../bin") would fail it.
    program = tmp_path / "bin dir" / "kbseek"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(0o755)
    unit = units / "kbseek-my-notes.service"
    unit.write_text(systemd_unit(spec_for(spaced_kb, program=str(program))), encoding="utf-8")
    done = _verify(unit)
    assert done.returncode == 0, done.stderr
    assert unit.name not in done.stderr, done.stderr  # warnings (unknown keys, bad values) name the file


def test_the_launchd_plist_runs_at_load_restarts_on_failure_and_logs_to_a_file(spaced_kb: Path) -> None:
    agent = plistlib.loads(launchd_plist(spec_for(spaced_kb, port=8801), Path("/Users/someone")))
    assert agent["Label"] == "kbseek.my-notes"
    assert agent["ProgramArguments"] == [
        "/opt/kbseek tools/bin/kbseek", "serve", "--kb", str(spaced_kb), "--http", "--port", "8801",
    ]  # fmt: skip
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert (
        agent["StandardOutPath"]
        == agent["StandardErrorPath"]
        == "/Users/someone/Library/Logs/kbseek-my-notes.log"
    )


def test_a_spec_refuses_relative_paths_and_bad_names(spaced_kb: Path) -> None:
    with pytest.raises(ServiceError, match="absolute"):
        ServiceSpec("x", ("kbseek",), spaced_kb)
    with pytest.raises(ServiceError, match="--name notes"):
        ServiceSpec("../evil", ("/bin/kbseek",), spaced_kb)
    assert default_name(Path("/x/My Notes")) == "my-notes"
    assert default_name(Path("/x/ノート")) == "kb"


def test_the_program_is_this_kbseek_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "bin" / "kbseek"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert find_program(argv0="bin/kbseek", which="") == (str(script),)
    assert find_program(argv0="/somewhere/pytest", which=str(script)) == (str(script),)
    assert find_program(argv0="/somewhere/pytest", which="", python="/py/bin/python") == (
        "/py/bin/python", "-m", "kbseek",
    )  # fmt: skip


# -- the commands ----------------------------------------------------------------------------------


def test_install_status_uninstall_with_systemd(spaced_kb: Path, tmp_path: Path) -> None:
    units = tmp_path / "units"
    result = invoke("service", "install", "--kb", str(spaced_kb), "--manager", "systemd",
                    "--unit-dir", str(units), "--port", "8802")  # fmt: skip
    assert result.exit_code == 0, result.output
    unit = units / "kbseek-my-notes.service"
    assert unit.is_file()
    text = unit.read_text(encoding="utf-8")
    assert f'--kb "{spaced_kb}" --http --port 8802' in text
    assert "\nExecStart=/" in text or '\nExecStart="/' in text  # an absolute program
    assert f"wrote {unit}" in result.stdout
    assert "systemctl --user enable --now kbseek-my-notes.service" in result.stdout
    assert "systemctl --user stop kbseek-my-notes.service" in result.stdout
    assert "journalctl --user -u kbseek-my-notes.service" in result.stdout
    assert "kbseek service uninstall --name my-notes" in result.stdout

    status = invoke(
        "service", "status", "--kb", str(spaced_kb), "--manager", "systemd", "--unit-dir", str(units)
    )
    assert status.exit_code == 0 and "kbseek-my-notes: installed at" in status.stdout
    assert f"knowledge base: {spaced_kb}" in status.stdout
    listing = invoke("service", "status", "--manager", "systemd", "--unit-dir", str(units), "--json")
    assert [(r["name"], r["installed"]) for r in json.loads(listing.stdout)] == [("my-notes", True)]

    # What `systemctl --user enable` leaves behind goes too.
    wants = units / "default.target.wants"
    wants.mkdir()
    (wants / unit.name).symlink_to(unit)
    removed = invoke(
        "service", "uninstall", "--name", "my-notes", "--manager", "systemd", "--unit-dir", str(units)
    )
    assert removed.exit_code == 0, removed.output
    assert not unit.exists() and not (wants / unit.name).is_symlink()
    assert "systemctl --user stop kbseek-my-notes.service" in removed.stdout

    gone = invoke("service", "status", "--name", "my-notes", "--manager", "systemd", "--unit-dir", str(units))
    assert gone.exit_code == 0 and "kbseek-my-notes: not installed" in gone.stdout
    again = invoke(
        "service", "uninstall", "--name", "my-notes", "--manager", "systemd", "--unit-dir", str(units)
    )
    assert again.exit_code == 1 and "no kbseek service named 'my-notes' is installed" in again.output


def test_install_with_launchd_writes_a_plist_and_names_the_log(
    spaced_kb: Path, tmp_path: Path, no_real_home: Path
) -> None:
    agents = tmp_path / "agents"
    result = invoke(
        "service", "install", "--kb", str(spaced_kb), "--manager", "launchd", "--unit-dir", str(agents)
    )
    assert result.exit_code == 0, result.output
    agent = plistlib.loads((agents / "kbseek.my-notes.plist").read_bytes())
    args = agent["ProgramArguments"]
    assert Path(args[0]).is_absolute()  # this kbseek (or this python -m kbseek under pytest)
    assert args[args.index("serve") :] == ["serve", "--kb", str(spaced_kb), "--http", "--port", "8765"]
    log = no_real_home / "Library" / "Logs" / "kbseek-my-notes.log"
    assert agent["StandardErrorPath"] == str(log)
    assert (
        "launchctl bootstrap gui/$(id -u)" in result.stdout
        and f"tail -f {shlex.quote(str(log))}" in result.stdout
    )
    status = invoke("service", "status", "--manager", "launchd", "--unit-dir", str(agents))
    assert "kbseek-my-notes: installed" in status.stdout
    assert invoke("service", "uninstall", "--kb", str(spaced_kb), "--manager", "launchd",
                  "--unit-dir", str(agents)).exit_code == 0  # fmt: skip
    assert not (agents / "kbseek.my-notes.plist").exists()


def test_print_writes_nothing_and_config_is_made_absolute(
    spaced_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kbseek.toml").write_text("semantic = false\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    units = tmp_path / "units"
    result = invoke("service", "install", "--kb", "my notes", "--manager", "systemd",
                    "--unit-dir", str(units), "--print")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Written by `kbseek service install`")
    assert f'--kb "{spaced_kb}"' in result.stdout and f"--config {tmp_path / 'kbseek.toml'}" in result.stdout
    assert not units.exists()


def test_install_refuses_to_overwrite_another_kbs_service(spaced_kb: Path, tmp_path: Path) -> None:
    units = tmp_path / "units"
    other = tmp_path / "elsewhere" / "my notes"
    other.mkdir(parents=True)
    args = ("--manager", "systemd", "--unit-dir", str(units))
    assert invoke("service", "install", "--kb", str(spaced_kb), *args).exit_code == 0
    again = invoke("service", "install", "--kb", str(spaced_kb), "--port", "9000", *args)
    assert again.exit_code == 0 and "updated" in again.stdout and "restart" in again.stdout
    clash = invoke("service", "install", "--kb", str(other), *args)
    assert clash.exit_code == 1 and f"already serves {spaced_kb}" in clash.output and "--name" in clash.output
    beside = invoke("service", "install", "--kb", str(other), "--name", "other-notes", *args)
    assert beside.exit_code == 0
    assert sorted(p.name for p in units.iterdir()) == [
        "kbseek-my-notes.service",
        "kbseek-other-notes.service",
    ]


def test_install_refuses_a_config_that_does_not_parse(spaced_kb: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[search]\nfusoin = 1\n", encoding="utf-8")
    units = tmp_path / "units"
    result = invoke("service", "install", "--kb", str(spaced_kb), "--config", str(cfg),
                    "--manager", "systemd", "--unit-dir", str(units))  # fmt: skip
    assert result.exit_code == 1 and "fusoin" in result.output and "kbseek doctor" in result.output
    assert not units.exists()


def test_the_help_says_that_install_implies_http() -> None:
    result = invoke("service", "install", "--help")
    assert "always" in result.stdout and "--http is implied" in result.stdout.replace("\n", " ")
