"""Soak: many searches against one server, watching its memory and open file descriptors.

    python benchmarks/soak.py                     # 50,000 searches
    python benchmarks/soak.py --searches 10000    # a shorter run

Builds a knowledge base of ``--files`` notes (as ``load.py`` does), starts the installed
``kbseek serve --http`` in its default configuration (the embedding model on), waits for the
catch-up and the embedding, then sends ``--searches`` MCP ``search`` calls from ``--clients``
concurrent sessions; each client closes its session and opens a new one every
``--session-every`` searches, so a leak per session shows too. The server's RSS and open file
descriptors are read from ``/proc/<pid>`` every ``--sample-every`` seconds.

Printed: RSS and fds when the warm-up (the first ``--warmup`` of the searches) ends and at the
end, the growth after warm-up in %, the peak, and the search rate; the targets are RSS growth under
10 % and no fd growth. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from load import Session, corpus, serving, settled, write_kb


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--searches", type=int, default=50_000)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=0.1, help="fraction of the searches that warms up")
    parser.add_argument("--session-every", type=int, default=500, help="searches per session")
    parser.add_argument("--sample-every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--lexical-only", action="store_true", help="serve without the embedding model")
    args = parser.parse_args()
    docs, queries = corpus(args.files)
    extra = ["--lexical-only"] if args.lexical_only else []
    with tempfile.TemporaryDirectory(prefix="kbseek-soak-") as tmp:
        root = Path(tmp) / "kb"
        write_kb(root, docs)
        with serving(root, *extra) as (proc, url):
            probe = Session(url)
            status = settled(probe, args.files, semantic=not args.lexical_only)
            probe.close()
            pid = proc.pid
            print(
                f"{args.files:,} files, {status['chunks']:,} chunks, semantic {status['semantic']}",
                file=sys.stderr,
            )
            done = 0
            lock = threading.Lock()
            warmup_at = int(args.searches * args.warmup)
            samples: list[tuple[int, float, int]] = []  # (searches done, RSS MiB, fds)
            warm: list[tuple[float, int]] = []
            failures: list[str] = []
            finished = threading.Event()

            def sample() -> None:
                while not finished.wait(args.sample_every):
                    samples.append((done, rss_mib(pid), open_fds(pid)))

            def client(n: int) -> None:
                nonlocal done
                session = Session(url)
                mine = 0
                while True:
                    with lock:
                        if done >= args.searches:
                            break
                        done += 1
                        if done == warmup_at:
                            warm.append((rss_mib(pid), open_fds(pid)))
                    try:
                        session.call("search", {"query": queries[(n * 7919 + mine) % len(queries)]})
                    except Exception as exc:  # counted: a failed search fails the run
                        failures.append(str(exc)[:200])
                    mine += 1
                    if mine % args.session_every == 0:
                        session.close()
                        session = Session(url)
                session.close()

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started_rss, started_fds = rss_mib(pid), open_fds(pid)
            began = time.perf_counter()
            threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seconds = time.perf_counter() - began
            finished.set()
            time.sleep(1.0)  # let the last sessions close
            final_rss, final_fds = rss_mib(pid), open_fds(pid)
    warm_rss, warm_fds = warm[0] if warm else (started_rss, started_fds)
    peak_rss = max([s[1] for s in samples] + [final_rss])
    peak_fds = max([s[2] for s in samples] + [final_fds])
    growth = (final_rss - warm_rss) / warm_rss * 100
    print(f"| soak: {args.searches:,} searches, {args.clients} clients, {args.files:,} files | value |")
    print("|---|---|")
    print(
        f"| RSS before the first search / after warm-up ({warmup_at:,} searches) | {started_rss:.0f} / {warm_rss:.0f} MiB |"
    )
    print(f"| RSS at the end / peak | {final_rss:.0f} / {peak_rss:.0f} MiB |")
    print(f"| RSS growth after warm-up (target < 10 %) | {growth:+.1f} % |")
    print(
        f"| open fds before / after warm-up / end / peak | {started_fds} / {warm_fds} / {final_fds} / {peak_fds} |"
    )
    print(f"| searches/s | {args.searches / seconds:.1f} ({seconds:.0f} s) |")
    for n, rss, fds in samples[:: max(1, len(samples) // 10)]:
        print(f"  after {n:>7,} searches: RSS {rss:.0f} MiB, {fds} fds", file=sys.stderr)
    if failures:
        raise SystemExit(f"{len(failures)} searches failed; first: {failures[0]}")


if __name__ == "__main__":
    main()
