"""What sign-in costs a search: a JWT checked against the issuer's cached keys beside a static token,
through a real server, and the gate alone.

    python benchmarks/auth_cost.py                    # the default model on, 1,000 searches each way
    python benchmarks/auth_cost.py --searches 3000 --gate-calls 50000
    python benchmarks/auth_cost.py --lexical-only

The issue's target: a search with a JWT validated from a cached key set costs at most 1 ms more at
p50 than the same search with a static token. In one run:

1. **Through the server.** ``kbseek index`` on a copy of ``--kb`` (default ``examples/kb``), then the
   installed ``kbseek serve --http`` on it with ``--auth-issuer`` (the issuer of
   ``tests/auth_issuer.py``: its own RSA key, metadata and key set served over HTTP on loopback, as
   an identity provider's are), ``--auth-resource`` and a static token (``--auth-token``). The
   queries of ``examples/golden.yml`` go through ``/api/search`` (limit 5) on one kept-alive
   connection, each asked once with the static token (the baseline) and once with an RS256 JWT the
   issuer signed, the two back to back and their order alternating, ``--searches`` times each,
   after five warm-up searches each way (the first JWT fetches the key set; the issuer counts how
   often it is fetched afterwards). Printed: p50 / p95 of each, the difference of the p50s and the
   median of the paired differences.
2. **The gate alone**, in this process: ``Gate.admit`` on the same two headers, ``--gate-calls``
   times each, alternating, with the key set fetched once before; microseconds per call, so the
   difference is not drowned in a search's noise. A host sends one token on every request, and a
   checked token is kept (``server/auth/verified.py``), so a third arm gives each call a JWT the gate
   has not seen (``--gate-calls`` / 5 of them, signed beforehand): what the first request of a
   session costs.
3. **A call without a token.** The same server started again through a wrapper that counts the
   SQLite statements it runs (a trace callback on every connection, read on ``SIGUSR1``): once it is
   idle, ``--unauthenticated`` calls without a token or with a wrong one (``/api/search`` and an MCP
   ``initialize``, all ``401``) are timed, and the statements run meanwhile are compared with an idle
   window as long and with one authenticated search. Zero beyond the idle window: a refused call
   costs no store query.

These machines are shared: read the differences and the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.auth_issuer

from tests.auth_issuer import Issuer, running_issuer
from tests.fixture_copies import copy_fixture

from beir import WORK
from fresh_reader import pct, queries
from kbseek.server.auth.gate import Gate, Refusal
from kbseek.server.auth.settings import AuthConfig, StaticCredential
from load import free_port
from processes import kbseek_script

ROOT = Path(__file__).resolve().parents[1]
HERE = WORK / "auth-cost"
TARGET_MS = 1.0
"""A JWT from cached keys may cost at most this much more than a static token, at p50."""
STATIC = "bench-static-token-0123456789"
WARM_UP = 5
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}},
}  # fmt: skip

COUNTING = (
    "import signal, sqlite3, sys, threading\n"
    "lock, seen = threading.Lock(), [0]\n"
    "def traced(_statement):\n"
    "    with lock:\n"
    "        seen[0] += 1\n"
    "plain = sqlite3.connect\n"
    "def connect(*args, **kwargs):\n"
    "    conn = plain(*args, **kwargs)\n"
    "    conn.set_trace_callback(traced)\n"
    "    return conn\n"
    "sqlite3.connect = connect\n"
    "signal.signal(signal.SIGUSR1, lambda *_: print(f'statements {seen[0]}', file=sys.stderr, flush=True))\n"
    "from kbseek.cli import main\n"
    "sys.argv[0] = 'kbseek'\n"
    "main()\n"
)
"""``kbseek`` counting every SQLite statement it runs (``sqlite3.connect`` is how the store opens its
connections), saying the count on ``SIGUSR1``: no setting offers that."""


@dataclass
class Served:
    port: int
    resource: str
    proc: subprocess.Popen[bytes]
    log: Path

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def server(
    kb: Path, issuer: Issuer, model: list[str], log: Path, *, counting: bool = False
) -> Iterator[Served]:
    """``kbseek serve --http`` signed in to ``issuer``, with the static token too, until /healthz answers."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-c", COUNTING] if counting else [kbseek_script()]
    args = [
        "serve", "--kb", str(kb), "--http", "--port", str(port), "--auth-issuer", issuer.url,
        "--auth-resource", resource, "--auth-token", "bench=KB_BENCH_TOKEN", *model,
    ]  # fmt: skip
    with log.open("wb") as err, subprocess.Popen(
        [*command, *args], stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "KB_BENCH_TOKEN": STATIC}
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
                    raise SystemExit(f"the server did not start; see {log}")
                time.sleep(0.1)
            yield Served(port, resource, proc, log)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def search(http: httpx2.Client, served: Served, query: str, token: str) -> float:
    """One search's wall time in ms; exits if it was not answered 200."""
    started = time.perf_counter()
    answer = http.get(
        served.url("/api/search"),
        params={"q": query, "limit": 5},
        headers={"Authorization": f"Bearer {token}"},
    )
    took = (time.perf_counter() - started) * 1000
    if answer.status_code != 200:
        raise SystemExit(f"a search was answered {answer.status_code}: {answer.text[:300]}")
    return took


def through_the_server(served: Served, jwt: str, asked: list[str], searches: int) -> dict[str, list[float]]:
    """The same queries with each credential, back to back, the order alternating."""
    out: dict[str, list[float]] = {"static": [], "jwt": []}
    with httpx2.Client(timeout=120) as http:
        for q in asked[:WARM_UP]:
            search(http, served, q, STATIC)
            search(http, served, q, jwt)
        for i in range(searches):
            q = asked[i % len(asked)]
            arms = [("static", STATIC), ("jwt", jwt)]
            for arm, token in arms if i % 2 == 0 else reversed(arms):
                out[arm].append(search(http, served, q, token))
    return out


def gate_alone(issuer: Issuer, resource: str, jwt: str, calls: int) -> dict[str, list[float]]:
    """``Gate.admit`` on each header, alternating, in microseconds; the key set fetched first; then
    on tokens it has not seen, one each."""
    config = AuthConfig(
        issuer=issuer.url, resource=resource, algorithms=("RS256", "PS256", "ES256", "EdDSA"),
        static=(StaticCredential("bench", STATIC, ("kb:read",)),),
    )  # fmt: skip
    gate = Gate(config)
    headers = {"static": f"Bearer {STATIC}", "jwt": f"Bearer {jwt}"}
    expiry = int(time.time()) + 6 * 3600
    fresh = [f"Bearer {issuer.token(resource, exp=expiry, jti=str(i))}" for i in range(max(1, calls // 5))]

    async def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"static": [], "jwt": []}
        for header in headers.values():
            if isinstance(await gate.admit(header), Refusal):
                raise SystemExit("the gate refused a benchmark token")
        for i in range(calls):
            for arm in ("static", "jwt") if i % 2 == 0 else ("jwt", "static"):
                started = time.perf_counter_ns()
                await gate.admit(headers[arm])
                out[arm].append((time.perf_counter_ns() - started) / 1000)
        out["jwt_new"] = []
        for header in fresh:
            started = time.perf_counter_ns()
            if isinstance(await gate.admit(header), Refusal):
                raise SystemExit("the gate refused a benchmark token")
            out["jwt_new"].append((time.perf_counter_ns() - started) / 1000)
        return out

    return asyncio.run(run())


def statements(served: Served) -> int:
    """The SQLite statements the counting server has run so far."""
    before = served.log.read_text(encoding="utf-8", errors="replace").count("statements ")
    served.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [
            x
            for x in served.log.read_text(encoding="utf-8", errors="replace").splitlines()
            if x.startswith("statements ")
        ]
        if len(lines) > before:
            return int(lines[-1].split()[1])
        time.sleep(0.02)
    raise SystemExit("the counting server did not say its count")


def idle(served: Served) -> int:
    """Wait until two readings a second apart agree (the first pass and the model done); the count."""
    count = statements(served)
    for _ in range(120):
        time.sleep(1.0)
        now = statements(served)
        if now == count:
            return now
        count = now
    raise SystemExit("the counting server never went idle")


def unauthenticated(served: Served, calls: int) -> tuple[list[float], int, int, int]:
    """``calls`` refused calls' times in ms, and the statements run during them, during an idle window
    as long, and during one authenticated search."""
    times = []
    with httpx2.Client(timeout=60) as http:
        search(http, served, "rollback", STATIC)  # the model and the caches warm
        start = idle(served)
        began = time.perf_counter()
        for i in range(calls):
            headers = {} if i % 4 < 2 else {"Authorization": "Bearer not-a-token"}
            started = time.perf_counter()
            if i % 2 == 0:
                answer = http.get(served.url("/api/search"), params={"q": "rollback"}, headers=headers)
            else:
                answer = http.post(
                    served.url("/mcp"), json=INITIALIZE,
                    headers={**headers, "Accept": "application/json, text/event-stream"},
                )  # fmt: skip
            times.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 401:
                raise SystemExit(f"a call without a valid token was answered {answer.status_code}")
        window = time.perf_counter() - began
        during = statements(served)
        time.sleep(window)
        quiet = statements(served)
        search(http, served, "rollback", STATIC)
        one_search = statements(served)
    return times, during - start, quiet - during, one_search - quiet


def line(name: str, values: list[float], unit: str) -> str:
    return f"  {name:<28} p50 {pct(values, 50):8.3f} {unit}   p95 {pct(values, 95):8.3f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", type=Path, default=ROOT / "examples" / "kb")
    parser.add_argument("--searches", type=int, default=1000, help="searches with each credential")
    parser.add_argument("--gate-calls", type=int, default=10000, help="Gate.admit calls with each credential")
    parser.add_argument("--unauthenticated", type=int, default=400, help="calls without a valid token")
    parser.add_argument("--lexical-only", action="store_true", help="no model")
    args = parser.parse_args()

    model = ["--lexical-only"] if args.lexical_only else []
    asked = queries()
    shutil.rmtree(HERE, ignore_errors=True)
    kb = HERE / "kb"
    copy_fixture(args.kb, kb)  # without an index a demo left in it
    subprocess.run([kbseek_script(), "index", "--kb", str(kb), "--quiet", *model], check=True)
    try:
        with running_issuer() as issuer:
            with server(kb, issuer, model, HERE / "serve.log") as served:
                jwt = issuer.token(served.resource, exp=int(time.time()) + 6 * 3600)
                started = time.perf_counter()
                timed = through_the_server(served, jwt, asked, args.searches)
                seconds = time.perf_counter() - started
                key_fetches = issuer.count("/jwks")
            gate = gate_alone(issuer, served.resource, jwt, args.gate_calls)
            with server(kb, issuer, model, HERE / "serve-counting.log", counting=True) as counting:
                refused, during, quiet, one_search = unauthenticated(counting, args.unauthenticated)
    finally:
        shutil.rmtree(kb, ignore_errors=True)

    static, signed = timed["static"], timed["jwt"]
    difference = pct(signed, 50) - pct(static, 50)
    paired = statistics.median(j - s for s, j in zip(static, signed, strict=True))
    print(f"{len(asked)} golden queries, {args.searches} searches with each credential through /api/search "
          f"(limit 5), {'keywords only' if args.lexical_only else 'the default model on'}, {seconds:.0f} s")  # fmt: skip
    print(line("static token (baseline)", static, "ms"))
    print(line("JWT, keys cached", signed, "ms"))
    verdict = "met" if difference <= TARGET_MS else "NOT met"
    print(f"  p50 difference {difference:+.3f} ms, median paired difference {paired:+.3f} ms "
          f"(target ≤ {TARGET_MS:g} ms: {verdict}); key set fetched {key_fetches} time(s)")  # fmt: skip
    print(f"Gate.admit alone, {args.gate_calls} calls with each, in this process")
    print(line("static token", gate["static"], "µs"))
    print(line("JWT, keys cached, token seen before", gate["jwt"], "µs"))
    print(line(f"JWT, keys cached, a new token each ({len(gate['jwt_new'])})", gate["jwt_new"], "µs"))
    print(f"  p50 difference {pct(gate['jwt'], 50) - pct(gate['static'], 50):+.1f} µs (token seen before), "
          f"{pct(gate['jwt_new'], 50) - pct(gate['static'], 50):+.1f} µs (new token)")  # fmt: skip
    print(f"{args.unauthenticated} calls without a valid token (401): p50 {pct(refused, 50):.2f} ms, "
          f"p95 {pct(refused, 95):.2f} ms")  # fmt: skip
    print(f"  SQLite statements meanwhile: {during}; in an idle window as long: {quiet}; "
          f"one authenticated search: {one_search}")  # fmt: skip


if __name__ == "__main__":
    main()
