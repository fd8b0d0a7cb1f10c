"""Named points inside a write, where a test stops the process to prove a crash there loses nothing.

A write calls :func:`reached` at each point (``compared``, ``written``, ``linked``, ``exchanged``,
``checked``, ``done`` …); nothing happens unless a test has set :data:`hook`, which a child process
uses to ``SIGKILL`` itself at one of them. One attribute and one call per point: the price of
testing every crash point with a real ``kill -9`` instead of trusting a reading of the code.
"""

from __future__ import annotations

from collections.abc import Callable

hook: Callable[[str], None] | None = None
"""Called with the point's name each time a write reaches one; ``None`` outside tests."""


def reached(step: str) -> None:
    if hook is not None:
        hook(step)
