"""Who keeps the index fresh (T10, docs/decisions/0015): the watcher while it runs, else a stat scan per call.

While the watcher runs, a call does no work that grows with the number of files: no stat scan on
the caller's thread. A background reconciliation (``kbseek-reconcile``) scans at an interval for
what the watcher missed. With the watcher off, starting or unavailable, each call stat-scans as
before. Most tests here stand a stub in for the watcher, so its state is exactly what the test says
and it never fires: whatever reaches the index got there by another route.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.cli import cli
from kbseek.config import Settings
from kbseek.errors import ConfigError, EmbedderUnavailable
from kbseek.ingest.indexer import Indexer
from kbseek.ingest.scan import ScanResult
from kbseek.ingest.watch import Watcher
from kbseek.render import status_text
from kbseek.server.mcp import build_server
from tests.conftest import make_core
from tests.fakes import FakeEmbedder

RECONCILE = "kbseek-reconcile"
WAIT = 30.0
"""How long a test waits for a background thread before it fails; never a measure of speed."""


class StubWatcher:
    """Stands in for :class:`~kbseek.ingest.watch.Watcher`: takes the state it is told, never fires."""

    state_on_start = "running"

    def __init__(
        self, root: Path, index_dir: Path, on_batch: Callable[[set[Path]], None], *, also: Path | None = None
    ) -> None:
        self.on_batch = on_batch
        self.state = "off"

    def start(self) -> None:
        self.state = self.state_on_start

    def stop(self) -> None:
        if not self.state.startswith("unavailable"):
            self.state = "off"


def stub_watcher(monkeypatch: pytest.MonkeyPatch, state: str) -> None:
    stub = type("StubWatcher", (StubWatcher,), {"state_on_start": state})
    monkeypatch.setattr("kbseek.facade.runner.Watcher", stub)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread of every ``Indexer.quick_scan``, in order."""
    seen: list[str] = []
    original = Indexer.quick_scan

    def counting(self: Indexer) -> ScanResult:
        seen.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(Indexer, "quick_scan", counting)
    return seen


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> queue.Queue[str]:
    """The name of the thread of every ``Indexer.run`` (a pass), as it starts."""
    seen: queue.Queue[str] = queue.Queue()
    original = Indexer.run

    def recording(self: Indexer, *args: Any, **kwargs: Any) -> Any:
        seen.put(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Indexer, "run", recording)
    return seen


@contextmanager
def watched(core: KnowledgeBase) -> Iterator[KnowledgeBase]:
    """``core`` indexed, with its (stub or real) watcher started; closed afterwards."""
    core.index()
    core.start_watching()
    try:
        yield core
    finally:
        core.close()


def paths(core: KnowledgeBase) -> set[str]:
    return {d.path for d in core.store.documents()}


def reconcilers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == RECONCILE]


# -- the request path ------------------------------------------------------------------------------


def test_with_the_watcher_running_calls_make_no_stat_scan(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, scans: list[str]
) -> None:
    stub_watcher(monkeypatch, "running")
    with watched(make_core(kb_root, freshness_interval_s=0.0, reconcile_interval_s=3600.0)) as core:
        scans.clear()
        (kb_root / "notes" / "unannounced.md").write_text("# Unannounced\n\nokapi\n", encoding="utf-8")
        for _ in range(20):
            core.search("load balancer")
            core.topics()
            core.read_document("runbooks/deploy.md")
        assert [name for name in scans if name == threading.current_thread().name] == []
        assert not core.search("okapi").hits  # no event came and no call scanned: not yet seen
        status = core.status()
        assert status.watcher == "running"
        assert status.freshness == "watcher, and a full stat scan every 3600 s"


@pytest.mark.parametrize("state", ["unavailable: inotify says no", "starting"])
def test_with_the_watcher_unavailable_or_starting_each_call_stat_scans_as_before(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, scans: list[str], state: str
) -> None:
    stub_watcher(monkeypatch, state)
    with watched(make_core(kb_root, freshness_interval_s=0.0)) as core:
        scans.clear()
        for _ in range(5):
            core.search("load balancer")
        assert scans == [threading.current_thread().name] * 5
        (kb_root / "notes" / "late.md").write_text("# Late\n\nquokka\n", encoding="utf-8")
        assert [h.path for h in core.search("quokka").hits] == ["notes/late.md"]  # on the next call
        assert core.status().freshness == "stat scan before each call, at most every 0 s"


def test_without_a_watcher_the_stat_scan_stays_rate_limited(kb_root: Path, scans: list[str]) -> None:
    core = make_core(kb_root, freshness_interval_s=3600.0)
    try:
        core.index()  # a pass counts as the last look
        scans.clear()
        for _ in range(5):
            core.search("load balancer")
        assert scans == []
        assert core.status().watcher == "off"
        assert core.status().freshness == "stat scan before each call, at most every 3600 s"
    finally:
        core.close()


def test_an_owed_pass_is_run_by_the_reconciliation_not_by_the_call(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, scans: list[str], passes: queue.Queue[str]
) -> None:
    """A failed pass is owed (its documents lack vectors); with the watcher running the call hands it
    to the reconciliation thread and answers at once, and that thread's pass embeds them."""
    stub_watcher(monkeypatch, "running")
    embedder = FakeEmbedder()
    settings = Settings(root=kb_root, freshness_interval_s=0.0, reconcile_interval_s=3600.0)
    core = KnowledgeBase(settings=settings, embedder=embedder)
    try:
        core.load_semantic()
        embedder.fail = "the model server is down"
        with pytest.raises(EmbedderUnavailable):
            core.index()
        assert core.store.chunks_without_vectors()
        core.start_watching()
        embedder.fail = None
        scans.clear()
        while not passes.empty():
            passes.get()  # the failed pass, on this thread
        core.search("load balancer")
        assert passes.get(timeout=WAIT) == RECONCILE
        core.close()  # waits for that pass
        assert not core.store.chunks_without_vectors()
        assert threading.current_thread().name not in scans
    finally:
        core.close()


# -- the reconciliation ----------------------------------------------------------------------------


def test_the_reconciliation_finds_a_change_no_watcher_event_announced(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub_watcher(monkeypatch, "running")
    found = threading.Event()
    threads: list[str] = []

    def changed(_report: object) -> None:
        threads.append(threading.current_thread().name)
        found.set()

    with watched(make_core(kb_root, reconcile_interval_s=0.05)) as core:
        core.on_index_change(changed)
        (kb_root / "notes" / "lost.md").write_text("# Lost\n\nan event the queue dropped\n", encoding="utf-8")
        assert found.wait(WAIT)
        assert threads[0] == RECONCILE
        assert "notes/lost.md" in paths(core)


def test_the_reconciliation_stops_on_close(kb_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub_watcher(monkeypatch, "running")
    core = make_core(kb_root, reconcile_interval_s=3600.0)  # close must wake it, not wait an hour
    core.index()
    core.start_watching()
    assert len(reconcilers()) == 1
    core.close()
    assert reconcilers() == []
    assert core.status().freshness.startswith("stat scan before each call")


def test_no_reconciliation_thread_when_the_watcher_cannot_start(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub_watcher(monkeypatch, "unavailable: No module named 'watchfiles'")
    with watched(make_core(kb_root)) as _core:
        assert reconcilers() == []


def test_the_reconciliation_skips_its_turn_while_a_pass_runs(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch, scans: list[str]
) -> None:
    """Never two passes at once, and never a wait on the pass lock: the running pass rescans anyway."""
    stub_watcher(monkeypatch, "running")
    with watched(make_core(kb_root, reconcile_interval_s=3600.0)) as core:
        runner = core._runner
        scans.clear()
        with runner._pass_lock:
            runner.reconcile()
        assert scans == []
        runner.reconcile()
        assert scans == [threading.current_thread().name]


# -- the real watcher ------------------------------------------------------------------------------


def test_the_real_watcher_says_running_once_its_watches_are_in_place_and_then_runs_one_pass(
    kb_root: Path, tmp_path: Path
) -> None:
    """That first, empty batch is the pass that finds what changed before the watches existed."""
    batches: queue.Queue[tuple[set[Path], str]] = queue.Queue()
    watcher = Watcher(kb_root, tmp_path / "index", lambda changed: batches.put((changed, watcher.state)))
    watcher.start()
    try:
        assert batches.get(timeout=WAIT) == (set(), "running")
        (kb_root / "notes" / "after.md").write_text("# After\n", encoding="utf-8")
        changed, _ = batches.get(timeout=WAIT)
        assert kb_root / "notes" / "after.md" in changed
    finally:
        watcher.stop()


def test_with_the_real_watcher_running_calls_make_no_stat_scan(kb_root: Path, scans: list[str]) -> None:
    ready = threading.Event()
    with watched(make_core(kb_root, freshness_interval_s=0.0)) as core:
        core.on_index_change(lambda _report: ready.set())
        (kb_root / "notes" / "watched.md").write_text("# Watched\n\nwombat\n", encoding="utf-8")
        assert ready.wait(WAIT)  # the watcher's pass: it is running now
        scans.clear()
        for _ in range(10):
            assert [h.path for h in core.search("wombat").hits] == ["notes/watched.md"]
        assert threading.current_thread().name not in scans
        assert core.status().freshness == "watcher, and a full stat scan every 300 s"


# -- every surface says which mode ----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_index_status_and_the_status_text_name_the_mode(
    kb_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub_watcher(monkeypatch, "running")
    core = make_core(kb_root, reconcile_interval_s=120.0)
    core.index()
    core.start_watching()
    try:
        async with Client(build_server(core)) as client:
            result = await client.call_tool("index_status", {})
        assert result.structured_content is not None
        assert result.structured_content["freshness"] == "watcher, and a full stat scan every 120 s"
        assert "freshness:      watcher, and a full stat scan every 120 s" in status_text(core.status())
    finally:
        core.close()


def test_the_cli_status_names_the_mode_of_a_command_that_only_reads(kb_root: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["index", "--kb", str(kb_root), "--lexical-only"]).exit_code == 0
    done = runner.invoke(cli, ["status", "--kb", str(kb_root), "--lexical-only", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["freshness"] == "none: this command only reads the index"
    text = runner.invoke(cli, ["status", "--kb", str(kb_root), "--lexical-only"]).stdout
    assert "freshness:      none: this command only reads the index" in text


# -- the setting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_bad_reconcile_interval_is_a_config_error_naming_it(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ConfigError, match=r"\[index\]\.reconcile_interval"):
        Settings(root=tmp_path, reconcile_interval_s=bad)


@pytest.mark.parametrize("value", ["0", "-5", '"soon"'])
def test_a_bad_reconcile_interval_in_the_config_file_is_a_config_error_naming_it(
    kb_root: Path, tmp_path: Path, value: str
) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text(f"[index]\nreconcile_interval = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[index\]\.reconcile_interval"):
        KnowledgeBase(kb_root, config=config, semantic=False)


def test_the_reconcile_interval_is_read_from_the_config_file(kb_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "kbseek.toml"
    config.write_text("[index]\nreconcile_interval = 60\n", encoding="utf-8")
    core = KnowledgeBase(kb_root, config=config, semantic=False)
    try:
        assert core.settings.reconcile_interval_s == 60.0
        assert Settings(root=kb_root).reconcile_interval_s == 300.0
    finally:
        core.close()
