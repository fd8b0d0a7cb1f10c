"""Embedding the documents a pass has written while it parses the next ones.

A pass writes every changed document before it embeds (new text is searchable by keyword within
seconds, and the embed phase knows its total). The default model runs on one BLAS thread, so while
the pass parses, which is pure Python on one core, the other core sat idle, and once it embeds, the
parser's core did. On a tree of 10,000 distinct notes parsing was about 15 % of the pass. Here a
worker thread embeds chunks of the documents already written while the pass parses the next ones;
whatever it has not reached when parsing ends is the embed phase's ordinary work.

Two rules keep this safe:

* only the worker calls the model and only the pass's thread touches the store: the pass hands
  texts over and writes the vectors that come back, between documents, each batch in its own
  transaction, so a crash loses at most the batches not yet written, as in the embed phase;
* the work handed over is bounded (``depth`` batches). Documents written faster than the worker
  embeds wait as ids, and their texts are read from the store only when handed over, so memory
  does not grow with the pass.

A failure in the worker ends the overlap only: the embed phase meets the same chunks and reports the
failure as it always has.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from kbseek.embed.chunk_vectors import ChunkText
from kbseek.store.records import PendingChunk

log = logging.getLogger(__name__)

EmbedChunks = Callable[[list[ChunkText]], np.ndarray]
PendingOf = Callable[[Sequence[int]], list[PendingChunk]]
SaveVectors = Callable[[dict[str, np.ndarray]], None]

_Work = tuple[list[str], list[ChunkText]]


class EmbedAhead:
    """One worker thread embedding written documents' chunks, fed and drained by the pass's thread.

    Call :meth:`written` after each document is written and :meth:`close` when parsing ends (or
    :meth:`stop` when the pass fails). Not thread-safe itself: one pass's thread drives it.
    """

    def __init__(
        self, embed: EmbedChunks, *, pending: PendingOf, save: SaveVectors, batch: int, depth: int = 2
    ) -> None:
        self._embed = embed
        self._pending = pending
        self._save = save
        self._batch = max(1, batch)
        self._documents: deque[int] = deque()
        self._carry: list[PendingChunk] = []
        self._in_flight: set[str] = set()
        """Content hashes handed over and not yet saved: a text two documents share is embedded once."""
        self._depth = max(1, depth)
        self._todo: queue.Queue[_Work | None] = queue.Queue(maxsize=self._depth)
        self._done: queue.Queue[tuple[list[str], np.ndarray]] = queue.Queue()
        self._stopping = threading.Event()
        self.failure: Exception | None = None
        self._thread = threading.Thread(target=self._work, name="kbseek-embed-ahead", daemon=True)
        self._thread.start()

    def written(self, document_id: int) -> None:
        """A document was written: save what the worker finished and hand it more if it has room."""
        self._documents.append(document_id)
        self._save_finished()
        if self.failure is None:
            self._hand_over()

    def close(self) -> None:
        """Wait for the work already handed over and save it; documents not handed over are left to
        the embed phase."""
        self._finish()
        self._save_finished()
        if self.failure is not None:
            log.info("embedding during parsing stopped (%s); the embed phase takes over", self.failure)

    def stop(self) -> None:
        """End the worker without saving: the pass is failing, and its store may be what failed."""
        self._stopping.set()
        self._finish()

    # -- the pass's side ---------------------------------------------------------------------------

    def _hand_over(self) -> None:
        """Fill the free places of the work queue, at most ``depth`` batches per call: a worker that
        empties the queue as fast as it is filled must not keep the pass from parsing."""
        for _ in range(self._depth):
            if self._todo.full():
                return
            while len(self._carry) < self._batch and self._documents:
                for chunk in self._pending([self._documents.popleft()]):
                    if chunk.content_hash not in self._in_flight:
                        self._in_flight.add(chunk.content_hash)
                        self._carry.append(chunk)
            if not self._carry:
                return
            work, self._carry = self._carry[: self._batch], self._carry[self._batch :]
            self._todo.put_nowait(([c.content_hash for c in work], [(c.heading_path, c.text) for c in work]))

    def _save_finished(self) -> None:
        vectors: dict[str, np.ndarray] = {}
        while True:
            try:
                hashes, matrix = self._done.get_nowait()
            except queue.Empty:
                break
            vectors.update(zip(hashes, matrix, strict=True))
            self._in_flight.difference_update(hashes)
        if vectors:
            self._save(vectors)

    def _finish(self) -> None:
        self._documents.clear()
        self._carry = []
        self._todo.put(None)  # the worker drains the queue, so this waits at most one batch
        self._thread.join()

    # -- the worker's side -------------------------------------------------------------------------

    def _work(self) -> None:
        while (work := self._todo.get()) is not None:
            if self.failure is not None or self._stopping.is_set():
                continue  # drain, so that the pass's final put never blocks
            hashes, inputs = work
            try:
                matrix = self._embed(inputs)
            except Exception as exc:  # reported by close(); the embed phase retries these chunks
                self.failure = exc
                continue
            self._done.put((hashes, matrix))
