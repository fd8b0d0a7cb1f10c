"""Agents write notes, through a real MCP client connected in process to the real server
(docs/decisions/0058): each tool, each refusal code, dry runs that change nothing, a stale hash
that leaves the file byte-identical, a note found by search as soon as it is written, a delete that
can be restored, and a server with writing off whose tool list is what it always was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kbseek import KnowledgeBase
from kbseek.errors import WritesReadOnly
from kbseek.server.mcp import build_server
from kbseek.write.hashes import note_hash
from kbseek.write_spec import WriteSpec
from tests.conftest import make_core

pytestmark = pytest.mark.anyio

WRITE_TOOLS = {"write_note", "edit_note", "move_note", "delete_note"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def writer(kb_root: Path) -> Iterator[KnowledgeBase]:
    with make_core(kb_root, write=WriteSpec(enabled=True, folders=("inbox", "runbooks"))) as core:
        core.index()
        yield core


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str, bool]:
    result = await client.call_tool(name, args)
    text = result.content[0].text if result.content else ""
    return result.structured_content or {}, text, bool(result.is_error)


def stamp(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


async def test_with_writing_off_the_tool_list_is_byte_identical(kb_root: Path) -> None:
    with (
        make_core(kb_root) as plain,
        make_core(kb_root, write=WriteSpec(enabled=False, folders=("x",))) as off,
    ):
        async with Client(build_server(plain)) as a, Client(build_server(off)) as b:
            listed = [(await c.list_tools()).model_dump_json() for c in (a, b)]
    assert listed[0] == listed[1]
    assert not WRITE_TOOLS & {t["name"] for t in json.loads(listed[0])["tools"]}


async def test_a_note_is_created_found_at_once_edited_and_refused_when_stale(writer: KnowledgeBase) -> None:
    root = writer.root
    assert root is not None
    note = "# Cache warmup\n\nWarm the zebracache before the launch.\n"
    async with Client(build_server(writer)) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= WRITE_TOOLS
        dry, text, failed = await call(
            client, "write_note", {"path": "inbox/warmup.md", "content": note, "dry_run": True}
        )
        assert not failed and dry["dry_run"] and "+Warm the zebracache" in dry["diff"]
        assert not (root / "inbox").exists()  # a dry run writes nothing, not even the folder
        made, text, failed = await call(client, "write_note", {"path": "inbox/warmup.md", "content": note})
        assert not failed and made["hash"] == note_hash(note.encode()) and made["searchable"]
        assert (root / "inbox/warmup.md").read_text(encoding="utf-8") == note
        hits = (await call(client, "search", {"query": "zebracache"}))[0]["hits"]
        assert hits[0]["path"] == "inbox/warmup.md" and hits[0]["hash"] == made["hash"]

        again, text, failed = await call(client, "write_note", {"path": "inbox/warmup.md", "content": "x"})
        assert failed and again["code"] == "exists" and again["current_hash"] == made["hash"]
        assert text.startswith("exists: ") and "Nothing was written." in text

        before = stamp(root / "inbox/warmup.md")
        args = {"path": "inbox/warmup.md", "expected_hash": made["hash"], "operation": "append",
                "content": "Check the hit rate after.", "dry_run": True}  # fmt: skip
        preview, _, failed = await call(client, "edit_note", args)
        assert not failed and "+Check the hit rate after." in preview["diff"]
        assert stamp(root / "inbox/warmup.md") == before
        edited, _, failed = await call(client, "edit_note", {**args, "dry_run": False})
        assert not failed and edited["previous_hash"] == made["hash"]
        after = (root / "inbox/warmup.md").read_bytes()
        assert after == (note + "\nCheck the hit rate after.\n").encode() and edited["hash"] == note_hash(
            after
        )

        stale, text, failed = await call(client, "edit_note", {**args, "dry_run": False})  # the old hash
        assert failed and stale["code"] == "conflict" and stale["current_hash"] == edited["hash"]
        assert (root / "inbox/warmup.md").read_bytes() == after
        _, _, failed = await call(client, "edit_note", {
            "path": "inbox/warmup.md", "checksum": edited["hash"], "operation": "find_replace",
            "old_text": "zebracache", "text": "zebra cache",
        })  # fmt: skip
        assert not failed and "zebra cache" in (root / "inbox/warmup.md").read_text(encoding="utf-8")


async def test_each_refusal_has_its_code_and_writes_nothing(writer: KnowledgeBase) -> None:
    root = writer.root
    assert root is not None
    listing = sorted(p.relative_to(root) for p in root.rglob("*"))
    async with Client(build_server(writer)) as client:
        cases = [
            ("write_note", {"path": "../outside.md", "content": "x"}, "not_allowed"),
            ("write_note", {"path": "notes/elsewhere.md", "content": "x"}, "not_allowed"),
            ("write_note", {"path": "inbox/report.docx", "content": "x"}, "not_allowed"),
            ("write_note", {"path": "inbox/.hidden.md", "content": "x"}, "not_allowed"),
            ("write_note", {"path": "inbox/big.md", "content": "x" * 1_000_001}, "too_large"),
            ("edit_note", {"path": "inbox/none.md", "expected_hash": "0" * 16, "operation": "append", "content": "x"},
             "not_found"),
            ("delete_note", {"path": "runbooks/deploy.md", "expected_hash": "0" * 16}, "conflict"),
        ]  # fmt: skip
        for tool, args, code in cases:
            data, text, failed = await call(client, tool, args)
            assert failed and data.get("code") == code, (tool, args, text)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == listing


async def test_a_deleted_note_goes_to_the_trash_and_comes_back(writer: KnowledgeBase) -> None:
    root = writer.root
    assert root is not None
    original = (root / "runbooks/deploy.md").read_bytes()
    async with Client(build_server(writer)) as client:
        hit = (await call(client, "search", {"query": "rollback load balancer"}))[0]["hits"][0]
        assert hit["path"] == "runbooks/deploy.md"
        gone, _, failed = await call(
            client, "delete_note", {"path": hit["path"], "expected_hash": hit["hash"]}
        )
        assert not failed and gone["trash"] and not (root / "runbooks/deploy.md").exists()
        hits = (await call(client, "search", {"query": "rollback load balancer"}))[0]["hits"]
        assert all(h["path"] != "runbooks/deploy.md" for h in hits)
    restored = writer.notes.restore(gone["trash"])
    assert restored.path == "runbooks/deploy.md" and (root / "runbooks/deploy.md").read_bytes() == original
    assert [r.operation for r in writer.notes.recent(5)] == ["restore", "delete"]
    async with Client(build_server(writer)) as client:
        status, text, _ = await call(client, "index_status", {})
    assert [w["operation"] for w in status["last_writes"]] == ["restore", "delete"]
    assert "last writes:" in text and "delete runbooks/deploy.md" in text


async def test_with_writing_off_the_status_says_nothing_of_writes(kb_root: Path) -> None:
    with make_core(kb_root) as plain:
        async with Client(build_server(plain)) as client:
            status, text, _ = await call(client, "index_status", {})
    assert "last_writes" not in status and "last writes" not in text


async def test_a_moved_note_is_found_at_its_new_path(writer: KnowledgeBase) -> None:
    root = writer.root
    assert root is not None
    (root / "runbooks/index.md").write_text(
        "# Runbooks\n\nStart with [the deploy](deploy.md#rollback), or [[deploy]]. `[not](deploy.md)`\n",
        encoding="utf-8",
    )
    (root / "notes").mkdir(exist_ok=True)
    (root / "notes/elsewhere.md").write_text(
        "# Elsewhere\n\nSee [deploy](../runbooks/deploy.md).\n", encoding="utf-8"
    )
    writer.index()
    async with Client(build_server(writer)) as client:
        hit = (await call(client, "search", {"query": "rollback load balancer"}))[0]["hits"][0]
        moved, _, failed = await call(
            client,
            "move_note",
            {"path": hit["path"], "new_path": "inbox/deploy.md", "expected_hash": hit["hash"]},
        )
        assert not failed and moved["new_path"] == "inbox/deploy.md"
        hits = (await call(client, "search", {"query": "rollback load balancer"}))[0]["hits"]
        assert hits[0]["path"] == "inbox/deploy.md"
    assert moved["links_rewritten"] == ["runbooks/index.md"]
    assert (root / "runbooks/index.md").read_text(encoding="utf-8") == (
        "# Runbooks\n\nStart with [the deploy](../inbox/deploy.md#rollback), or [[deploy]]. `[not](deploy.md)`\n"
    )  # a wiki link names the file, whose name did not change; code is not a link
    assert "notes/elsewhere.md" in " ".join(moved["notes"])  # outside the folders writes may touch
    assert "runbooks/deploy.md" in (root / "notes/elsewhere.md").read_text(encoding="utf-8")
    assert [r.operation for r in writer.notes.recent(2)] == ["relink", "move"]


async def test_a_reading_server_answers_read_only(kb_root: Path) -> None:
    with make_core(kb_root, write=WriteSpec(enabled=True)) as core:
        core.index()
    with KnowledgeBase(kb_root, read_only=True, semantic=False) as reader, pytest.raises(WritesReadOnly):
        reader.notes.write("inbox/a.md", "x")


async def test_the_save_prompt_teaches_the_read_hash_edit_loop_only_when_writing_is_on(
    writer: KnowledgeBase, kb_root: Path
) -> None:
    async with Client(build_server(writer)) as client:
        assert "save_to_kb" in {p.name for p in (await client.list_prompts()).prompts}
        got = await client.get_prompt("save_to_kb", {"what": "the zebracache warmup fix"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    assert "expected_hash" in text and "dry_run" in text and "inbox/" in text and "conflict" in text
    with make_core(kb_root) as plain:
        async with Client(build_server(plain)) as client:
            assert "save_to_kb" not in {p.name for p in (await client.list_prompts()).prompts}


async def test_a_resource_read_carries_the_hash_in_its_meta_only_when_writing_is_on(
    writer: KnowledgeBase, kb_root: Path
) -> None:
    async with Client(build_server(writer)) as client:
        read = await client.read_resource("kb://doc/runbooks/deploy.md")
    assert read.contents[0].meta == {"hash": note_hash((kb_root / "runbooks/deploy.md").read_bytes())}
    with make_core(kb_root) as plain:
        async with Client(build_server(plain)) as client:
            read = await client.read_resource("kb://doc/runbooks/deploy.md")
    assert not read.contents[0].meta
