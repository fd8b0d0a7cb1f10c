"""The HTTP API page's example answers, produced by the server they document.

    python scripts/doc_examples.py            # check: exit 1 naming each example that differs
    python scripts/doc_examples.py --write    # rewrite every example from a real run
    python scripts/doc_examples.py --screenshots   # the web page's pictures on Get started (needs Chromium)

An example is the fenced block right after a line ``<!-- example: NAME -->`` in ``docs/http-api.md``
and ``docs/ja/http-api.md`` (the same answers in both). Each NAME is one request of
:data:`REQUESTS`, sent to ``kbseek serve --http`` over a fresh copy of ``examples/kb`` with the
default model, as a reader would run it; the answer is shown as the server sends it, with three
exceptions said on the page: a list shortened where an example marks it (``…``), the status's
times fixed (they change with every run), and the collections example served with a second
collection. A ``curl`` line shown before an example must ask what :data:`REQUESTS` asks.

``tests/docs/test_http_api_examples.py`` runs the check, so a change to what the API answers
cannot leave the page showing an older answer. ``--screenshots`` takes Get started's pictures of the
web page (``docs/images/ui.png``, ``ui-ja.png``) from the same kind of run, in headless Chromium
with the browser's language set to English and to Japanese.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "docs" / "http-api.md", ROOT / "docs" / "ja" / "http-api.md")
EXAMPLE_KB = ROOT / "examples" / "kb"
MARKER = re.compile(r"^<!-- example: ([a-z-]+) -->\n```json\n(.*?)```", re.MULTILINE | re.DOTALL)
CURL = re.compile(r"curl -s '(http://127\.0\.0\.1:8765[^']*)'\n```\n\n<!-- example: ([a-z-]+) -->")
PORT_SHOWN = "http://127.0.0.1:8765"
WIDTH = 100
"""A value fits on one line of the page up to this many characters, else it is spread out."""

REQUESTS: dict[str, str] = {
    "search": "/api/search?q=how+do+I+roll+back+a+release&limit=1&snippet_chars=120",
    "newest": "/api/search?sort=newest&where=date&limit=2&snippet_chars=80",
    "document": "/api/document?path=runbooks/rollback.md&max_chars=200",
    "related": "/api/related?path=design/decisions/0005-expand-contract-migrations.md&limit=3",
    "topics": "/api/topics",
    "status": "/api/status",
    "collections": "/api/collections",
    "error": "/api/document?path=nope.md",
}
FIXED_TIMES = {"last_index_at": "2026-12-06T03:52:31+00:00", "last_pass_seconds": 0.781}
"""The status's times as the page shows them: a real run's change every time."""
SHOWN_TOPICS = 2
"""The topics example lists the first topics, the second with its first title and ``…``."""


def _topics(answer: dict[str, Any]) -> dict[str, Any]:
    topics = answer["topics"][:SHOWN_TOPICS]
    last = topics[-1]
    if len(last["titles"]) > 1:
        last["titles"] = [last["titles"][0], "…"]
    return {**answer, "topics": topics}


def _status(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, **{k: v for k, v in FIXED_TIMES.items() if answer.get(k) is not None}}


SHAPES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"topics": _topics, "status": _status}


def shown(value: Any, indent: int = 0, *, top: bool = True) -> str:
    """``value`` as the page writes JSON: the answer and its lists of objects spread one member per
    line, anything that fits in :data:`WIDTH` on one line (a whole answer only when it is one line
    of plain values, as an error is)."""
    inline = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    fits = indent + len(inline) <= WIDTH + 20 * top and not _holds_long(value)
    flat = isinstance(value, dict) and not any(isinstance(v, dict | list) for v in value.values())
    if not isinstance(value, dict | list) or (fits and (not top or flat)):
        return inline
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        members = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {shown(v, indent + 2, top=False)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(members) + "\n" + " " * indent + "}" if members else "{}"
    items = [pad + shown(v, indent + 2, top=False) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]" if items else "[]"


def _holds_long(value: Any) -> bool:
    """A hit (it has a ``chunk_id``), or what holds one, is spread out however short it is: a reader
    scans a hit's fields down, not across."""
    if isinstance(value, dict):
        return "chunk_id" in value or any(_holds_long(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_long(v) for v in value)
    return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@contextmanager
def served(*folders: Path) -> Iterator[str]:
    """``kbseek serve --http`` over ``folders``, once every one is indexed with its vectors."""
    port = _free_port()
    argv = [sys.executable, "-m", "kbseek", "serve", "--http", "--port", str(port)]
    for folder in folders:
        argv += ["--kb", str(folder)]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 600
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"the server did not become ready: {proc.stderr.read() if proc.stderr else ''}"
                    )
                try:
                    ready = _get(f"{base}/readyz")[0] == 200
                    state = _get(f"{base}/api/status")[1] if ready else {}
                except (OSError, ValueError):
                    state = {}
                if state.get("semantic") == "ok" and not state.get("indexing") and state.get("documents"):
                    break
                time.sleep(0.5)
            yield base
        finally:
            proc.terminate()
            proc.communicate(timeout=30)


def answers() -> dict[str, str]:
    """Every example as a real run answers it, formatted as the page shows it."""
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "kb"
        shutil.copytree(EXAMPLE_KB, notes, ignore=shutil.ignore_patterns(".kbseek", "__pycache__"))
        with served(notes) as base:
            for name, path in REQUESTS.items():
                if name != "collections":
                    out[name] = shown(SHAPES.get(name, lambda a: a)(_get(base + path)[1]))
        both = Path(tmp) / "two"
        shutil.copytree(notes, both / "notes", ignore=shutil.ignore_patterns(".kbseek"))
        shutil.copytree(notes / "runbooks", both / "ops")
        with served(both / "notes", both / "ops") as base:
            out["collections"] = shown(_get(base + REQUESTS["collections"])[1])
    return out


SCREENSHOT_QUERY = "証明書の期限切れに気づいたら"
"""A Japanese question whose answer is an English runbook: what the pictures show."""
SCREENSHOTS = {"en-US": ROOT / "docs" / "images" / "ui.png", "ja-JP": ROOT / "docs" / "images" / "ui-ja.png"}


def screenshots() -> None:
    """Get started's pictures of the page, from a server over a fresh copy of the example notes."""
    from playwright.sync_api import sync_playwright  # a dev dependency: only this option needs it

    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser_path is None:
        raise SystemExit("Chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "kb"
        shutil.copytree(EXAMPLE_KB, notes, ignore=shutil.ignore_patterns(".kbseek", "__pycache__"))
        with served(notes) as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
            for locale, path in SCREENSHOTS.items():
                page = browser.new_page(viewport={"width": 1000, "height": 640}, locale=locale)
                page.goto(f"{base}/ui?q={SCREENSHOT_QUERY}")
                page.wait_for_selector(".hit")
                page.wait_for_selector("#message:has-text('result'), #message:has-text('件の結果')")
                page.screenshot(path=str(path))
                page.close()
            browser.close()


def differences(real: dict[str, str]) -> list[str]:
    """Each example of each page that is not what the run answered, or whose curl line asks otherwise."""
    problems: list[str] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found = {name: block.rstrip("\n") for name, block in MARKER.findall(text)}
        label = page.relative_to(ROOT)
        for name in sorted(set(REQUESTS) - set(found)):
            problems.append(f"{label}: no example marked {name!r}")
        for name, block in found.items():
            if name not in real:
                problems.append(f"{label}: the marker {name!r} names no request of REQUESTS")
            elif block != real[name]:
                problems.append(f"{label}: the {name!r} example is not what the server answers")
        for url, name in CURL.findall(text):
            if url.removeprefix(PORT_SHOWN) != REQUESTS.get(name):
                problems.append(
                    f"{label}: the curl line before {name!r} asks {url}, the example ran {REQUESTS.get(name)}"
                )
    return problems


def write(real: dict[str, str]) -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        text = MARKER.sub(
            lambda m: (
                f"<!-- example: {m.group(1)} -->\n```json\n{real.get(m.group(1), m.group(2).rstrip())}\n```"
            ),
            text,
        )
        page.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="Rewrite the examples from a real run.")
    parser.add_argument("--screenshots", action="store_true", help="Take Get started's pictures of the page.")
    args = parser.parse_args()
    if args.screenshots:
        screenshots()
        return
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    real = answers()
    if args.write:
        write(real)
    problems = differences(real)
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
