"""Smoke test of the installed console script speaking JSON-RPC over stdio.

Catches packaging and entry-point mistakes, and anything that writes to
stdout and corrupts the protocol stream.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.conftest import installed_script


def _send(proc: subprocess.Popen[bytes], message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _receive(proc: subprocess.Popen[bytes], want_id: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError("server closed stdout before answering")
        message = json.loads(line)  # every stdout line must be JSON-RPC
        assert message.get("jsonrpc") == "2.0"
        if message.get("id") == want_id:
            return message


def test_the_installed_script_answers_initialize_tools_search_and_get_document(kb_root: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    stderr = kb_root.parent / "serve.stderr"
    with stderr.open("wb") as err, subprocess.Popen(
        [installed_script(), "serve", "--kb", str(kb_root), "--lexical-only"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
    ) as proc:  # fmt: skip
        _converse(proc)
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            assert proc.wait(timeout=20) == 0, stderr.read_text(errors="replace")
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


def _converse(proc: subprocess.Popen[bytes]) -> None:
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "1"}}})  # fmt: skip
    init = _receive(proc, 1)
    assert init["result"]["serverInfo"]["name"] == "kbseek"
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    names = {t["name"] for t in _receive(proc, 2)["result"]["tools"]}
    assert {"search", "fetch", "get_document", "list_topics", "index_status"} <= names
    hits: list = []
    for attempt in range(100):  # the catch-up pass runs in the background
        _send(proc, {"jsonrpc": "2.0", "id": 10 + attempt, "method": "tools/call",
                         "params": {"name": "search", "arguments": {"query": "rollback"}}})  # fmt: skip
        result = _receive(proc, 10 + attempt)["result"]
        hits = result["structuredContent"]["hits"]
        if hits:
            break
        time.sleep(0.1)
    assert hits and hits[0]["path"] == "runbooks/deploy.md"
    _send(proc, {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                     "params": {"name": "get_document", "arguments": {"path": "notes/障害対応.md"}}})  # fmt: skip
    doc = _receive(proc, 99)["result"]
    assert not doc.get("isError") and "初動" in doc["structuredContent"]["text"]


def test_the_installed_script_answers_a_malformed_line_and_goes_on(kb_root: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [installed_script(), "serve", "--kb", str(kb_root), "--lexical-only", "--no-watch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "1"}}})  # fmt: skip
        _receive(proc, 1)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.stdin.write(b"[" * 100_000 + b"\n")  # too deep to parse: once silence, now a parse error
        proc.stdin.flush()
        error = json.loads(proc.stdout.readline())
        assert error["id"] is None and error["error"]["code"] == -32700
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert _receive(proc, 2)["result"]["tools"]
        proc.stdin.close()
        proc.wait(timeout=20)
