"""The file watcher: changes are indexed without any call arriving."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from tests.conftest import make_core


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def paths(core: KnowledgeBase) -> set[str]:
    return {d.path for d in core.store.documents()}


@contextmanager
def watching(core: KnowledgeBase) -> Iterator[KnowledgeBase]:
    """``core`` indexed, with its watcher running; closed afterwards."""
    core.index()
    core.start_watching()
    try:
        assert wait_for(lambda: core.watcher_state == "running")
        yield core
    finally:
        core.close()


def test_created_edited_renamed_deleted_files_and_a_renamed_folder_are_indexed_by_the_watcher(
    kb_root: Path,
) -> None:
    # No stat scan: only the watcher can notice.
    with watching(make_core(kb_root, freshness_interval_s=3600.0)) as core:
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
    assert core.watcher_state == "off"


def test_editing_the_ignore_file_re_applies_the_exclusions(kb_root: Path) -> None:
    with watching(make_core(kb_root, freshness_interval_s=3600.0)) as core:
        assert "notes/障害対応.md" in paths(core) and "drafts/secret-plan.md" not in paths(core)
        (kb_root / ".kbseekignore").write_text("notes/\n", encoding="utf-8")
        assert wait_for(
            lambda: (
                "drafts/secret-plan.md" in paths(core)
                and not any(p.startswith("notes/") for p in paths(core))
            )
        )


def test_editing_the_config_file_re_applies_what_a_running_server_can(kb_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "elsewhere" / "kbseek.toml"  # outside the knowledge base
    config.parent.mkdir()
    config.write_text(
        "exclude_dirs = []\n[index]\nfreshness_interval = 3600\n", encoding="utf-8"
    )  # no stat scan
    with watching(KnowledgeBase(kb_root, config=config, semantic=False)) as core:
        assert "runbooks/deploy.md" in paths(core)
        config.write_text('exclude_dirs = ["runbooks"]\n[limits]\nmax_limit = 20\n', encoding="utf-8")
        assert wait_for(lambda: not any(p.startswith("runbooks/") for p in paths(core)))
        assert core.limits.max_limit == 20
        assert core.status().notes == []

        config.write_text('exclude_dirs = ["runbooks"\n', encoding="utf-8")  # broken: kept as it was
        assert wait_for(lambda: any("was not applied" in n for n in core.status().notes))
        assert core.settings.exclude_dirs == ("runbooks",)

        config.write_text('exclude_dirs = []\n[embed]\nprovider = "e5"\n', encoding="utf-8")
        assert wait_for(lambda: "runbooks/deploy.md" in paths(core))
        assert any("embed" in n and "restarted" in n for n in core.status().notes)


def test_the_config_file_is_also_re_read_by_the_stat_scan_before_a_call(
    kb_root: Path, tmp_path: Path
) -> None:
    """Without a watcher (or when an editor's rename-on-save escapes it), the next call applies it."""
    config = tmp_path / "kbseek.toml"
    config.write_text("exclude_dirs = []\n[index]\nfreshness_interval = 0\n", encoding="utf-8")
    core = KnowledgeBase(kb_root, config=config, semantic=False)
    try:
        core.index()
        replacement = tmp_path / "kbseek.toml.new"
        replacement.write_text('exclude_dirs = ["runbooks"]\n', encoding="utf-8")
        replacement.replace(config)
        assert not any(h.path.startswith("runbooks/") for h in core.search("load balancer").hits)
        assert not any(p.startswith("runbooks/") for p in paths(core))
    finally:
        core.close()


def test_a_burst_of_a_thousand_files_is_a_handful_of_passes_not_a_thousand(kb_root: Path) -> None:
    passes: list[int] = []
    with watching(make_core(kb_root, freshness_interval_s=3600.0)) as core:
        core.on_index_change(lambda report: passes.append(len(report.added)))
        burst = kb_root / "checkout"
        burst.mkdir()
        for i in range(1000):
            (burst / f"f{i:04}.md").write_text(f"# File {i}\n\nbody {i}\n", encoding="utf-8")
        assert wait_for(lambda: sum(passes) == 1000, seconds=60)
        assert len(passes) <= 3, passes


FALLBACK = """
import sys, time
from pathlib import Path
from kbseek.config import Settings
from kbseek import KnowledgeBase
root = Path(sys.argv[1])
core = KnowledgeBase(settings=Settings(root=root, semantic=False, freshness_interval_s=0.0))
core.index()
core.start_watching()
deadline = time.monotonic() + 10
while core.watcher_state in ("starting", "running") and time.monotonic() < deadline:
    time.sleep(0.05)
print(core.status().watcher)
(root / "notes" / "late.md").write_text("# Late\\n\\nA note about quokkas.\\n", encoding="utf-8")
print(any(h.path == "notes/late.md" for h in core.search("quokkas").hits))
core.close()
"""


def test_when_the_watcher_cannot_run_the_status_says_so_and_the_stat_scan_keeps_up(kb_root: Path) -> None:
    """A real failure, not a simulated one: inotify instances set to 0 in a user namespace of its own."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("util-linux `unshare` is not installed")
    probe = subprocess.run(
        [unshare, "-U", "-r", "sh", "-c", "echo 0 > /proc/sys/user/max_inotify_instances"],
        capture_output=True, text=True,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot limit inotify in a user namespace here: {probe.stderr.strip()}")
    done = subprocess.run(
        [unshare, "-U", "-r", "sh", "-c",
         'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" -c "$1" "$2"',
         sys.executable, FALLBACK, str(kb_root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    watcher, found = done.stdout.strip().splitlines()
    assert watcher.startswith("unavailable:") and "stat scan" in watcher
    assert "fs.inotify.max_user_instances" in watcher  # says what to raise
    assert found == "True"
