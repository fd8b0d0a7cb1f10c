"""Overlapping chunks are joined by their absolute offsets, never by matching strings (T6).

Text that repeats itself is where string matching goes wrong: the overlap between two chunks of
identical paragraphs can be "found" anywhere. Joined by position, a fetched passage is exactly the
source between its offsets.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from kbseek.ingest.chunker import ChunkOptions
from tests.conftest import make_core

PARAGRAPH = "The same sentence repeats in every paragraph of this page."


def test_a_passage_of_repeated_overlapping_chunks_is_the_source_slice(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    source = "# Echo\n\n" + "\n\n".join([PARAGRAPH] * 24) + "\n"
    (root / "echo.md").write_text(source, encoding="utf-8")
    options = ChunkOptions(target_chars=180, max_chars=240, overlap_chars=70, min_chars=0)
    c = make_core(root, chunking=options)
    try:
        c.index()
        hit = c.search("same sentence repeats", limit=1).hits[0]
        (passage,) = c.fetch([hit.chunk_id], context=2).passages
        assert len(passage.chunk_ids) >= 3 and passage.requested == [hit.chunk_id]
        spans = [(p.start, p.end) for cid in passage.chunk_ids for p in c.fetch([cid], context=0).passages]
        assert any(b_start < a_end for (_, a_end), (b_start, _) in pairwise(spans)), (
            "the test needs chunks that overlap"
        )
        assert passage.text == source[passage.start : passage.end]
    finally:
        c.close()
