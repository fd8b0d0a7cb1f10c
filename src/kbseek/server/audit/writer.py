"""The record's file: one writer thread behind a bounded queue, rotated by size.

A search must never wait for the disk, so :meth:`AuditWriter.put` only hands a line to a queue; one
thread writes, flushes after each batch, and rotates. A full queue drops the line and counts it:
the count is said in the server's log (once, then every :data:`DROP_LOG_EVERY`) and written into
the record itself as soon as there is room, so a gap in the record is never silent. Why a writer of
our own rather than the logging module's handlers: docs/decisions/0055.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger("kbseek.audit")

DROP_LOG_EVERY = 1000
"""After the first dropped record is logged, every this-many-th is."""
BATCH = 256
"""Lines written between two flushes at most: a burst costs one flush, not one per line."""
_STOP = object()


def log_files(path: Path) -> list[Path]:
    """The record's files, oldest first: ``path.N`` … ``path.1``, then ``path`` (as rotation names them)."""
    rotated = []
    for candidate in path.parent.glob(path.name + ".*"):
        suffix = candidate.name[len(path.name) + 1 :]
        if suffix.isdigit():
            rotated.append((int(suffix), candidate))
    return [p for _, p in sorted(rotated, reverse=True)] + ([path] if path.exists() else [])


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every record in ``path`` and its rotated files, oldest first; a line that is not one is skipped
    (a file cut short by a crash ends with half a line)."""
    for file in log_files(path):
        with file.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield record


class AuditWriter:
    """Appends JSON lines to ``path`` from one thread; ``put`` never blocks."""

    def __init__(
        self, path: Path, *, max_bytes: int, files: int, queue_size: int, start: bool = True
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.files = files
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self._dropped = 0
        self._unreported = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kbseek-audit", daemon=True)
        self._closed = False
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if start:
            self.start()

    def start(self) -> None:
        """Start the writer thread (a test holds it back to fill the queue)."""
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Records dropped because the queue was full, since the server started."""
        return self._dropped

    def put(self, record: Mapping[str, Any]) -> bool:
        """Queue ``record``; ``False`` (and counted) when the queue is full or the writer closed."""
        if self._closed:
            return False
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            with self._lock:
                self._dropped += 1
                self._unreported += 1
                dropped = self._dropped
            if dropped == 1 or dropped % DROP_LOG_EVERY == 0:
                log.warning(
                    "audit record: the writer is behind; %d record(s) dropped so far (queue full)", dropped
                )
            return False
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop: called when the server shuts down."""
        if self._closed:
            return
        self._closed = True
        if not self._thread.is_alive():
            return
        self._queue.put(_STOP)  # blocks only while the thread drains a full queue
        self._thread.join(timeout)
        if self._dropped:
            log.warning("audit record: %d record(s) were dropped while serving (queue full)", self._dropped)

    def _run(self) -> None:
        stream = self._open()
        try:
            while True:
                batch = [self._queue.get()]
                while len(batch) < BATCH:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = any(item is _STOP for item in batch)
                lines = [_line(item) for item in batch if item is not _STOP]
                with self._lock:
                    unreported, self._unreported = self._unreported, 0
                if unreported:
                    lines.append(_line({"time": now(), "event": "dropped", "count": unreported}))
                for line in lines:
                    stream = self._write(stream, line)
                stream.flush()
                if stop:
                    return
        except Exception:  # a full disk, a removed folder: said once, never raised into a search
            log.exception("audit record: writing %s failed; no more records are written", self.path)
            self._closed = True
        finally:
            stream.close()

    def _open(self) -> Any:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # readers of reads only
        return os.fdopen(fd, "a", encoding="utf-8")

    def _write(self, stream: Any, line: str) -> Any:
        size = len(line.encode("utf-8"))
        if stream.tell() and stream.tell() + size > self.max_bytes:
            stream.close()
            self._rotate()
            stream = self._open()
        stream.write(line)
        return stream

    def _rotate(self) -> None:
        """``path`` becomes ``path.1``, ``path.1`` becomes ``path.2`` …; past ``files`` the oldest goes."""
        oldest = self.files - 1
        if oldest < 1:
            self.path.unlink(missing_ok=True)
            return
        for n in range(oldest, 0, -1):
            source = self.path if n == 1 else self.path.with_name(f"{self.path.name}.{n - 1}")
            if source.exists():
                os.replace(source, self.path.with_name(f"{self.path.name}.{n}"))


def now() -> str:
    """The time as the record writes it: UTC, ISO 8601, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _line(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
