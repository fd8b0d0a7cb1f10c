"""Non-regular files named like notes (FIFOs, sockets, devices) are listed as skipped, with what they are.

Opening a FIFO blocks until a writer comes, and a device may never end: neither is read, and the
skipped list says why a file the user can see is not in the index.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import make_core


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_like_a_note_is_listed_as_skipped(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "real.md").write_text("# Real\n\nbody\n", encoding="utf-8")
    os.mkfifo(root / "x.md")
    os.mkfifo(root / "pipe.bin")  # not named like a note: ignored like any other non-note file
    kb = make_core(root)
    try:
        kb.index()
        assert [(s.path, s.reason) for s in kb.store.skipped()] == [("x.md", "not a regular file (a FIFO)")]
        kb._runner._on_files_changed({root / "x.md"})  # a watcher batch reaches the same verdict
        assert [(s.path, s.reason) for s in kb.store.skipped()] == [("x.md", "not a regular file (a FIFO)")]
    finally:
        kb.close()
