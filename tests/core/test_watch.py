"""The file watcher: changes are indexed without any call arriving."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kb_mcp.core import KbCore
from tests.conftest import make_core


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def paths(core: KbCore) -> set[str]:
    return {d.path for d in core.store.documents()}


def test_created_edited_renamed_deleted_files_and_a_renamed_folder_are_indexed_by_the_watcher(
    kb_root: Path,
) -> None:
    core = make_core(kb_root, freshness_interval_s=3600.0)  # no stat scan: only the watcher can notice
    core.index()
    core.start_watching()
    try:
        assert wait_for(lambda: core.watcher_state == "running")
        assert core.status().watcher == "running"
        note = kb_root / "notes" / "watched.md"
        note.write_text("# Watched\n\nfirst version\n", encoding="utf-8")
        assert wait_for(lambda: "notes/watched.md" in paths(core))
        note.write_text("# Watched\n\nsecond version mentions wombats\n", encoding="utf-8")
        assert wait_for(lambda: any(h.path == "notes/watched.md" for h in core.search("wombats").hits))
        note.rename(kb_root / "notes" / "moved.md")
        assert wait_for(lambda: "notes/moved.md" in paths(core) and "notes/watched.md" not in paths(core))
        (kb_root / "notes" / "moved.md").unlink()
        assert wait_for(lambda: "notes/moved.md" not in paths(core))
        (kb_root / "runbooks").rename(kb_root / "procedures")
        assert wait_for(
            lambda: (
                "procedures/deploy.md" in paths(core)
                and not any(p.startswith("runbooks/") for p in paths(core))
            )
        )
    finally:
        core.close()
    assert core.watcher_state == "off"
