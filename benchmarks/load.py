"""Search latency and throughput under concurrent MCP clients while the knowledge base is being edited.

    python benchmarks/load.py                        # 2,000 SciFact notes, 20 clients x 50 searches
    python benchmarks/load.py --files 500 --clients 8 --searches 20

Builds a knowledge base of ``--files`` Markdown notes (SciFact documents from the datasets folder,
see ``beir.py``; synthetic notes when it is missing), starts the installed ``kbseek serve --http``
on a free port in its default configuration (the embedding model on), and waits until
``index_status`` shows the catch-up and the embedding done. Then, in one run:

1. one client, no edits: the quiet baseline;
2. one client while an editing thread writes, renames and deletes notes continuously;
3. ``--clients`` clients at once, each doing ``--searches`` ``search`` calls, with the edits going on;
4. the same clients once the edits have stopped and the server has caught up: what the concurrency
   alone costs, so the difference to phase 3 is what the edits cost.

Each client is its own MCP session over Streamable HTTP (raw JSON-RPC with ``httpx2``, so the client
costs little of the two cores it shares with the server). Printed: p50 / p95 / p99 / max latency
and searches/s for each phase and their ratios to the quiet baseline. Afterwards the edits stop,
the server catches up, and its index is compared with a fresh index of the same files (documents,
and each document's chunk texts); the run fails if they differ or a search failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from beir import datasets_dir, load
from processes import kbseek_script

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PROTOCOL = "2025-06-18"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the knowledge base ------------------------------------------------------------------------------


def corpus(files: int) -> tuple[list[tuple[str, str]], list[str]]:
    """``files`` (title, text) notes and the queries to ask: SciFact's, else synthetic ones."""
    if (datasets_dir() / "scifact").is_dir():
        collection = load("scifact", "train")
        docs = [(t, x) for t, x in collection.corpus.values() if x.strip()][:files]
        if len(docs) == files:
            return docs, list(collection.queries.values())
    rng = random.Random(7)
    words = [f"term{i}" for i in range(3000)]
    docs = [
        (f"Note {i}", " ".join(rng.choice(words) for _ in range(rng.randint(80, 400)))) for i in range(files)
    ]
    return docs, [" ".join(rng.choice(words) for _ in range(4)) for _ in range(300)]


def note_text(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


def write_kb(root: Path, docs: list[tuple[str, str]]) -> None:
    for i, (title, text) in enumerate(docs):
        folder = root / f"d{i // 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i:05}.md").write_text(note_text(title, text), encoding="utf-8")


# -- the server and its clients ----------------------------------------------------------------------


class Session:
    """One MCP session over Streamable HTTP: initialize, then tools/call requests."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=120)
        self._id = 0
        headers, _ = self._post({"method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}})  # fmt: skip
        self.headers = {
            **HEADERS,
            "mcp-session-id": headers["mcp-session-id"],
            "mcp-protocol-version": PROTOCOL,
        }
        self.http.post(
            url, headers=self.headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )

    def _post(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[Any, dict]:
        self._id += 1
        response = self.http.post(
            self.url, headers=headers or HEADERS, json={"jsonrpc": "2.0", "id": self._id, **message}
        )
        response.raise_for_status()
        body = response.text
        if "text/event-stream" in response.headers.get("content-type", ""):
            body = next(line[5:] for line in body.splitlines() if line.startswith("data:") and '"id"' in line)
        return response.headers, json.loads(body)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict:
        _, answer = self._post(
            {"method": "tools/call", "params": {"name": tool, "arguments": arguments}}, self.headers
        )
        result = answer.get("result")
        if result is None or result.get("isError"):
            raise RuntimeError(f"{tool} failed: {json.dumps(answer)[:300]}")
        return dict(result["structuredContent"])

    def close(self) -> None:
        try:
            self.http.delete(self.url, headers=self.headers)
        finally:
            self.http.close()


@contextmanager
def serving(
    root: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``kbseek serve --http`` over ``root`` on a free port: the process and its /mcp url."""
    port = free_port()
    log = root.parent / "serve.log"
    with log.open("wb") as err, subprocess.Popen(
        [kbseek_script(), "serve", "--kb", str(root), "--http", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **(env or {})},
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        "kbseek serve --http did not come up:\n" + log.read_text(errors="replace")[-2000:]
                    )
                time.sleep(0.1)
            yield proc, f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def settled(session: Session, files: int | None = None, semantic: bool = True, timeout: float = 1800) -> dict:
    """Wait until no pass runs, every chunk has its vector and (given) ``files`` documents are indexed."""
    deadline = time.monotonic() + timeout
    calm = 0
    while time.monotonic() < deadline:
        status = session.call("index_status", {})
        done = (
            not status["indexing"]
            and status["last_index_at"] is not None
            and (not semantic or (status["semantic"] == "ok" and status["embedded"] == status["chunks"]))
            and (files is None or status["documents"] == files)
        )
        calm = calm + 1 if done else 0
        if calm >= 3:  # three quiet looks in a row: the watcher's debounced batch has run too
            return status
        time.sleep(0.5)
    raise SystemExit(f"the server did not settle: {json.dumps(status)[:600]}")


@dataclass
class Phase:
    name: str
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0


def run_phase(name: str, url: str, queries: list[str], clients: int, searches: int) -> Phase:
    """``clients`` sessions at once, each ``searches`` searches; latency per call, searches/s overall."""
    phase = Phase(name)
    sessions = [Session(url) for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    lock = threading.Lock()

    def client(n: int, session: Session) -> None:
        start.wait()
        for i in range(searches):
            query = queries[(n * searches + i) % len(queries)]
            began = time.perf_counter()
            try:
                session.call("search", {"query": query})
            except Exception as exc:  # counted and shown: a failed search fails the run
                with lock:
                    phase.failures.append(str(exc)[:200])
                continue
            with lock:
                phase.latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=client, args=(n, s)) for n, s in enumerate(sessions)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    phase.seconds = time.perf_counter() - began
    for s in sessions:
        s.close()
    return phase


class Editor(threading.Thread):
    """Writes, edits, renames and deletes notes, one change every ``interval`` seconds, until stopped."""

    def __init__(self, root: Path, docs: list[tuple[str, str]], interval: float) -> None:
        super().__init__(name="editor", daemon=True)
        self.root = root
        self.docs = docs
        self.interval = interval
        self.stop = threading.Event()
        self.changes = 0
        self.rng = random.Random(11)
        self.added: list[Path] = []

    def run(self) -> None:
        (self.root / "edits").mkdir(exist_ok=True)
        while not self.stop.wait(self.interval):
            self.change()
            self.changes += 1

    def change(self) -> None:
        rng = self.rng
        op = rng.choice(["add", "add", "edit", "rename", "delete"])
        if op == "add" or not self.added:
            title, text = rng.choice(self.docs)
            path = self.root / "edits" / f"e{self.changes:05}.md"
            path.write_text(note_text(title + " (copy)", text), encoding="utf-8")
            self.added.append(path)
        elif op == "edit":
            target = self.root / f"d{rng.randrange(len(self.docs)) // 100:02}"
            notes = sorted(target.glob("*.md"))
            if notes:
                victim = rng.choice(notes)
                with victim.open("a", encoding="utf-8") as f:
                    f.write(f"\nEdited {self.changes}: {rng.choice(self.docs)[1][:300]}\n")
        elif op == "rename":
            old = self.added.pop(rng.randrange(len(self.added)))
            new = old.with_name(f"r{self.changes:05}.md")
            old.rename(new)
            self.added.append(new)
        else:
            self.added.pop(rng.randrange(len(self.added))).unlink()


# -- the comparison with a fresh index ---------------------------------------------------------------


def index_contents(index: Path) -> dict[str, list[str]]:
    """Each document's chunk texts, in order, read straight from an index file."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT d.path, c.text FROM documents d LEFT JOIN chunks c ON c.document_id = d.id "
            "ORDER BY d.path, c.ordinal"
        ).fetchall()
    finally:
        conn.close()
    contents: dict[str, list[str]] = {}
    for path, text in rows:
        contents.setdefault(path, [])
        if text is not None:
            contents[path].append(text)
    return contents


def compare_with_fresh(root: Path, served_index: Path, work: Path) -> str:
    """'equal', or what differs between the served index and a fresh keyword-only index of a copy."""
    copy = work / "fresh"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".kbseek"))
    subprocess.run(
        [kbseek_script(), "index", "--kb", str(copy), "--lexical-only"], check=True, capture_output=True
    )
    fresh = index_contents(copy / ".kbseek" / "index.sqlite")
    served = index_contents(served_index)
    if fresh == served:
        return f"equal ({len(fresh):,} documents, {sum(map(len, fresh.values())):,} chunks)"
    missing = sorted(fresh.keys() - served.keys())
    extra = sorted(served.keys() - fresh.keys())
    changed = sorted(p for p in fresh.keys() & served.keys() if fresh[p] != served[p])
    return f"DIFFERENT: missing {missing[:5]} ({len(missing)}), extra {extra[:5]} ({len(extra)}), changed {changed[:5]} ({len(changed)})"


def find_index(root: Path) -> Path:
    found = sorted(root.glob(".kbseek/*.sqlite"))
    if not found:
        raise SystemExit("no index file under the knowledge base's .kbseek folder")
    return found[0]


def row(phase: Phase, baseline: Phase) -> str:
    ratio = phase.pct(50) / baseline.pct(50) if baseline.latencies else 0.0
    return (
        f"| {phase.name} | {len(phase.latencies):,} | {phase.pct(50):.0f} | {phase.pct(95):.0f} | "
        f"{phase.pct(99):.0f} | {max(phase.latencies) * 1000:.0f} | {phase.rate:.1f} | "
        f"{ratio:.2f}× / {phase.rate / baseline.rate:.2f}× |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--searches", type=int, default=50, help="searches per client")
    parser.add_argument("--edit-interval", type=float, default=0.1, help="seconds between two edits")
    parser.add_argument("--lexical-only", action="store_true", help="serve without the embedding model")
    args = parser.parse_args()
    docs, queries = corpus(args.files)
    extra = ["--lexical-only"] if args.lexical_only else []
    with tempfile.TemporaryDirectory(prefix="kbseek-load-") as tmp:
        work = Path(tmp)
        root = work / "kb"
        write_kb(root, docs)
        began = time.perf_counter()
        with serving(root, *extra) as (proc, url):
            probe = Session(url)
            status = settled(probe, args.files, semantic=not args.lexical_only)
            print(
                f"{args.files:,} files ({status['chunks']:,} chunks, semantic {status['semantic']}) "
                f"indexed and embedded in {time.perf_counter() - began:.0f} s; server pid {proc.pid}",
                file=sys.stderr,
            )
            quiet = run_phase("1 client, no edits (baseline)", url, queries, 1, args.searches)
            editor = Editor(root, docs, args.edit_interval)
            editor.start()
            single = run_phase("1 client, edits running", url, queries, 1, args.searches)
            many = run_phase(
                f"{args.clients} clients, edits running", url, queries, args.clients, args.searches
            )
            editor.stop.set()
            editor.join()
            files = sum(1 for _ in root.rglob("*.md"))
            after = settled(probe, files, semantic=not args.lexical_only)
            crowd = run_phase(f"{args.clients} clients, no edits", url, queries, args.clients, args.searches)
            probe.close()
            comparison = compare_with_fresh(root, find_index(root), work)
    print(
        f"| phase ({args.files:,} files, {os.cpu_count()} cores) | searches | p50 ms | p95 ms | p99 ms | max ms | searches/s | vs baseline: p50 / searches/s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for phase in (quiet, single, many, crowd):
        print(row(phase, quiet))
    print(
        f"edits made: {editor.changes} ({args.edit_interval} s apart); after them: {after['documents']:,} documents, {after['chunks']:,} chunks, embedded {after['embedded']}"
    )
    print(f"served index vs a fresh index of the same files: {comparison}")
    failures = quiet.failures + single.failures + many.failures + crowd.failures
    if failures or not comparison.startswith("equal"):
        raise SystemExit(f"{len(failures)} searches failed (first: {failures[:1]}); index {comparison}")


if __name__ == "__main__":
    main()
