"""``kbseek service``: run ``kbseek serve --http`` as a per-user background service.

A systemd user unit on Linux, a launchd agent on macOS. Generating the file is
a pure function of a :class:`ServiceSpec`, so it is tested on any system;
writing takes the target folder as an argument, so tests write into a
temporary one; and nothing here starts, stops or enables anything: the
commands for that are printed for the user to run. A tool that quietly
enables a login service is one nobody trusts twice, and service managers
often are not reachable at all (containers, SSH sessions without a user bus).

One unit per knowledge base (``kbseek-<name>.service``, ``kbseek.<name>``):
someone with work notes and personal notes runs two servers on two ports, and
each must be started, stopped and read in the logs on its own. ``<name>``
defaults to the knowledge base's folder name.

Serving over stdio makes no sense without a host process at the other end, so
a service always serves Streamable HTTP (default port 8765, loopback only).
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kbseek.errors import ServiceError as ServiceError  # raised here, kept importable from here

Manager = Literal["systemd", "launchd"]
MANAGERS: tuple[Manager, ...] = ("systemd", "launchd")

DEFAULT_PORT = 8765
RESTART_SECONDS = 5

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SYSTEMD_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_KB_COMMENT = "# knowledge base: "


@dataclass(frozen=True)
class ServiceSpec:
    """Everything a unit needs: which kbseek to run, on which knowledge base, on which port.

    Every path is absolute, because a service starts in a folder of the service manager's
    choosing with a minimal ``PATH``.
    """

    name: str
    program: tuple[str, ...]
    """The kbseek command itself: ``(/abs/kbseek,)`` or ``(/abs/python, -m, kbseek)``."""
    kb: Path
    port: int = DEFAULT_PORT
    config: Path | None = None
    index_dir: Path | None = None

    def __post_init__(self) -> None:
        check_name(self.name)
        if not 1 <= self.port <= 65535:
            raise ServiceError(f"port {self.port} is not between 1 and 65535")
        if not self.program:
            raise ServiceError("no kbseek program to run")
        paths = {"program": Path(self.program[0]), "knowledge base": self.kb, "config": self.config,
                 "index dir": self.index_dir}  # fmt: skip
        for label, path in paths.items():
            if path is not None and not path.is_absolute():
                raise ServiceError(f"the {label} path {path} must be absolute in a service")

    def arguments(self) -> list[str]:
        """The full command line the service runs."""
        args = [*self.program, "serve", "--kb", str(self.kb), "--http", "--port", str(self.port)]
        if self.config is not None:
            args += ["--config", str(self.config)]
        if self.index_dir is not None:
            args += ["--index-dir", str(self.index_dir)]
        return args

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@dataclass(frozen=True)
class InstalledUnit:
    """A unit file found in the target folder, with what it was written for."""

    name: str
    path: Path
    kb: str | None
    command: str


# -- names and places ------------------------------------------------------------------------------


def check_name(name: str) -> str:
    """A name that is safe in a unit file name and a launchd label alike.

    Matched whole (``fullmatch``): a ``$`` anchor would also match before a final newline and take
    a name ending in one into the unit file's name."""
    if not _NAME.fullmatch(name):
        raise ServiceError(
            f"service name {name!r} is not usable: use 1 to 64 ASCII letters, digits, '-', '_' or '.', "
            "starting with a letter or digit (for example --name notes)"
        )
    return name


def default_name(kb: Path) -> str:
    """The knowledge base's folder name, reduced to what a unit name allows ("kb" if nothing is left)."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", kb.name.lower()).strip("-._")[:64]
    return slug or "kb"


def default_manager(platform: str = sys.platform) -> Manager:
    """The service manager of this system; other systems get an error saying what to run instead."""
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    raise ServiceError(
        "kbseek service writes systemd (Linux) and launchd (macOS) services, "
        f"and this system is {platform!r}; "
        "run `kbseek serve --http --kb PATH` with this system's own service manager instead, "
        "or pass --manager systemd|launchd with --print to see a unit for another machine"
    )


def default_unit_dir(manager: Manager, home: Path, environ: dict[str, str] | None = None) -> Path:
    """Where the user's service manager looks for per-user units."""
    env = os.environ if environ is None else environ
    if manager == "systemd":
        config_home = env.get("XDG_CONFIG_HOME") or str(home / ".config")
        return Path(config_home) / "systemd" / "user"
    return home / "Library" / "LaunchAgents"


def unit_id(manager: Manager, name: str) -> str:
    """What the service manager calls the service: the unit name or the launchd label."""
    return f"kbseek-{name}.service" if manager == "systemd" else f"kbseek.{name}"


def unit_filename(manager: Manager, name: str) -> str:
    return unit_id(manager, name) if manager == "systemd" else f"kbseek.{name}.plist"


def log_path(name: str, home: Path) -> Path:
    """launchd has no journal: the agent's stdout and stderr go to this file."""
    return home / "Library" / "Logs" / f"kbseek-{name}.log"


def find_program(
    argv0: str | None = None, which: str | None = None, python: str = sys.executable
) -> tuple[str, ...]:
    """The absolute command that runs this kbseek: this script, else ``kbseek`` on PATH, else python -m.

    The script path is made absolute but symlinks are kept: a tool installer (pipx, uv tool) links
    its stable ``bin/kbseek`` to a versioned location that an upgrade may move.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    if argv0:
        script = Path(os.path.abspath(argv0))
        if script.name in ("kbseek", "kbseek.exe") and script.is_file() and os.access(script, os.X_OK):
            return (str(script),)
    found = shutil.which("kbseek") if which is None else which
    if found:
        return (os.path.abspath(found),)
    return (os.path.abspath(python), "-m", "kbseek")


# -- generating ------------------------------------------------------------------------------------


def systemd_quote(arg: str) -> str:
    """One ``ExecStart=`` argument: quoted when needed, with ``%`` specifiers and ``$`` variables escaped."""
    if any(ord(c) < 32 or ord(c) == 127 for c in arg):
        raise ServiceError(
            f"{arg!r} contains a control character (a newline?), which a unit file cannot hold"
        )
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if _SYSTEMD_SAFE.fullmatch(arg):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_unit(spec: ServiceSpec) -> str:
    """A systemd user unit that runs ``kbseek serve --http`` and restarts it when it fails."""
    kb = str(spec.kb)
    if any(ord(c) < 32 for c in kb):
        raise ServiceError(f"the knowledge-base path {kb!r} contains a control character")
    exec_start = " ".join(systemd_quote(a) for a in spec.arguments())
    description = f"kbseek MCP server for {spec.name} ({spec.url})".replace("%", "%%")
    return (
        "# Written by `kbseek service install`: kbseek serve --http for one knowledge base.\n"
        f"# Remove it with `kbseek service uninstall --name {spec.name}`.\n"
        f"{_KB_COMMENT}{kb}\n"
        "[Unit]\n"
        f"Description={description}\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={exec_start}\n"
        "Restart=on-failure\n"
        f"RestartSec={RESTART_SECONDS}\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_plist(spec: ServiceSpec, home: Path) -> bytes:
    """A launchd agent that starts at login and is restarted when it exits with an error."""
    log = str(log_path(spec.name, home))
    agent = {
        "Label": unit_id("launchd", spec.name),
        "ProgramArguments": spec.arguments(),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": RESTART_SECONDS,
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    return plistlib.dumps(agent, sort_keys=False)


def render_unit(manager: Manager, spec: ServiceSpec, home: Path) -> bytes:
    if manager == "systemd":
        return systemd_unit(spec).encode("utf-8")
    return launchd_plist(spec, home)


# -- writing, finding, removing --------------------------------------------------------------------


def install(manager: Manager, spec: ServiceSpec, unit_dir: Path, home: Path) -> tuple[Path, bool]:
    """Write the unit into ``unit_dir``; returns its path and whether it replaced an earlier one.

    Re-installing for the same knowledge base updates the unit (a new port, a moved executable);
    a unit of the same name for another knowledge base is never overwritten.
    """
    path = unit_dir / unit_filename(manager, spec.name)
    existing = read_unit(manager, path)
    if existing is not None and existing.kb is not None and existing.kb != str(spec.kb):
        raise ServiceError(
            f"{path.name} already serves {existing.kb}; "
            "pass --name to install this knowledge base beside it, "
            f"or remove that one first with `kbseek service uninstall --name {spec.name}`"
        )
    content = render_unit(manager, spec, home)
    unit_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)
    return path, existing is not None


def uninstall(manager: Manager, name: str, unit_dir: Path) -> list[Path]:
    """Remove the unit and the links ``systemctl enable`` made to it; returns what was removed."""
    path = unit_dir / unit_filename(manager, name)
    if not path.is_file():
        raise ServiceError(
            f"no kbseek service named {name!r} is installed (no {path}){_installed_hint(manager, unit_dir)}"
        )
    removed = []
    if manager == "systemd":
        for link in unit_dir.glob(f"*.wants/{path.name}"):
            if link.is_symlink():
                link.unlink()
                removed.append(link)
    path.unlink()
    removed.append(path)
    return removed


def read_unit(manager: Manager, path: Path) -> InstalledUnit | None:
    """What an installed unit runs, or ``None`` if there is no such file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ServiceError(f"cannot read {path}: {exc}") from exc
    name = _name_of(manager, path.name)
    if manager == "systemd":
        text = raw.decode("utf-8", "replace")
        kb = next((ln[len(_KB_COMMENT) :] for ln in text.splitlines() if ln.startswith(_KB_COMMENT)), None)
        command = next(
            (ln[len("ExecStart=") :] for ln in text.splitlines() if ln.startswith("ExecStart=")), ""
        )
        return InstalledUnit(name, path, kb, command)
    try:
        agent = plistlib.loads(raw)
        args = [str(a) for a in agent.get("ProgramArguments", [])]
    except Exception:  # a hand-edited or damaged plist: still report that it is there
        return InstalledUnit(name, path, None, "(unreadable plist)")
    kb = args[args.index("--kb") + 1] if "--kb" in args[:-1] else None
    return InstalledUnit(name, path, kb, shlex.join(args))


def installed_units(manager: Manager, unit_dir: Path) -> list[InstalledUnit]:
    pattern = "kbseek-*.service" if manager == "systemd" else "kbseek.*.plist"
    units = (read_unit(manager, p) for p in sorted(unit_dir.glob(pattern)) if p.is_file())
    return [u for u in units if u is not None]


def _name_of(manager: Manager, filename: str) -> str:
    if manager == "systemd":
        return filename.removeprefix("kbseek-").removesuffix(".service")
    return filename.removeprefix("kbseek.").removesuffix(".plist")


def _installed_hint(manager: Manager, unit_dir: Path) -> str:
    names = [u.name for u in installed_units(manager, unit_dir)] if unit_dir.is_dir() else []
    return f"; installed: {', '.join(names)}" if names else ""


# -- telling the user what to run ------------------------------------------------------------------


def commands(manager: Manager, name: str, path: Path, home: Path) -> list[tuple[str, str]]:
    """(what, command) pairs for starting, stopping, logs, status and removal of one service."""
    uid = unit_id(manager, name)
    if manager == "systemd":
        return [
            ("start now and at every login",
             f"systemctl --user daemon-reload && systemctl --user enable --now {uid}"),
            ("stop", f"systemctl --user stop {uid}   (disable --now also keeps it from starting at login)"),
            ("logs", f"journalctl --user -u {uid} -f"),
            ("status", f"systemctl --user status {uid}   (or kbseek service status --name {name})"),
            ("run without a login session", "loginctl enable-linger \"$USER\""),
            ("uninstall", f"systemctl --user disable --now {uid} && kbseek service uninstall --name {name}"),
        ]  # fmt: skip
    target = f"gui/$(id -u)/{uid}"
    return [
        ("start now and at every login", f"launchctl bootstrap gui/$(id -u) {shlex.quote(str(path))}"),
        ("stop", f"launchctl bootout {target}   (it starts again at the next login until uninstalled)"),
        ("logs", f"tail -f {shlex.quote(str(log_path(name, home)))}"),
        ("status", f"launchctl print {target}   (or kbseek service status --name {name})"),
        ("uninstall", f"launchctl bootout {target}; kbseek service uninstall --name {name}"),
    ]  # fmt: skip


def stop_after_uninstall(manager: Manager, name: str) -> str:
    """What to run if the removed service is still running (the manager keeps a loaded unit in memory)."""
    uid = unit_id(manager, name)
    if manager == "systemd":
        return f"systemctl --user stop {uid}; systemctl --user daemon-reload"
    return f"launchctl bootout gui/$(id -u)/{uid}"


def live_state(manager: Manager, name: str, timeout: float = 5.0) -> str | None:
    """Ask the service manager whether the service runs; ``None`` when it cannot be asked.

    Only the CLI calls this, and only for the user's real unit folder: tests never reach a real
    service manager.
    """
    uid = unit_id(manager, name)
    try:
        if manager == "systemd":
            if shutil.which("systemctl") is None:
                return None
            done = _run(["systemctl", "--user", "is-active", uid], timeout)
            return done.stdout.strip() or None
        if shutil.which("launchctl") is None:
            return None
        done = _run(["launchctl", "print", f"gui/{os.getuid()}/{uid}"], timeout)
        if done.returncode != 0:
            return "not loaded"
        match = re.search(r"^\s*state = (\S+)", done.stdout, re.MULTILINE)
        return f"loaded, {match.group(1)}" if match else "loaded"
    except (OSError, subprocess.SubprocessError):
        return None


def _run(args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False)
