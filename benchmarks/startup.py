"""Time from process start to the answer of MCP ``initialize``, with the default model configured.

    python benchmarks/startup.py [--kb examples/kb] [--runs 5]

The baseline measured in the same run is a bare Python interpreter start, so
the ratio shows what kbseek adds on this machine. The model loads in the
background and must not delay the handshake.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from processes import kbseek_script

HERE = Path(__file__).resolve().parent


def time_initialize(kb: Path) -> float:
    started = time.perf_counter()
    with subprocess.Popen(
        [kbseek_script(), "serve", "--kb", str(kb)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            },
        }
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - started
        assert json.loads(line)["id"] == 1
        proc.stdin.close()
        proc.wait(timeout=60)
    return elapsed


def time_python() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, default=HERE.parent / "examples" / "kb")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    time_initialize(args.kb)  # warm the OS file cache and the index
    init = [time_initialize(args.kb) for _ in range(args.runs)]
    bare = [time_python() for _ in range(args.runs)]
    print(f"| measure ({args.runs} runs, median) | seconds |")
    print("|---|---|")
    print(
        f"| process start → initialize answered (kbseek serve, default model) | {statistics.median(init):.3f} |"
    )
    print(f"| bare Python interpreter start | {statistics.median(bare):.3f} |")
    print(f"| ratio | {statistics.median(init) / statistics.median(bare):.1f}× |")


if __name__ == "__main__":
    main()
