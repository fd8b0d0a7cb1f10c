"""The checks as a person reads them (a column each for status, name and finding, the fix below) or as
JSON, so the command only prints what this returns and sets the exit status."""

from __future__ import annotations

import json

import click

from kbseek.cli.doctor.result import CheckResult

COLOURS = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "bright_black"}


def report(results: list[CheckResult], *, as_json: bool = False) -> str:
    """The text ends with the counts; colours are ANSI codes, which ``click.echo`` drops off a terminal."""
    if as_json:
        return json.dumps([r.to_dict() for r in results], ensure_ascii=False, indent=2)
    width = max(len(r.name) for r in results)
    lines = []
    for r in results:
        status = click.style(f"{r.status:<4}", fg=COLOURS[r.status], bold=r.status == "fail")
        lines.append(f"{status}  {r.name:<{width}}  {r.detail}")
        if r.fix and r.status != "ok":
            lines.append(f"{'':<4}  {'':<{width}}  fix: {r.fix}")
    counts = {s: sum(r.status == s for r in results) for s in COLOURS}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines)
