"""kbseek at 10,000 and 100,000 files: what a warm server costs, each figure next to its baseline.

    python benchmarks/scale.py                          # 10,000 files, default configuration
    python benchmarks/scale.py --files 10000 100000     # both sizes, one after the other
    python benchmarks/scale.py --files 100000 --lexical-only
    python benchmarks/scale.py --vectors 1000000        # also the vector-only 1M-chunk case

The knowledge base is the BEIR collections the other benchmarks use (SciFact and JSQuAD, from
``KBSEEK_DATASETS``: 7,487 documents) written as Markdown, then written again under ``copy-NN/``
folders (at most 500 files per folder) until the tree holds ``--files`` files. Copies are exact, so
content-keyed vectors embed each distinct chunk once, as in a knowledge base full of duplicated
pages; ``--distinct`` drops a seeded fifth of each copy's sentences instead, so every chunk is
embedded (much slower with a model). Trees and indexes live under ``benchmarks/.work/scale``.

For each size, everything through the installed ``kbseek`` command, as a user runs it:

- ``kbseek index`` from nothing: wall time and peak RSS (of that process alone), next to the raw
  embedder's chunks/s measured in this run (the ceiling of any embedding pass);
- ``kbseek index`` again with nothing changed, next to a bare ``os.scandir``/``lstat`` walk of the
  same tree (the least any pass that looks at every file can do);
- ``kbseek serve`` over stdio JSON-RPC: once its catch-up pass is done, the first 100 SciFact claims
  as ``search`` calls (p50/p95 of a second, warm round), next to a bare FTS5 MATCH of the same
  queries on the same index and a bare float32 matrix-vector product of the index's size;
- edit → searchable: a new file with a unique word is written while the server runs, and
  ``search`` is called every 20 ms until it is found (the floor is the watcher's batching: a batch
  is handed over after 50 ms without events, at most 300 ms after the first), for
  new files and for edits of existing ones;
- the server's RSS after all of it (``VmRSS``; Linux);
- with ``--burst N``: N edits, renames, deletions and creations made as fast as a script can, then,
  once the server is idle, its index compared with a fresh ``kbseek index`` of the same files
  (paths and content hashes): nothing lost, nothing left behind. The tree is written again on the
  next run.

The 1M-chunk vector case runs ``benchmarks/dense_scale.py`` (the approximate index against exact
search on the same vectors).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK, Collection, load, percentile
from kbseek.embed.chunk_vectors import passage_input
from kbseek.search.fts_query import compile_query
from kbseek.store.fts_match import match_expression
from lexical_scale import _perturbed
from processes import kbseek_script, run_child

HERE = Path(__file__).resolve().parent
SCALE = WORK / "scale"
PER_FOLDER = 500
QUERIES = 100
EDITS = 5
POLL_S = 0.02
SERVE_READY_TIMEOUT_S = 7200.0


# -- the tree --------------------------------------------------------------------------------------


def build_tree(collections: list[Collection], files: int, distinct: bool) -> Path:
    """``files`` Markdown files from the collections (copies after the first round); reused when built."""
    base = SCALE / f"{files}{'-distinct' if distinct else ''}"
    root, marker = base / "kb", base / ".tree-complete"
    if marker.exists():
        return root
    shutil.rmtree(base, ignore_errors=True)
    pages = [(c.name, did, title, text) for c in collections for did, (title, text) in c.corpus.items()]
    written = 0
    copy = 0
    while written < files:
        rng = random.Random(copy)
        for name, did, title, text in pages:
            if written == files:
                break
            folder = root / f"copy-{copy:02d}" / name / f"part-{written // PER_FOLDER:04d}"
            folder.mkdir(parents=True, exist_ok=True)
            body = _perturbed(text, rng) if distinct and copy else text
            page = f"# {title}\n\n{body}\n" if title else f"{body}\n"
            (folder / f"{did.replace('/', '_')}.md").write_text(page, encoding="utf-8")
            written += 1
        copy += 1
    marker.write_text("", encoding="utf-8")
    return root


def bare_walk(root: Path) -> int:
    """Every file's lstat, nothing else: the floor of any pass that looks at each file."""
    count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if not e.name.startswith("."):
                        stack.append(e.path)
                else:
                    e.stat(follow_symlinks=False)
                    count += 1
    return count


# -- processes -------------------------------------------------------------------------------------


class Server:
    """``kbseek serve`` on stdio, spoken to in raw JSON-RPC (the wire a host uses)."""

    def __init__(self, args: list[str], stderr: Path) -> None:
        self._err = stderr.open("wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)
        self._id = 0
        self.call_raw("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "scale", "version": "1"},
        })  # fmt: skip
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def call_raw(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the server closed stdout; its stderr is in the work folder")
            message = json.loads(line)
            if message.get("id") == self._id:
                if "error" in message:
                    raise SystemExit(f"{method} failed: {message['error']}")
                return dict(message["result"])

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return dict(self.call_raw("tools/call", {"name": name, "arguments": arguments})["structuredContent"])

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._err.close()


def wait_ready(server: Server, semantic: bool) -> dict[str, Any]:
    """Until the catch-up pass is done and, with a model, every chunk has its vector."""
    deadline = time.monotonic() + SERVE_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        status = server.tool("index_status", {})
        done = not status["indexing"] and status["watcher"] == "running"
        if done and (not semantic or (status["semantic"] == "ok")):
            return status
        time.sleep(1.0)
    raise SystemExit("the server was not ready in time")


# -- measurements ----------------------------------------------------------------------------------


def ms(seconds: list[float]) -> tuple[float, float]:
    values = [s * 1000 for s in seconds]
    return statistics.median(values), percentile(values, 95)


def chunk_sample(index: Path, n: int) -> list[str]:
    """The inputs of ``n`` distinct chunks of the index, spread over it: what the pass really embedded,
    one text per chunk (a chunk's passage is its heading path and text; the extra heading vectors of
    chunks under a section are the pipeline's own work, so they count against it)."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT heading_path, text FROM chunks GROUP BY content_hash ORDER BY content_hash"
        ).fetchall()
    finally:
        conn.close()
    step = max(1, len(rows) // n)
    return [passage_input(json.loads(h), t) for h, t in rows[::step][:n]]


def raw_embedder_rate(texts: list[str]) -> float:
    """Chunks per second of the default embedder alone, outside kbseek's pipeline."""
    from kbseek.config import Settings
    from kbseek.embed.factory import make_embedder

    embedder = make_embedder(Settings(root=HERE).embed)  # the default provider
    embedder.load()
    embedder.embed_documents(texts[:16])  # warm
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - started)


def bare_fts(index: Path, queries: list[str]) -> list[float]:
    """A bare FTS5 MATCH (OR of the query's terms, BM25, LIMIT 10) on the same index."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    expressions = [match_expression(list(compile_query(q, max_terms=32).terms)) for q in queries]
    times: list[float] = []
    for round_ in range(2):
        for expression in expressions:
            if expression is None:
                continue
            started = time.perf_counter()
            conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT 10",
                (expression,),
            ).fetchall()
            if round_:
                times.append(time.perf_counter() - started)
    conn.close()
    return times


def bare_matrix(rows: int, dim: int = 512) -> list[float]:
    import numpy as np

    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    times = []
    for _ in range(30):
        q = rng.standard_normal(dim, dtype=np.float32)
        started = time.perf_counter()
        sims = matrix @ q
        np.argpartition(-sims, 100)[:100]
        times.append(time.perf_counter() - started)
    return times[5:]


def edit_to_searchable(server: Server, root: Path, existing: list[Path]) -> tuple[list[float], list[float]]:
    """Seconds from a write to the first search that finds it: new files, then edits of existing ones."""
    created: list[float] = []
    edited: list[float] = []
    originals = {p: p.read_text(encoding="utf-8") for p in existing}
    folder = root / "edits"
    folder.mkdir(exist_ok=True)
    for i in range(EDITS):
        for kind, path in (("new", folder / f"edit-{i}.md"), ("edit", existing[i])):
            word = "zq" + uuid.uuid4().hex[:10]
            text = path.read_text(encoding="utf-8") if kind == "edit" else f"# Edit {i}\n\n"
            started = time.perf_counter()
            path.write_text(text + f"\n{word} appears here.\n", encoding="utf-8")
            while True:
                hits = server.tool("search", {"query": word, "limit": 1})["hits"]
                if hits and hits[0]["path"] == path.relative_to(root).as_posix():
                    break  # the dense leg always answers something: only the edited file counts
                if time.perf_counter() - started > 120:
                    raise SystemExit(f"an edit was not searchable after 120 s ({path})")
                time.sleep(POLL_S)
            (created if kind == "new" else edited).append(time.perf_counter() - started)
    for path, text in originals.items():  # the tree stays as built, for the next run
        path.write_text(text, encoding="utf-8")
    shutil.rmtree(folder)
    return created, edited


def documents_of(index: Path) -> dict[str, str]:
    """Each indexed path's content hash, read straight from an index (a server may hold it open)."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT path, content_hash FROM documents"))
    finally:
        conn.close()


def burst(server: Server, root: Path, index_dir: Path, ops: int) -> None:
    """``ops`` edits, renames, deletions and creations as fast as a script can make them, then the
    served index against a fresh build of the same files: nothing lost, nothing left behind."""
    rng = random.Random(ops)
    files = sorted(root.rglob("*.md"))
    started = time.perf_counter()
    for i in range(ops):
        roll = rng.random()
        if roll < 0.5 or not files:
            path = rng.choice(files) if files else root / f"burst-{i}.md"
            with path.open("a", encoding="utf-8") as out:
                out.write(f"\nburst edit {i}\n")
        elif roll < 0.7:
            path = files.pop(rng.randrange(len(files)))
            target = path.with_name(f"renamed-{i}.md")
            path.rename(target)
            files.append(target)
        elif roll < 0.85:
            files.pop(rng.randrange(len(files))).unlink()
        else:
            target = rng.choice(files).parent / f"new-{i}.md"
            target.write_text(f"# New {i}\n\nburst creation {i}\n", encoding="utf-8")
            files.append(target)
    made = time.perf_counter() - started
    quiet = 0
    while quiet < 3:  # three idle readings a second apart: the watcher's batches are all indexed
        time.sleep(1.0)
        quiet = quiet + 1 if not server.tool("index_status", {})["indexing"] else 0
    settled = time.perf_counter() - started
    fresh = index_dir.parent / "fresh-index"
    shutil.rmtree(fresh, ignore_errors=True)
    run_child(
        [kbseek_script(), "index", "--kb", str(root), "--index-dir", str(fresh), "--lexical-only", "--json"]
    )
    served, rebuilt = documents_of(index_dir / "index.sqlite"), documents_of(fresh / "index.sqlite")
    shutil.rmtree(fresh)
    missing = sorted(set(rebuilt) - set(served))
    ghosts = sorted(set(served) - set(rebuilt))
    stale = sorted(p for p in set(served) & set(rebuilt) if served[p] != rebuilt[p])
    verdict = (
        "equal to a fresh index"
        if not (missing or ghosts or stale)
        else (
            f"DIFFERS: {len(missing)} missing, {len(ghosts)} left behind, {len(stale)} stale "
            f"(e.g. {(missing + ghosts + stale)[:3]})"
        )
    )
    print(
        f"burst of {ops:,} changes       made in {made:.1f} s, indexed {settled:.1f} s after the first; {verdict}"
    )


def run_size(collections: list[Collection], files: int, args: argparse.Namespace) -> None:
    semantic = not args.lexical_only
    root = build_tree(collections, files, args.distinct)
    index_dir = root.parent / ("index" if semantic else "index-lexical")
    shutil.rmtree(index_dir, ignore_errors=True)
    common = ["--kb", str(root), "--index-dir", str(index_dir)] + (["--lexical-only"] if not semantic else [])
    print(f"\n## {files:,} files ({'default: hybrid' if semantic else 'lexical only'})", flush=True)

    took, rss, out = run_child([kbseek_script(), "index", *common, "--json"])
    summary = json.loads(out)
    print(
        f"index from nothing        {took:8.1f} s   peak RSS {rss:6.0f} MiB   "
        f"({summary['chunks_written']} chunks written, {summary['chunks_embedded']} embedded)"
    )
    if semantic:
        rate = raw_embedder_rate(chunk_sample(index_dir / "index.sqlite", 200))
        pass_rate = summary["chunks_embedded"] / took
        print(
            f"  embedded per second     {pass_rate:8.1f} chunks/s, the whole pass counted; raw embedder "
            f"on 200 of its chunks {rate:.1f} chunks/s ({pass_rate / rate:.0%})"
        )

    walk_started = time.perf_counter()
    bare_walk(root)
    walk = time.perf_counter() - walk_started
    again, rss_again, _ = run_child([kbseek_script(), "index", *common, "--json"])
    print(f"pass with nothing changed {again:8.2f} s   peak RSS {rss_again:6.0f} MiB")
    print(f"  bare lstat walk         {walk:8.2f} s   ratio {again / walk:5.1f}×")

    queries = list(load("scifact", "train").queries.values())[:QUERIES]
    server = Server([kbseek_script(), "serve", *common], root.parent / "serve.stderr")
    try:
        ready_started = time.perf_counter()
        status = wait_ready(server, semantic)
        print(
            f"serve ready after         {time.perf_counter() - ready_started:8.1f} s   ({status['freshness']})"
        )
        times: list[float] = []
        for round_ in range(2):
            for q in queries:
                started = time.perf_counter()
                server.tool("search", {"query": q})
                if round_:
                    times.append(time.perf_counter() - started)
        p50, p95 = ms(times)
        fts50, fts95 = ms(bare_fts(index_dir / "index.sqlite", queries))
        print(f"search over MCP           p50 {p50:6.1f} ms   p95 {p95:6.1f} ms")
        print(
            f"  bare FTS5 MATCH         p50 {fts50:6.1f} ms   p95 {fts95:6.1f} ms   ratio {p50 / fts50:5.1f}×"
        )
        if semantic:
            m50, m95 = ms(bare_matrix(int(status["chunks"])))
            print(
                f"  bare matrix product     p50 {m50:6.1f} ms   p95 {m95:6.1f} ms   ({status['chunks']} × 512)"
            )
        existing = sorted((root / "copy-00").rglob("*.md"))[:EDITS]
        created, edited = edit_to_searchable(server, root, existing)
        print(
            f"edit → searchable         new file median {statistics.median(created):.2f} s "
            f"(max {max(created):.2f})   edited file median {statistics.median(edited):.2f} s "
            f"(max {max(edited):.2f})   floor: the watcher's batching, 0.05-0.3 s"
        )
        print(f"serve RSS                 {server.rss_mib():8.0f} MiB")
        if args.burst:
            (root.parent / ".tree-complete").unlink()  # the burst changes the tree: write it again next time
            burst(server, root, index_dir, args.burst)
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, nargs="+", default=[10_000])
    parser.add_argument("--lexical-only", action="store_true", help="keyword search only (no model)")
    parser.add_argument("--distinct", action="store_true", help="perturbed copies: every chunk is embedded")
    parser.add_argument(
        "--burst",
        type=int,
        default=0,
        help="then this many edits, renames and deletions, checked against a fresh index",
    )
    parser.add_argument("--vectors", type=int, default=0, help="also run the vector-only case at this many")
    args = parser.parse_args()
    collections = [load("scifact", "train"), load("jsquad-ir", "valid")]
    for files in args.files:
        run_size(collections, files, args)
    if args.vectors:
        print(f"\n## {args.vectors:,} vectors (dense leg alone)", flush=True)
        subprocess.run([sys.executable, str(HERE / "dense_scale.py"), "--n", str(args.vectors)], check=True)


if __name__ == "__main__":
    main()
