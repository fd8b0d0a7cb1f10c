"""Shared fixtures: a small English/Japanese knowledge base on disk and a KnowledgeBase indexed over it.

The fixture keeps its historical name ``core`` (and the factory ``make_core``): both give a
:class:`~kbseek.KnowledgeBase`, lexical-only and checking freshness on every call unless told otherwise.

Semantic behaviour is tested with :class:`tests.fakes.FakeEmbedder` (pass ``embedder=`` or use the
``fake_model`` fixture for code that builds its own, like the CLI); only tests marked ``slow`` may load
the real model, and a fast test that does fails, so ``make check`` stays fast without anyone timing it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed import PROVIDERS
from kbseek.embed.local import LocalEmbedder
from tests import postgres_server
from tests.fakes import FakeEmbedder, fake_providers
from tests.postgres_server import StoppableServer

# HYPOTHESIS_PROFILE=soak runs every property with many more examples: the default run draws fresh
# random cases each time, so a rare counterexample can surface in any run; soak looks for them first.
settings.register_profile("soak", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

NOTES: dict[str, str] = {
    "runbooks/deploy.md": """---
title: Deploy runbook
date: 2026-03-01
tags: [deploy, runbook]
---
# Deploy runbook

## Preparing a release

Tag the commit, build the container image and push it to the registry.
The pipeline tastes every image with a smoke test before promotion.

## Rollback

Switch the load balancer back to the previous image tag. Then watch the
error rate dashboard for ten minutes.

```bash
# this is a shell comment, not a heading
kubectl rollout undo deployment/web
```
""",
    "runbooks/database/backup.md": """---
title: Database backups
tags: [database]
---
# Database backups

Nightly snapshots run at 02:00 UTC. Restores are tested every month with
`pg_restore` on a scratch host. The setting `max_idle_conns` limits pooled connections.
""",
    "notes/障害対応.md": """---
title: 障害対応の手順
tags: [oncall]
---
# 障害対応の手順

## 初動

まずアラートの内容を確認し、影響範囲を調べる。猫の写真を共有するチャンネルとは別に、
障害用のチャンネルを立ち上げる。

## 連絡

関係者に状況を連絡し、三十分ごとに更新を投稿する。
""",
    "notes/plain.txt": "Plain text notes about the office coffee machine.\n\nIt needs descaling monthly.\n",
    "drafts/secret-plan.md": "# Draft plan\n\nThe unannounced feature codename is bluebird.\n",
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the user's KBSEEK_* settings or writes into the real cache dir."""
    for key in list(os.environ):
        if key.startswith("KBSEEK_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # a signed-in server's record of reads


@pytest.fixture(autouse=True)
def real_model_only_when_slow(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A fast test that loads a real model would make `make check` slow without saying why: fail it.

    A test of the model itself is marked ``slow``; every other test uses :class:`FakeEmbedder`.
    """
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    loaded: list[str] = []
    loaded_model = LocalEmbedder._loaded_model  # every in-process provider gets its model here

    def recording(self: LocalEmbedder[Any]) -> Any:
        was_loaded = self.loaded
        model = loaded_model(self)
        if not was_loaded:
            loaded.append(self.model_id)
        return model

    monkeypatch.setattr(LocalEmbedder, "_loaded_model", recording)
    yield
    if loaded:
        pytest.fail(f"a test not marked slow loaded the real model {loaded[0]}: use tests.fakes.FakeEmbedder")


@pytest.fixture
def fake_model() -> Iterator[list[FakeEmbedder]]:
    """Code that builds its own embedder from the config (the CLI, doctor) gets a fresh FakeEmbedder.

    Every provider in the registry builds one for the test, so it does not matter which module
    calls ``make_embedder``. Every one has the same model id, as separate runs of one real model
    would; the list holds them in the order they were made, for a test that wants to look at what
    was asked of them.
    """
    with fake_providers(*PROVIDERS) as made:
        yield made


def write_notes(root: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def indexed_kb(root: Path, notes: dict[str, str]) -> KnowledgeBase:
    """A knowledge base over ``notes`` written under ``root``, indexed with the fake model: one
    collection of the several that the library tests serve."""
    root.mkdir(parents=True, exist_ok=True)
    write_notes(root, notes)
    kb = KnowledgeBase(settings=Settings(root=root, freshness_interval_s=0.0), embedder=FakeEmbedder())
    kb.index()
    return kb


MANY = 30
"""Notes in the ``many`` tree: enough for a pass to hand several batches to the model."""


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """``MANY`` one-chunk notes, each with a word of its own."""
    write_notes(
        tmp_path, {f"note{i:02}.md": f"# Note {i}\n\nword{i} appears only here.\n" for i in range(MANY)}
    )
    return tmp_path


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    write_notes(root, NOTES)
    (root / ".kbseekignore").write_text("drafts/\n", encoding="utf-8")
    return root


def make_core(root: Path, **overrides: Any) -> KnowledgeBase:
    overrides.setdefault("semantic", False)
    overrides.setdefault("freshness_interval_s", 0.0)
    return KnowledgeBase(settings=Settings(root=root, **overrides))


@pytest.fixture
def core(kb_root: Path) -> Iterator[KnowledgeBase]:
    c = make_core(kb_root)
    c.index()
    yield c
    c.close()


@pytest.fixture(scope="module")
def stoppable() -> Iterator[StoppableServer]:
    """A PostgreSQL of the module's own that its tests may stop, freeze and start again; the rest of
    the run shares another (``tests.postgres_server``)."""
    postgres_server.url()  # skips, with the reason, where the postgres dependencies are missing
    server = StoppableServer()
    yield server
    server.close()


def installed_script() -> str:
    """The installed ``kbseek`` console script: the wire tests drive what a host would launch."""
    beside = Path(sys.executable).parent / "kbseek"
    found = str(beside) if beside.exists() else shutil.which("kbseek")
    if not found:
        pytest.fail("the kbseek console script is not installed; run `pip install -e .`")
    return found


def pytest_report_header() -> str:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        fts5 = "yes"
    except sqlite3.OperationalError:
        fts5 = "NO"
    return f"sqlite {sqlite3.sqlite_version}, fts5: {fts5}"
