"""A server without the files: it reads the index another process writes, and follows its passes.

The writer indexes a folder into PostgreSQL; the reader is opened with no folder at all, only the
database and the knowledge base's name (``kbseek serve --read-only --store URL --kb-name NAME`` on
another machine). Everything it answers comes from the index: search, passages, documents and
resources, topics (docs/decisions/0031); and it learns of the writer's passes by itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.errors import ConfigError, DocumentNotFound, IndexReadOnly, NotServable, PathOutsideRoot
from kbseek.ingest.indexer import IndexReport
from tests import postgres_server
from tests.fakes import FakeEmbedder

pytest.importorskip("psycopg", reason="the postgres dependencies are not installed")


@pytest.fixture
def name() -> str:
    return postgres_server.kb_name("reader")


@pytest.fixture
def writer(kb_root: Path, name: str) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(
        settings=Settings(root=kb_root, freshness_interval_s=0.0, store_url=postgres_server.url(), kb_name=name),
        embedder=FakeEmbedder(),
    )  # fmt: skip
    kb.load_semantic()
    kb.index()
    yield kb
    kb.close()


def _reader(name: str) -> KnowledgeBase:
    kb = KnowledgeBase(store=postgres_server.url(), kb_name=name, read_only=True, embedder=FakeEmbedder())
    kb.load_semantic()
    return kb


def _eventually(check: Callable[[], bool], seconds: float = 15.0) -> float:
    """How long ``check`` took to hold (it is a bound against hanging, not a benchmark)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < seconds, "the reader never saw the change"
        time.sleep(0.05)
    return time.monotonic() - start


def test_a_reader_without_the_files_answers_as_the_writer_does(writer: KnowledgeBase, name: str) -> None:
    reader = _reader(name)
    try:
        assert reader.root is None and reader.status().root is None
        for query in ("rollback load balancer", "猫の写真", "on-call handover"):
            mine = [(h.chunk_id, round(h.score, 6)) for h in writer.search(query).hits]
            theirs = [(h.chunk_id, round(h.score, 6)) for h in reader.search(query).hits]
            assert mine == theirs, query
        hit = reader.search("rollback load balancer").hits[0]
        assert reader.fetch([hit.chunk_id]).passages[0].text == writer.fetch([hit.chunk_id]).passages[0].text
        assert reader.read_document(hit.path).text == writer.read_document(hit.path).text
        assert reader.read_document(hit.path, offset=5, max_chars=20).text == (
            writer.read_document(hit.path, offset=5, max_chars=20).text
        )
        assert reader.read_resource_document(hit.path).text == writer.read_resource_document(hit.path).text
        assert reader.topics() == writer.topics()
        assert reader.topic_groups() == writer.topic_groups()
    finally:
        reader.close()


def test_get_document_on_a_reader_is_bounded_by_the_index(writer: KnowledgeBase, name: str) -> None:
    reader = _reader(name)
    try:
        # On the writer an excluded file is still readable by path (D1); a reader has no files, so
        # what the index does not hold does not exist for it, and it says so.
        assert "bluebird" in writer.read_document("drafts/secret-plan.md").text
        with pytest.raises(DocumentNotFound, match="not in the index this server reads"):
            reader.read_document("drafts/secret-plan.md")
        with pytest.raises(PathOutsideRoot):  # refused as on the writer, before the index is asked
            reader.read_document("../outside.md")
        with pytest.raises(NotServable):
            reader.read_resource_document("drafts/secret-plan.md")
        assert reader.read_document("/runbooks/deploy.md").path == "runbooks/deploy.md"  # as typed
    finally:
        reader.close()


def test_a_reader_learns_of_the_writers_passes_by_itself(
    kb_root: Path, writer: KnowledgeBase, name: str
) -> None:
    reader = _reader(name)
    heard: list[IndexReport] = []
    listed = threading.Event()

    def listener(report: IndexReport) -> None:
        heard.append(report)
        if report.listing_changed:
            listed.set()

    reader.on_index_change(listener)
    reader.start_watching()  # a reader has no files to watch: it follows the store
    try:
        (kb_root / "runbooks" / "deploy.md").write_text("# Deploy\n\nThe quokka gate opens at noon.\n")
        writer.index()
        waited = _eventually(
            lambda: any(h.path == "runbooks/deploy.md" for h in reader.search("quokka").hits)
        )
        assert waited < 15.0
        # the dense snapshot caught up too: the new chunk's vector is searchable by meaning
        _eventually(lambda: reader.summary().embedded == writer.summary().embedded)
        assert not listed.is_set()  # an edit moves no document: the listing did not change
        (kb_root / "notes" / "new.md").write_text("# New\n\nA wombat appears.\n")
        writer.index()
        assert listed.wait(15.0)
        assert "notes/new.md" in reader.servable_document_paths()
    finally:
        reader.close()


def test_a_reader_writes_nothing_and_says_what_to_run_where(name: str) -> None:
    reader = _reader(name)  # nothing was ever indexed under this name
    try:
        found = reader.search("anything")
        assert found.hits == []
        assert any(f"--kb-name {name}" in n and "machine that has the notes" in n for n in found.notes)
        with pytest.raises(IndexReadOnly):
            reader.index()
    finally:
        reader.close()


def test_a_knowledge_base_without_a_folder_must_be_a_named_reader() -> None:
    url = postgres_server.url()
    with pytest.raises(ConfigError, match="--read-only"):
        KnowledgeBase(store=url, kb_name="x", semantic=False)
    with pytest.raises(ConfigError, match="--kb-name"):
        KnowledgeBase(store=url, read_only=True, semantic=False)
    with pytest.raises(ConfigError, match="no knowledge base given"):
        KnowledgeBase(read_only=True, semantic=False)  # and without a database it needs a folder
