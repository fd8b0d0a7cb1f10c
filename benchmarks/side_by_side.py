"""Search latency of this checkout's kbseek beside another source tree's, on one index, in one run.

    python benchmarks/side_by_side.py --against ../other/src                  # 100,000 files
    python benchmarks/side_by_side.py --against ../other/src --files 10000    # a quicker check
    python benchmarks/side_by_side.py --against src                           # both sides this checkout: the noise

The knowledge base is ``scale.py``'s, written by its code in its place (``benchmarks/.work/scale/<files>``:
SciFact and JSQuAD from ``KBSEEK_DATASETS`` as Markdown, then exact copies until the tree holds
``--files`` files), indexed in the same folder with the default configuration (the bundled model on).
The tree is written when missing, then this checkout's ``kbseek index`` runs once: from nothing the
first time, a pass with nothing changed when a run of this benchmark or of ``scale.py`` left the
index there.

Two ``kbseek serve --read-only`` processes on stdio then serve that one index at the same time, each
importing kbseek from its own source tree, put first on its ``PYTHONPATH``: this checkout's ``src``
(*new*) and the folder ``--against`` names (*old*, the ``src`` of another checkout). The console
script, the interpreter, the libraries and the index files are the same for both. Read-only servers
neither index, watch the files nor reconcile, so nothing writes the index while they read it and no
pass of their own runs between the timings; both trees must read the same index format. Past
``approximate_above`` vectors (the default: 100,000; the 100,000-file tree holds 138,628 chunks) a
read-only server keeps no graph on disk: each builds its own HNSW graph at start, which takes minutes
on two cores, and two builds are not the same graph, so a few results can differ between two
servers of the same code (run ``--against src`` to see how many).

Once both report the model loaded and every document of the index, and their CPU time has stopped
growing, the first 100 SciFact claims (as in ``scale.py``) are sent as ``search`` calls: each query to
one server and then to the other, the first one alternating by query and by round (the second reads
pages the first one brought into the page cache), a warm-up round not counted, then ``--rounds``
timed rounds. Printed: p50 / p95 of each side, new/old for each, the range of the p50 ratio over the
rounds (the noise of this run), and whether both answered every search with the same result.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import load
from kbseek.config import Settings
from processes import kbseek_script, run_child
from scale import QUERIES, SERVE_READY_TIMEOUT_S, Server, build_tree, documents_of, ms

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
QUIET_CPU_S = 0.05
"""A server is idle when it used less CPU than this over a second, twice in a row."""


@dataclass
class Side:
    """One source tree, its server, and what it measured."""

    name: str
    src: Path
    server: Server | None = None
    rounds: list[list[float]] = field(default_factory=list)

    def env(self) -> list[str]:
        """``env PYTHONPATH=…``: the command after it imports kbseek from this side's tree first."""
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        return ["env", f"PYTHONPATH={os.pathsep.join([str(self.src), *inherited])}"]

    def command(self, *args: str) -> list[str]:
        """The installed ``kbseek`` with ``args``, on this side's tree."""
        return [*self.env(), kbseek_script(), *args]

    def describe(self) -> str:
        """Where this side's kbseek is imported from (asked of this interpreter), and its commit."""
        found = subprocess.run(
            [*self.env(), sys.executable, "-c", "import kbseek; print(kbseek.__file__)"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        package = Path(found).parent
        if package.parent.resolve() != self.src.resolve():
            raise SystemExit(f"{self.name}: kbseek is imported from {package}, not from {self.src}")
        head = subprocess.run(
            ["git", "-C", str(self.src), "log", "-1", "--format=%h"], capture_output=True, text=True
        )
        if head.returncode:
            return str(package)
        changed = subprocess.run(
            ["git", "-C", str(self.src), "status", "--porcelain", "--", "."], capture_output=True, text=True
        ).stdout.strip()
        return f"{package} (commit {head.stdout.strip()}{', with uncommitted changes' if changed else ''})"

    def times(self) -> list[float]:
        return [t for round_ in self.rounds for t in round_]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (``/proc``; Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_idle(servers: list[Server], documents: int) -> list[dict[str, Any]]:
    """Until every server has the model loaded and serves ``documents`` documents, and then uses
    less than :data:`QUIET_CPU_S` of CPU over a second twice in a row (the lexicon read, the dense
    index loaded, whatever else a start does in the background). Returns their last statuses."""
    deadline = time.monotonic() + SERVE_READY_TIMEOUT_S
    while True:
        statuses = [s.tool("index_status", {}) for s in servers]
        if all(st["semantic"] == "ok" and st["documents"] == documents for st in statuses):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"the servers were not ready in time: {[st['semantic'] for st in statuses]}")
        time.sleep(0.5)
    quiet = 0
    while quiet < 2:
        before = [cpu_seconds(s.proc.pid) for s in servers]
        time.sleep(1.0)
        used = [cpu_seconds(s.proc.pid) - b for s, b in zip(servers, before, strict=True)]
        quiet = quiet + 1 if max(used) < QUIET_CPU_S else 0
        if time.monotonic() > deadline:
            raise SystemExit(f"the servers did not settle in time (CPU seconds per second: {used})")
    return statuses


def interleaved(sides: list[Side], queries: list[str], rounds: int) -> dict[int, dict[str, dict[str, Any]]]:
    """A warm-up round, then ``rounds`` timed ones into each side's ``rounds``; each query goes to
    both sides one after the other, which first alternating by query and round. Returns the queries
    (by index) whose results differed between the sides, with each side's first differing result."""
    differ: dict[int, dict[str, dict[str, Any]]] = {}
    for round_ in range(rounds + 1):
        times: dict[str, list[float]] = {side.name: [] for side in sides}
        for i, query in enumerate(queries):
            results: dict[str, dict[str, Any]] = {}
            for side in sides if (i + round_) % 2 == 0 else sides[::-1]:
                assert side.server is not None
                started = time.perf_counter()
                results[side.name] = side.server.tool("search", {"query": query})
                times[side.name].append(time.perf_counter() - started)
            first, *others = results.values()
            if any(other != first for other in others):
                differ.setdefault(i, results)
        if round_:
            for side in sides:
                side.rounds.append(times[side.name])
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--against", type=Path, required=True, help="the src folder of the other checkout (the old side)"
    )
    parser.add_argument("--files", type=int, default=100_000, help="files in the tree (default 100,000)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds after the warm-up one")
    args = parser.parse_args()
    against = args.against.expanduser().resolve()
    if not (against / "kbseek" / "__init__.py").is_file():
        raise SystemExit(f"--against {args.against}: no kbseek package there; give another checkout's src")

    new, old = Side("new", SRC), Side("old", against)
    sides = [new, old]
    print(
        f"## {args.files:,} files (default: hybrid; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores)",
        flush=True,
    )
    for side in sides:
        print(f"{side.name:<4} kbseek from {side.describe()}")
    if new.src.resolve() == old.src.resolve():
        print("     (the same tree on both sides: the ratios are the noise of this run)")

    collections = [load("scifact", "train"), load("jsquad-ir", "valid")]
    started = time.perf_counter()
    root = build_tree(collections, args.files, distinct=False)
    print(f"tree ready after          {time.perf_counter() - started:8.1f} s   {root}", flush=True)
    index_dir = root.parent / "index"
    took, rss, _ = run_child(new.command("index", "--kb", str(root), "--index-dir", str(index_dir), "--json"))
    documents = len(documents_of(index_dir / "index.sqlite"))
    print(
        f"index (new's kbseek)      {took:8.1f} s   peak RSS {rss:6.0f} MiB   {documents:,} documents",
        flush=True,
    )

    queries = list(load("scifact", "train").queries.values())[:QUERIES]
    try:
        for side in sides:
            side.server = Server(
                side.command("serve", "--read-only", "--kb", str(root), "--index-dir", str(index_dir)),
                root.parent / f"side-by-side-{side.name}.stderr",
            )
        started = time.perf_counter()
        statuses = wait_idle([s.server for s in sides if s.server is not None], documents)
        graphs = statuses[0]["embedded"] > Settings(root=root).approximate_above
        print(
            f"both idle after           {time.perf_counter() - started:8.1f} s   "
            f"({statuses[0]['embedded']:,} vectors{': each server built its own graph' if graphs else ''})",
            flush=True,
        )
        differ = interleaved(sides, queries, args.rounds)
    finally:
        for side in sides:
            if side.server is not None:
                side.server.close()

    print(
        f"search over MCP, {len(queries)} SciFact claims × {args.rounds} rounds per side, interleaved, "
        "after a warm-up round"
    )
    figures = {side.name: ms(side.times()) for side in sides}
    for side in sides:
        p50, p95 = figures[side.name]
        print(f"  {side.name:<23} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms")
    per_round = [
        statistics.median(n) / statistics.median(o) for n, o in zip(new.rounds, old.rounds, strict=True)
    ]
    print(
        f"  new/old                 p50 {figures['new'][0] / figures['old'][0]:6.3f}      "
        f"p95 {figures['new'][1] / figures['old'][1]:6.3f}      "
        f"(p50 ratio per round {min(per_round):.3f}–{max(per_round):.3f})"
    )
    if not differ:
        print(f"results                   the same on both sides for all {len(queries)} queries, every round")
        return
    print(f"results                   DIFFER for {len(differ)} of {len(queries)} queries, e.g.")
    for i, results in list(differ.items())[:3]:
        fields = sorted(k for k in results[new.name].keys() | results[old.name].keys()
                        if results[new.name].get(k) != results[old.name].get(k))  # fmt: skip
        print(f"  {queries[i][:70]!r}: {', '.join(fields)} differ")
        for name, result in results.items():
            print(f"    {name:<4} top hits {[(h['path'], h['score']) for h in result.get('hits', [])[:3]]}")
    if graphs:
        print(
            "  (each server searches its own HNSW graph: an A/A run, --against src, shows what that alone changes)"
        )


if __name__ == "__main__":
    main()
