"""The command line's side of the error table (:mod:`kbseek.server.errors`).

Every ``kbseek`` command runs under :class:`KbseekGroup`, which answers what escapes a command:
a refusal exits with the table's status (1) and its own message; anything else is a bug, which
exits 70 (EX_SOFTWARE) and says so, because a bare traceback reads as "you did something wrong" to whoever runs a
command, and scripts could not tell it from a refusal. ``-v`` adds the traceback for the report.
"""

from __future__ import annotations

import errno
import functools
import traceback
from typing import Any, cast

import click

from kbseek.errors import KbError
from kbseek.server.errors import BUG_EXIT, answer_for

VERBOSITY = "kbseek.verbosity"
"""``click.Context.meta`` key: the ``-v`` count of a command that has the option (meta is shared by
every context of one invocation, so the group sees what the command set)."""


@functools.cache
def _exiting(status: int) -> type[click.ClickException]:
    """click reads a failure's exit status from its class, so one subclass per status the table uses."""
    return cast(
        type[click.ClickException], type(f"Exit{status}", (click.ClickException,), {"exit_code": status})
    )


def refused(exc: KbError, message: str | None = None) -> click.ClickException:
    """A refusal as the CLI says it; ``message`` replaces the exception's text to add context."""
    return _exiting(answer_for(exc).exit)(str(exc) if message is None else message)


def note_verbosity(verbose: int) -> None:
    """Record a command's ``-v`` count for the bug report; called where the command sets up logging."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[VERBOSITY] = verbose


def bug(exc: BaseException, verbosity: int | None) -> click.ClickException:
    """A bug as the CLI says it: what failed, that it is kbseek's fault, and how to get the traceback.

    The exception's own text is shown here (unlike over the network): the person running the
    command owns the machine, and the text makes the report useful.
    """
    if verbosity:
        click.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
    hint = "; run it again with -v to see the traceback" if verbosity == 0 else ""  # None: no -v option
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _exiting(BUG_EXIT)(f"internal error ({what}): this is a bug in kbseek, please report it{hint}")


class KbseekGroup(click.Group):
    """The root command group: every error a command lets escape is answered from the error table."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click's own answers: usage errors, --help, Ctrl-C
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise  # `kbseek search … | head`: click ends quietly on a closed pipe
            raise _translated(exc, ctx) from exc
        except Exception as exc:
            raise _translated(exc, ctx) from exc


def _translated(exc: Exception, ctx: click.Context) -> click.ClickException:
    if isinstance(exc, KbError):
        return refused(exc)
    verbosity = ctx.meta.get(VERBOSITY)
    return bug(exc, verbosity if isinstance(verbosity, int) else None)
