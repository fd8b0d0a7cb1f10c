"""How far an indexing pass is: phase, counts, rate and time left, computed in one place.

The indexer only counts (``progress(phase, done, total, item)``). This module turns those counts
into a rate and an ETA once, so the terminal bar, the plain lines in a log and ``index_status``
can never disagree about them. It is pure: the clock is injected, so the arithmetic is tested
with a fake clock instead of sleeping.

A pass goes through the phases in order: ``scan`` (stat the tree; its total is known only when
it ends), ``model`` (loading the embedding model, only in a pass that will embed and only the first
time), ``parse`` (read, parse and chunk the changed files) and ``embed`` (vectors for the
chunks that have none). Each phase has its own clock and rate: files per second while parsing
and chunks per second while embedding are different quantities, and mixing them would make
the ETA wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

UNITS = {"scan": "files", "model": "", "parse": "files", "embed": "chunks", "graph": "vectors"}
"""What each phase counts."""

Clock = Callable[[], float]


@dataclass(frozen=True)
class ProgressSnapshot:
    """One reading of a running pass. Immutable, so another thread can hold it while the pass goes on."""

    phase: str
    done: int
    total: int | None
    """None while the phase cannot know it yet (the scan is still walking the tree)."""
    unit: str
    elapsed: float
    """Seconds since this phase started."""
    rate: float | None
    """Items per second over this phase so far; None until something is done in measurable time."""
    eta: float | None
    """Seconds this phase still needs at the current rate; None when the rate or total is unknown."""
    item: str = ""
    """What is being worked on (a path), for a display that has room for it."""

    def describe(self) -> str:
        """One plain line, e.g. ``embed 340/1200 chunks (28%), 11.2/s, ETA 1m17s``."""
        return describe(self.phase, self.done, self.total, self.unit, self.rate, self.eta)

    def describe_start(self) -> str:
        """The line that says a phase has begun, e.g. ``embed started: 1200 chunks``."""
        if self.phase == "model":
            return "loading the embedding model"
        if self.total is None:
            return f"{self.phase} started"
        return f"{self.phase} started: {self.total} {self.unit}"


ProgressListener = Callable[[ProgressSnapshot], None]
"""What a surface passes to ``KnowledgeBase.index`` to show a pass as it runs."""


class ProgressTracker:
    """Turns a pass's counts into snapshots with a rate and an ETA.

    The rate is the phase's average so far (done / elapsed), not a recent window: indexing work
    is steady (files of similar size, batches of equal size), and an average does not swing with
    one slow file, so the ETA counts down instead of jumping.
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._phase: str | None = None
        self._phase_started = 0.0
        self.current: ProgressSnapshot | None = None
        """The latest snapshot; read from other threads (replacing it is atomic)."""

    def update(self, phase: str, done: int, total: int | None, item: str = "") -> ProgressSnapshot:
        """Record a count; a new phase name restarts the phase clock."""
        now = self._clock()
        if phase != self._phase:
            self._phase, self._phase_started = phase, now
        elapsed = max(0.0, now - self._phase_started)
        rate = done / elapsed if done > 0 and elapsed > 0 else None
        eta: float | None = None
        if total is not None and done >= total:
            eta = 0.0
        elif total is not None and rate:
            eta = (total - done) / rate
        snap = ProgressSnapshot(
            phase=phase, done=done, total=total, unit=UNITS.get(phase, "items"), elapsed=elapsed,
            rate=rate, eta=eta, item=item,
        )  # fmt: skip
        self.current = snap
        return snap


def describe(
    phase: str, done: int, total: int | None, unit: str, rate: float | None, eta: float | None
) -> str:
    """The one wording of progress, shared by the CLI's plain lines and the status text."""
    if total is None:
        counts = f"{phase} {done} {unit}"
    else:
        percent = f" ({100 * done // total}%)" if total else ""
        counts = f"{phase} {done}/{total} {unit}{percent}"
    timing = describe_timing(done, total, rate, eta)
    return f"{counts}, {timing}" if timing else counts


def describe_timing(done: int, total: int | None, rate: float | None, eta: float | None) -> str:
    """``11.2/s, ETA 1m17s``: the rate and time left alone, for a bar that draws the counts itself."""
    parts = []
    if rate is not None:
        parts.append(f"{format_rate(rate)}/s")
    if eta is not None and (total is None or done < total):
        parts.append(f"ETA {format_duration(eta)}")
    return ", ".join(parts)


def format_rate(rate: float) -> str:
    """Items per second with as many digits as people read: 0.42, 11.2, 840."""
    if rate < 1:
        return f"{rate:.2f}"
    if rate < 100:
        return f"{rate:.1f}"
    return f"{rate:.0f}"


def format_duration(seconds: float) -> str:
    """``45s``, ``1m17s``, ``2h03m``: short enough for a log line, exact enough to plan around."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
