"""The ``kbseek service`` commands: install, uninstall and report a per-user background server.

The unit generation lives in :mod:`kbseek.cli.units` (pure functions); this module only
resolves the user's options into a :class:`~kbseek.cli.units.ServiceSpec`, writes or removes
the file, and prints what to run next. It never starts or stops anything itself.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click

from kbseek.cli.errors import refused
from kbseek.cli.options import WholeNumberRange
from kbseek.cli.units import (
    DEFAULT_PORT,
    MANAGERS,
    Manager,
    ServiceError,
    ServiceSpec,
    check_name,
    commands,
    default_manager,
    default_name,
    default_unit_dir,
    find_program,
    installed_units,
    live_state,
    read_unit,
    render_unit,
    stop_after_uninstall,
    unit_filename,
    unit_id,
)
from kbseek.cli.units import install as write_unit
from kbseek.cli.units import uninstall as remove_unit
from kbseek.config import SettingsSource, find_config
from kbseek.errors import KbError


def _manager_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--manager`` and ``--unit-dir``, shared by install, uninstall and status."""
    fn = click.option(
        "--unit-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
        help="Folder for the unit file (default: the user's systemd or launchd folder).",
    )(fn)  # fmt: skip
    return click.option(
        "--manager", type=click.Choice(MANAGERS), default=None,
        help="Service manager to write for (default: this system's: systemd on Linux, launchd on macOS).",
    )(fn)  # fmt: skip


def _resolve(manager: str | None, unit_dir: Path | None) -> tuple[Manager, Path, bool]:
    """The manager, the unit folder, and whether that folder is the one the service manager reads.

    A :class:`ServiceError` here and below is left to the command group, which answers it from the
    error table; only a bad ``--name`` is caught, to say it as a usage error of that option.
    """
    chosen = cast(Manager, manager) if manager is not None else default_manager()
    default = default_unit_dir(chosen, Path.home())
    folder = unit_dir.expanduser().absolute() if unit_dir is not None else default
    return chosen, folder, folder == default


def _name_for(name: str | None, kb: Path | None) -> str | None:
    try:
        if name is not None:
            return check_name(name)
        return default_name(kb.expanduser().resolve()) if kb is not None else None
    except ServiceError as exc:
        raise click.BadParameter(str(exc), param_hint="--name") from exc


@click.group("service")
def service() -> None:
    """Run `kbseek serve --http` as a background service of your user (systemd or launchd).

    \b
    Example:
        kbseek service install --kb ~/notes --port 8765
        kbseek service status
        kbseek service uninstall --kb ~/notes
    """


@service.command("install")
@click.option(
    "--kb", type=click.Path(path_type=Path, file_okay=False, exists=True), envvar="KBSEEK_KB", required=True,
    help="Knowledge-base folder to serve.",
)  # fmt: skip
@click.option(
    "--config", type=click.Path(path_type=Path, dir_okay=False, exists=True), envvar="KBSEEK_CONFIG",
    help="Config file (default: ./kbseek.toml if present), written into the unit as an absolute path.",
)  # fmt: skip
@click.option(
    "--index-dir", type=click.Path(path_type=Path, file_okay=False), envvar="KBSEEK_INDEX_DIR",
    help="Where the index lives (default: as for kbseek serve).",
)  # fmt: skip
@click.option("--http", is_flag=True, help="Accepted for symmetry with serve: a service always serves HTTP.")
@click.option("--port", type=WholeNumberRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port on 127.0.0.1 to serve /mcp and /ui.")  # fmt: skip
@click.option("--name", default=None, help="Service name: kbseek-NAME (default: the KB folder's name).")
@_manager_option
@click.option("--print", "print_only", is_flag=True, help="Print the unit and write nothing.")
def install(
    kb: Path, config: Path | None, index_dir: Path | None, http: bool, port: int, name: str | None,
    manager: str | None, unit_dir: Path | None, print_only: bool,
) -> None:  # fmt: skip
    """Write a service that runs `kbseek serve --http` for one knowledge base.

    A service has no host process at the other end of stdio, so it always
    serves Streamable HTTP on 127.0.0.1 (--http is implied; default port 8765).
    The unit uses absolute paths for this kbseek executable, the knowledge
    base and the config, so it runs the same kbseek you ran this with.
    Nothing is started: the commands to start, stop, read the logs and
    uninstall are printed.
    """
    del http  # implied
    chosen, folder, _ = _resolve(manager, unit_dir)
    kb = kb.expanduser().resolve()
    cfg = config if config is not None else find_config(Path.cwd())
    cfg = cfg.expanduser().resolve() if cfg is not None else None
    idx = index_dir.expanduser().resolve() if index_dir is not None else None
    try:  # a unit whose config does not parse would only restart and fail, over and over
        SettingsSource(cfg, root=kb, index_dir=idx).load()
    except KbError as exc:
        raise refused(exc, f"{exc}; fix that first (`kbseek doctor` checks the setup)") from exc
    service_name = _name_for(name, kb)
    assert service_name is not None
    spec = ServiceSpec(service_name, find_program(), kb, port, config=cfg, index_dir=idx)
    if print_only:
        click.echo(render_unit(chosen, spec, Path.home()).decode("utf-8"), nl=False)
        return
    path, replaced = write_unit(chosen, spec, folder, Path.home())
    click.echo(f"{'updated' if replaced else 'wrote'} {path}")
    click.echo(f"  runs:   {shlex.join(spec.arguments())}")
    if cfg is not None and config is None:
        click.echo(f"  config: {cfg} (found in the current folder)")
    click.echo(f"  serves: {spec.url} (web page at /ui)")
    click.echo("")
    for what, command in commands(chosen, service_name, path, Path.home()):
        click.echo(f"{what}:\n  {command}")
    if replaced:
        click.echo(
            f"\nIf it is running, restart it to apply the change: {_restart(chosen, service_name, path)}"
        )


def _restart(manager: Manager, name: str, path: Path) -> str:
    if manager == "systemd":
        return f"systemctl --user daemon-reload && systemctl --user restart {unit_id(manager, name)}"
    return f"launchctl bootout gui/$(id -u)/{unit_id(manager, name)}; launchctl bootstrap gui/$(id -u) {path}"


@service.command("uninstall")
@click.option("--kb", type=click.Path(path_type=Path, file_okay=False), envvar="KBSEEK_KB",
              help="Knowledge base whose service to remove (its name is the folder's name).")  # fmt: skip
@click.option("--name", default=None, help="Service name, as given to install (wins over --kb).")
@_manager_option
def uninstall(kb: Path | None, name: str | None, manager: str | None, unit_dir: Path | None) -> None:
    """Remove an installed service's unit file (stop it first, or after: the command is printed)."""
    chosen, folder, _ = _resolve(manager, unit_dir)
    service_name = _name_for(name, kb)
    if service_name is None:
        names = ", ".join(u.name for u in installed_units(chosen, folder)) or "none"
        raise click.UsageError(
            f"say which service to remove with --name NAME or --kb PATH (installed: {names})"
        )
    removed = remove_unit(chosen, service_name, folder)
    for path in removed:
        click.echo(f"removed {path}")
    click.echo(f"If it is still running, stop it: {stop_after_uninstall(chosen, service_name)}")


@service.command("status")
@click.option("--kb", type=click.Path(path_type=Path, file_okay=False), envvar="KBSEEK_KB",
              help="Only the service of this knowledge base.")  # fmt: skip
@click.option("--name", default=None, help="Only the service of this name.")
@_manager_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def status(
    kb: Path | None, name: str | None, manager: str | None, unit_dir: Path | None, as_json: bool
) -> None:
    """Say whether a kbseek service is installed, what it runs, and (when it can be asked) whether it runs."""
    chosen, folder, real = _resolve(manager, unit_dir)
    service_name = _name_for(name, kb)
    if service_name is not None:
        found = read_unit(chosen, folder / unit_filename(chosen, service_name))
        units = [found] if found is not None else []
    else:
        units = installed_units(chosen, folder) if folder.is_dir() else []
    # The service manager only knows units in its own folder; a --unit-dir elsewhere is just files.
    states = {u.name: live_state(chosen, u.name) if real else None for u in units}
    if as_json:
        rows = [{"name": u.name, "installed": True, "path": str(u.path), "knowledge_base": u.kb,
                 "command": u.command, "state": states[u.name]} for u in units]  # fmt: skip
        if service_name is not None and not units:
            rows = [{"name": service_name, "installed": False,
                     "path": str(folder / unit_filename(chosen, service_name))}]  # fmt: skip
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not units and service_name is not None:
        click.echo(
            f"kbseek-{service_name}: not installed (no {folder / unit_filename(chosen, service_name)})"
        )
        return
    if not units:
        click.echo(f"no kbseek service is installed in {folder}")
        return
    for u in units:
        click.echo(f"kbseek-{u.name}: installed at {u.path}")
        if u.kb:
            click.echo(f"  knowledge base: {u.kb}")
        click.echo(f"  runs:  {u.command}")
        if states[u.name]:
            click.echo(f"  state: {states[u.name]}")
