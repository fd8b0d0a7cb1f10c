"""Knowledge-base calls run off the event loop, a few at a time, first come first served.

A search is CPU work: the analyzer, SQLite, the model, NumPy, snippets. Handed to a thread each
(the SDK's and anyio's default allows 40 at once), twenty concurrent searches on a two-core
machine share the cores twenty ways, so every one of them takes the time of ten, and the slowest
of a burst (a search that is long on its own) ends last by a wide margin. With the calls queued for
a few slots, each runs at about full speed in arrival order: the wait in the queue is what a burst
costs, the same for a short call and a long one.

The count leaves room beyond the cores for a call that waits rather than computes (a search that
runs the freshness pass before answering when the watcher is off, a read of a cold file), so one
slow call does not halve the server. Measured with ``benchmarks/load.py`` (README, "Under load").
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

import anyio
import anyio.to_thread

SLOTS = (os.cpu_count() or 1) + 2
"""Knowledge-base calls that run at once in one server process; the rest wait their turn."""

_P = ParamSpec("_P")
_T = TypeVar("_T")

_limiter = anyio.CapacityLimiter(SLOTS)


async def in_slot(call: Callable[[], _T]) -> _T:
    """Run a blocking knowledge-base call in a worker thread once a slot is free."""
    return await anyio.to_thread.run_sync(call, limiter=_limiter)


def slotted(fn: Callable[_P, _T]) -> Callable[_P, Awaitable[_T]]:
    """``fn`` as a coroutine function that runs it :func:`in_slot`; its signature and annotations
    stay visible (``functools.wraps``), so a tool's input and output schemas are unchanged."""

    @functools.wraps(fn)
    async def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await in_slot(functools.partial(fn, *args, **kwargs))

    return run
