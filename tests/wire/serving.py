"""The installed ``kbseek serve`` as a subprocess, for the tests that speak HTTP or raw stdio to it."""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import installed_script


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(
    url: str, headers: dict[str, str] | None = None, data: bytes | None = None
) -> tuple[int, dict[str, str], dict]:
    """Status, response headers and body (JSON, else ``{"text": ...}``); HTTP errors are answers here."""
    req = urllib.request.Request(url, headers=headers or {}, data=data, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, dict(response.headers), _body(response.headers, response.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), _body(err.headers, err.read())


def _body(headers: Message, raw: bytes) -> dict:
    if "json" in headers.get("content-type", ""):
        return json.loads(raw or b"{}")
    return {"text": raw.decode("utf-8", "replace")}


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    status, _, body = request(url, headers)
    return status, body


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Wait until the server on ``port`` answers /healthz; fail if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if get(f"http://127.0.0.1:{port}/healthz")[0] == 200:
                return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"the HTTP server on port {port} did not come up") from None
            time.sleep(0.05)


@contextmanager
def serving(kb_root: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[int]:
    """Start the server on a free port, wait for /healthz, yield the port, stop it."""
    port = free_port()
    with subprocess.Popen(
        [installed_script(), "serve", "--kb", str(kb_root), "--lexical-only", "--http", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            yield port
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@contextmanager
def read_only_server(store: list[str]) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """``kbseek serve --http --read-only`` with ``store`` (``--store URL --kb-name NAME``) and no
    ``--kb``, keywords only; yields its port and process once it answers /healthz, then stops it."""
    port = free_port()
    with subprocess.Popen(
        [installed_script(), "serve", "--http", "--read-only", *store, "--lexical-only", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            wait_healthy(port, proc)
            yield port, proc
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.communicate(timeout=20)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
"""Debian's Chromium, which the page tests drive through Playwright (its bundled browser is not used)."""


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium for the page tests; the test is skipped, saying what to install, without it."""
    if CHROMIUM is None:
        pytest.skip(
            "Chromium is not installed: `apt-get install chromium` (.ci/run does) to run the browser test"
        )
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make test`")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )  # fmt: skip
        try:
            yield browser
        finally:
            browser.close()


class StdioServer:
    """A server on stdio, its stdout read by a thread so that a missing answer fails, not hangs."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next answer (a message with an id, null included), skipping the server's notifications."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer within {timeout} s") from None
            message = json.loads(line)  # every stdout line must be JSON-RPC
            assert message.get("jsonrpc") == "2.0"
            if "id" in message:
                return dict(message)

    def serves_on(self) -> None:
        """The server answers a request after whatever it was sent last."""
        self.send(b'{"jsonrpc":"2.0","id":"after","method":"tools/list"}')
        after = self.answer()
        assert after["id"] == "after" and {t["name"] for t in after["result"]["tools"]} >= {"search", "fetch"}


@contextmanager
def stdio_serving(command: list[str], client: str) -> Iterator[StdioServer]:
    """Start ``command`` (a server on stdio), initialize a session as ``client``, yield it; at the end
    close its stdin and expect a clean exit."""
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}},
    }  # fmt: skip
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as proc:  # fmt: skip
        server = StdioServer(proc)
        server.send(json.dumps(initialize).encode())
        assert server.answer()["result"]["serverInfo"]["name"] == "kbseek"
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield server
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            assert proc.wait(timeout=20) == 0
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
