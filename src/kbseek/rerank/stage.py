"""The rerank stage: a reranker run so that it can only improve a search or leave it as it was.

A search must answer whatever the reranker does, so the reranker runs in a thread of its own and
the search waits for it at most ``[rerank] budget_s``. Down (refused, failing to load), slow (past
the budget, or still loading its model) or wrong (an error status, a malformed answer, a score that
is not a number): the search keeps the fused order and says why in one note. A call that overruns
the budget is left to finish on its own (an HTTP request ends with its timeout, which is the
budget; an ONNX run cannot be interrupted). At most ``WORKERS`` calls run at once, so a reranker
slower than the searches can never pile threads up: a search that finds every slot taken waits
its budget out for one and never starts its call. The threads are daemons started per call, so
nothing idles after a knowledge base closes and no stuck call holds up the process's exit.

:func:`reorder` is the ordering itself, kept pure so that it is tested without a model: the
candidates are put in the reranker's order, and the fused scores they held are dealt out again in
that order, so the scores a search returns stay on the fused scale that every later step reads
(distinct documents first, several collections merged by score, decision 0037) and fall as the
ranking does (docs/decisions/0038).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TypeVar

from kbseek.rerank.base import Reranker, RerankFailed, RerankSpec, make_reranker

log = logging.getLogger(__name__)

T = TypeVar("T")

WORKERS = 2
"""Reranker calls running at once, per knowledge base. Two cores are a common machine: more would
only make each call slower, and the budget turns a slow call into the fused order."""


@dataclass(frozen=True)
class Reranked:
    """What the stage made of one search's candidates."""

    scores: tuple[float, ...] | None
    """One score per candidate text, in the order given; ``None``: keep the fused order."""
    note: str | None = None
    """Why the fused order was kept, for the search's notes; ``None`` when the reranker answered."""


def reorder(scores: Sequence[float], fused: Sequence[float]) -> list[tuple[int, float]]:
    """The candidates' positions best first by rerank score, each with the score its new place takes.

    Ties keep the fused order. The scores dealt out are the candidates' own fused scores, highest
    first, so the first place gets the best fused score whichever candidate now holds it: the
    scores of a search fall as its ranking does, stay on the fused scale, and never rise above the
    best fused score or fall below the worst of the candidates (the candidates not reranked, below
    them, keep theirs).
    """
    if len(scores) != len(fused):
        raise ValueError(f"{len(scores)} rerank scores for {len(fused)} candidates")
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    dealt = sorted(fused, reverse=True)
    return [(i, dealt[place]) for place, i in enumerate(order)]


class RerankStage:
    """One reranker with its candidate count and budget, and the workers that run it."""

    def __init__(self, reranker: Reranker, *, candidates: int, budget_s: float) -> None:
        self.reranker = reranker
        self.candidates = candidates
        """How many of the fused ranking's best chunks a search gives the reranker."""
        self.budget_s = budget_s
        self._slots = threading.BoundedSemaphore(WORKERS)
        # Load at once, beside the searches: a local model takes longer than one search's budget to
        # load, and the searches before it is ready answer in the fused order, saying so.
        self._loading: Future[None] = _in_thread(self._warm_up)

    @classmethod
    def from_spec(cls, spec: RerankSpec) -> RerankStage:
        """The stage ``[rerank]`` describes; ``spec`` must be enabled (a provider is set).

        A provider whose factory fails (a plugin's) gives a stage whose every search says why,
        rather than an error from the search that first needed it.
        """
        try:
            reranker = make_reranker(spec)
        except Exception as exc:
            log.exception("the rerank provider %r could not be built", spec.provider)
            reranker = _Unbuilt(f"rerank provider {spec.provider!r}", f"{type(exc).__name__}: {exc}")
        return cls(reranker, candidates=spec.candidates, budget_s=spec.budget_s)

    def score(self, query: str, texts: Sequence[str]) -> Reranked:
        """The reranker's scores for ``texts`` against ``query``, or the reason there are none.

        Never raises and never waits much longer than the budget: whatever goes wrong is a note.
        """
        if not texts:
            return Reranked(())
        deadline = time.monotonic() + self.budget_s
        if not self._loading.done():
            try:
                self._loading.result(timeout=self.budget_s)
            except FutureTimeout:
                return self._skipped(f"{self.reranker.name} is still loading its model")
        overran = f"{self.reranker.name} did not answer within {self.budget_s:g} s (rerank budget_s)"
        if not self._slots.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            return self._skipped(overran)  # every slot is held by calls that overran theirs
        remaining = max(deadline - time.monotonic(), 0.001)
        job = _in_thread(self._run, query, list(texts), remaining, release=self._slots.release)
        try:
            scores = job.result(timeout=remaining)
        except FutureTimeout:
            return self._skipped(overran)
        except RerankFailed as exc:
            return self._skipped(str(exc))
        except Exception:
            log.exception("the reranker %s failed unexpectedly", self.reranker.name)
            return self._skipped(f"{self.reranker.name} failed unexpectedly (a bug; the log has the details)")
        if len(scores) != len(texts):
            return self._skipped(f"{self.reranker.name} gave {len(scores)} scores for {len(texts)} texts")
        if not all(isinstance(s, int | float) and math.isfinite(s) for s in scores):
            return self._skipped(f"{self.reranker.name} gave a score that is not a finite number")
        return Reranked(tuple(float(s) for s in scores))

    def _run(self, query: str, texts: list[str], timeout_s: float) -> list[float]:
        self.reranker.load()  # at once when loaded; a failed warm-up is tried again here
        return self.reranker.score(query, texts, timeout_s=timeout_s)

    def _warm_up(self) -> None:
        try:
            self.reranker.load()
        except RerankFailed as exc:
            log.warning("the reranker could not load: %s", exc)  # each search says so in its notes
        except Exception:
            log.exception("the reranker %s failed to load unexpectedly", self.reranker.name)

    @staticmethod
    def _skipped(reason: str) -> Reranked:
        return Reranked(None, f"not reranked: {reason}; the hits are in the fused order")


class _Unbuilt:
    """The reranker of a provider whose factory failed: every load says so (see ``from_spec``)."""

    def __init__(self, name: str, error: str) -> None:
        self.name = name
        self._error = error

    def load(self) -> None:
        raise RerankFailed(f"{self.name} could not be built ({self._error}); check its [rerank] settings")

    def score(self, query: str, texts: Sequence[str], *, timeout_s: float) -> list[float]:
        self.load()
        return []


def _in_thread(work: Callable[..., T], *args: object, release: Callable[[], None] | None = None) -> Future[T]:
    """``work(*args)`` in a daemon thread of its own; the future holds its result or its exception.

    ``release`` runs when the work ends, whatever its outcome (the stage's slot).
    """
    future: Future[T] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(work(*args))
        except BaseException as exc:  # handed to the waiting search, which decides what it means
            future.set_exception(exc)
        finally:
            if release is not None:
                release()

    threading.Thread(target=run, name="kbseek-rerank", daemon=True).start()
    return future
