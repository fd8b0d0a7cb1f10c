"""The trail of writes: one JSON line per note an agent created, changed, moved, deleted or
restored, kept beside the index.

It answers "what did the agents write, and from what": when, which client, the path (and the new
one for a move), the hash before and after, and the diff's size. ``index_status`` shows the last
few; ``kbseek notes log`` lists them. Written by the call that wrote (a write is rare and already
synced to disk twice, so one more append costs nothing a search would feel), appended under a lock,
each line flushed whole, so a crash loses at most the line of the write it interrupted.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

TRAIL_NAME = "writes.jsonl"
"""The trail's file, in the index's folder: per knowledge base, never among the notes."""


@dataclass(frozen=True)
class WriteRecord:
    time: str
    """UTC, ISO 8601 to the millisecond."""
    operation: str
    path: str
    diff_lines: int
    """Lines the diff added or removed."""
    client: str | None = None
    before: str | None = None
    """The note's hash before the write; ``None`` for a note created."""
    after: str | None = None
    """Its hash after; ``None`` for a note deleted."""
    new_path: str | None = None
    trash: str | None = None


def utc_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


class Trail:
    """Appends records to, and reads the last ones from, the trail in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / TRAIL_NAME
        self._lock = threading.Lock()

    def add(self, record: WriteRecord) -> None:
        line = json.dumps({k: v for k, v in asdict(record).items() if v is not None}, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
            finally:
                os.close(fd)

    def last(self, count: int) -> list[WriteRecord]:
        """The last ``count`` records, newest first; a line a crash cut short is skipped."""
        if count <= 0 or not self.path.exists():
            return []
        kept: deque[WriteRecord] = deque(maxlen=count)
        with self.path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    kept.append(WriteRecord(**json.loads(line)))
                except (ValueError, TypeError):
                    continue
        return list(reversed(kept))
