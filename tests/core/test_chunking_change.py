"""Other ``[chunking]`` sizes cut every document again, not only the files edited afterwards.

Chunks come from parsing, and an unchanged file is not parsed again; so the sizes the documents were
cut with are recorded with the pass, and other sizes have the next pass read every file once more
(a chunk whose text did not change keeps its vector: vectors are keyed by content).
"""

from __future__ import annotations

from pathlib import Path

from kbseek import KnowledgeBase, Settings
from kbseek.ingest.chunker import ChunkOptions
from tests.fakes import FakeEmbedder

SECTION = (
    "## Part {n}\n\n" + "A sentence about rolling back a release, with enough words to count. " * 12 + "\n\n"
)


def open_kb(root: Path, chunking: ChunkOptions | None = None) -> KnowledgeBase:
    settings = Settings(root=root, **({"chunking": chunking} if chunking else {}))
    return KnowledgeBase(settings=settings, embedder=FakeEmbedder())


def test_other_chunk_sizes_cut_every_document_again_and_the_same_sizes_read_nothing(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text(
        "# Note\n\n" + "".join(SECTION.format(n=n) for n in range(6)), encoding="utf-8"
    )
    with open_kb(tmp_path) as kb:
        kb.index()
        before = kb.status().chunks
    smaller = ChunkOptions(target_chars=300, max_chars=500, overlap_chars=0, min_chars=50)
    with open_kb(tmp_path, smaller) as kb:
        report = kb.index()
        assert report.updated == ["note.md"]  # read again though the file did not change
        assert kb.status().chunks > before
    with open_kb(tmp_path, smaller) as kb:
        assert kb.index().updated == []  # the same sizes: nothing to read again
