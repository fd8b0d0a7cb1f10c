"""Every read carries the note's hash when agents may write, and nothing changes when they may not
(docs/decisions/0058)."""

from __future__ import annotations

import json
from pathlib import Path

from kbseek.write.hashes import note_hash
from kbseek.write_spec import WriteSpec
from tests.conftest import make_core


def test_hits_passages_and_documents_carry_the_hash_of_the_files_bytes(kb_root: Path) -> None:
    with make_core(kb_root, write=WriteSpec(enabled=True)) as core:
        core.index()
        hits = core.search("rollback").hits
        assert hits
        for hit in hits:
            assert hit.hash == note_hash((kb_root / hit.path).read_bytes())
        passage = core.fetch([hits[0].chunk_id]).passages[0]
        assert passage.hash == hits[0].hash
        document = core.read_document(hits[0].path)
        assert document.hash == hits[0].hash and len(document.hash) == 16
        (kb_root / hits[0].path).write_text("# Changed\n\nrollback, changed.\n", encoding="utf-8")
        assert core.read_document(hits[0].path).hash == note_hash((kb_root / hits[0].path).read_bytes())


def test_with_writing_off_no_answer_names_a_hash(kb_root: Path) -> None:
    with make_core(kb_root) as core:
        core.index()
        hits = core.search("rollback").hits
        answers = [core.search("rollback"), core.fetch([hits[0].chunk_id]), core.read_document(hits[0].path)]
        for answer in answers:
            assert '"hash"' not in answer.model_dump_json()
            assert "hash" not in json.dumps(answer.model_dump(mode="json"))
