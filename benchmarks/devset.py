"""The development query sets: real documentation, questions written before any ranking was seen.

    python benchmarks/devset.py                       # every collection, default settings, both halves
    python benchmarks/devset.py --legs                # also lexical-only and dense-only, same run
    python benchmarks/devset.py --only react-mixed --json
    python benchmarks/devset.py --legs --provider use+e5   # another embedding provider (own index)
    python benchmarks/devset.py --flipped --legs      # the same questions over the pages in the other language
    python benchmarks/devset.py --all --half heldout  # all five collections, with rows pooled over them

The sets live in ``benchmarks/devsets/*.yml``. Each query belongs to one half,
``tune`` or ``heldout``, by a rule fixed before any number was looked at
(``split_of``): within each collection and kind, queries are ordered by a hash
of their id and alternate between the halves, so both halves hold every kind.
Constants may be chosen on ``tune``; numbers are reported on ``heldout``.

Collections are assembled under ``benchmarks/.work/devsets/`` from the real
documentation beside the checkout (``KBSEEK_REALDOCS``, default
``../shared/realdocs``) and from ``examples/kb``. They are measurement data and
never part of the package.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from kbseek import KnowledgeBase
from kbseek.cli.eval import GoldenQuery, QueryResult, load_golden, run_eval
from kbseek.config import Settings
from kbseek.embed.base import PROVIDERS, EmbedderSpec
from kbseek.text.lexicon import lexicon

HERE = Path(__file__).resolve().parent
SETS = HERE / "devsets"
WORK = HERE / ".work" / "devsets"
HALVES = ("tune", "heldout")
CROSS = ("cross-lingual-en-ja", "cross-lingual-ja-en")


def realdocs_dir() -> Path:
    env = os.environ.get("KBSEEK_REALDOCS")
    return Path(env) if env else HERE.parent.parent / "shared" / "realdocs"


# -- assembling the knowledge bases -------------------------------------------------------------


def _copy_tree(src: Path, dst: Path, keep: Callable[[Path], bool] = lambda _: True) -> None:
    """Real copies, not links: the document guard refuses symlinks and hard links, as it should."""
    for path in sorted(src.rglob("*")):
        if path.is_file() and keep(path.relative_to(src)):
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def _react_mixed(dst: Path) -> None:
    """English ``learn/`` with Japanese ``reference/``: each cross-language direction has one answer."""
    docs = realdocs_dir()
    _copy_tree(docs / "react-en" / "learn", dst / "learn")
    _copy_tree(docs / "react-ja" / "reference", dst / "reference")


def _tldr_english(rel: Path) -> bool:
    return rel.stem[:1].lower() < "m"


def _tldr_mixed(dst: Path) -> None:
    """Commands a–l from the English pages, m–z from the Japanese ones, at the same paths."""
    docs = realdocs_dir()
    _copy_tree(docs / "tldr-en", dst, _tldr_english)
    _copy_tree(docs / "tldr-ja", dst, lambda rel: not _tldr_english(rel))


def _examples(dst: Path) -> None:
    """The example notes without an index a ``make demo`` may have left inside them."""
    _copy_tree(HERE.parent / "examples" / "kb", dst, lambda rel: rel.parts[0] != ".kbseek")


def _react_flipped(dst: Path) -> None:
    """``react-mixed`` with each tree in the other language: Japanese ``learn/``, English ``reference/``."""
    docs = realdocs_dir()
    _copy_tree(docs / "react-ja" / "learn", dst / "learn")
    _copy_tree(docs / "react-en" / "reference", dst / "reference")


def _tldr_flipped(dst: Path) -> None:
    """``tldr-mixed`` with each page in the other language: a–l Japanese, m–z English."""
    docs = realdocs_dir()
    _copy_tree(docs / "tldr-ja", dst, _tldr_english)
    _copy_tree(docs / "tldr-en", dst, lambda rel: not _tldr_english(rel))


ASSEMBLE: dict[str, Callable[[Path], None]] = {
    "react-mixed": _react_mixed,
    "tldr-mixed": _tldr_mixed,
    "examples-kb": _examples,
    "react-flipped": _react_flipped,
    "tldr-flipped": _tldr_flipped,
}

FLIPPED = {"react-flipped": "react-mixed", "tldr-flipped": "tldr-mixed"}
"""A second check that no constant was tuned on: the same questions over the same pages in the other
language (the real documentation is parallel, page for page). A paraphrase becomes a cross-language
question and a cross-language question a same-language one; the halves stay those of the source set,
so a held-out question is held out here too. Run with ``--flipped``."""

_FLIP_KIND = {
    "paraphrase": "cross-lingual-en-ja",
    "japanese": "cross-lingual-ja-en",
    "cross-lingual-en-ja": "paraphrase",
    "cross-lingual-ja-en": "japanese",
}


def questions(name: str) -> tuple[list[GoldenQuery], dict[str, str]]:
    """A collection's queries and their halves. A flipped collection relabels its source's kinds and
    drops the expected headings, which name sections in the source's language."""
    source = FLIPPED.get(name, name)
    queries = load_golden(SETS / f"{source}.yml")
    halves = split_of(source, queries)
    if name in FLIPPED:
        queries = [
            replace(
                q,
                kind=_FLIP_KIND.get(q.kind or "", q.kind),
                expected=tuple(replace(e, heading=None) for e in q.expected),
            )
            for q in queries
        ]
    return queries, halves


def assemble(name: str) -> Path:
    """The collection's folder, built once; delete ``benchmarks/.work/devsets`` to rebuild it."""
    root = WORK / name
    done = root / ".assembled"
    if not done.exists():
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        ASSEMBLE[name](root)
        done.write_text("", encoding="utf-8")
    return root


# -- the split ----------------------------------------------------------------------------------


def split_of(collection: str, queries: Sequence[GoldenQuery]) -> dict[str, str]:
    """Query id → half. Fixed by rule, so adding a query never moves another one's half much."""
    by_kind: dict[str, list[GoldenQuery]] = {}
    for q in queries:
        by_kind.setdefault(q.kind or "", []).append(q)
    halves: dict[str, str] = {}
    for kind_queries in by_kind.values():
        ordered = sorted(
            kind_queries, key=lambda q: hashlib.sha256(f"{collection}/{q.id}".encode()).hexdigest()
        )
        for i, q in enumerate(ordered):
            halves[q.id] = HALVES[i % 2]
    return halves


# -- metrics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    query: GoldenQuery
    half: str
    result: QueryResult


def _doc_rank(r: QueryResult) -> int | None:
    """First rank at which any expected document appears (document level: a section is not asked)."""
    found = [d for d in r.document_ranks if d is not None]
    return min(found) if found else None


def _rate(items: Sequence[Scored], hit: Callable[[Scored], bool]) -> float | None:
    return sum(1 for s in items if hit(s)) / len(items) if items else None


def metrics(items: Sequence[Scored]) -> dict[str, float | int | None]:
    answerable = [s for s in items if s.query.expected]
    unanswerable = [s for s in items if not s.query.expected]
    single = [s for s in answerable if len(s.query.expected) == 1]

    def within(k: int) -> Callable[[Scored], bool]:
        return lambda s: (rank := _doc_rank(s.result)) is not None and rank <= k

    def of_kind(*kinds: str) -> list[Scored]:
        return [s for s in answerable if s.query.kind in kinds]

    def mrr(group: Sequence[Scored]) -> float | None:
        if not group:
            return None
        return sum(1.0 / r if (r := _doc_rank(s.result)) else 0.0 for s in group) / len(group)

    distinct = [len(set(s.result.top_paths)) for s in answerable if s.result.top_paths]
    return {
        "queries": len(items),
        "single R@1": _rate(single, within(1)),
        "single MRR": mrr(single),
        "R@5": _rate(answerable, within(5)),
        "paraphrase R@1": _rate(of_kind("paraphrase", "symptom"), within(1)),
        "paraphrase R@5": _rate(of_kind("paraphrase", "symptom"), within(5)),
        "cross R@1": _rate(of_kind(*CROSS), within(1)),
        "same-language single R@1": _rate([s for s in single if s.query.kind not in CROSS], within(1)),
        "cross single R@1": _rate([s for s in single if s.query.kind in CROSS], within(1)),
        "cross R@5": _rate(of_kind(*CROSS), within(5)),
        "identifier R@1": _rate(of_kind("identifier"), within(1)),
        "unanswerable flagged": _rate(unanswerable, lambda s: s.result.low_confidence),
        "answerable flagged": _rate(answerable, lambda s: s.result.low_confidence),
        "distinct docs in top 5": sum(distinct) / len(distinct) if distinct else None,
    }


# -- running ------------------------------------------------------------------------------------

VARIANTS: dict[str, tuple[dict[str, Any], bool]] = {
    "default": ({}, False),
    "default + also": ({}, True),
    "lexical only": ({"semantic": False, "bridge_weight": 0.0}, False),
    "dense only": ({"dense_weight": 1.0, "dense_weight_matched": 1.0, "bridge_weight": 0.0}, False),
    "default, no bridge": ({"bridge_weight": 0.0}, False),
}
"""Settings overrides, and whether the queries' ``also`` phrasings are sent (as an agent would). The
two legs are measured alone, without the bilingual bridge (decision 0027), which the last row
takes out of the default to show what it adds."""


def run(
    names: Sequence[str], variants: Sequence[str], provider: str, extra: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """``extra``: settings given to every variant (``--set``), to compare a setting's values in one run."""
    rows: list[dict[str, Any]] = []
    pooled: dict[tuple[str, str], list[Scored]] = {}
    embed = EmbedderSpec(provider=provider)
    lexicon()  # read once before any timing, as a server reads it at start (decision 0027)
    for name in names:
        queries, halves = questions(name)
        root = assemble(name)
        # The default provider's index sits in the collection, any other one beside it.
        index_dir = None if provider == EmbedderSpec().provider else WORK / f"{name}.index-{provider}"
        fixed = {"root": root, "index_dir": index_dir, "embed": embed, "freshness_interval_s": 1e9}
        started = time.perf_counter()
        base = KnowledgeBase(settings=Settings(**fixed))
        report = base.index()
        index_s = time.perf_counter() - started
        print(f"{name}: {base.summary().documents} documents, {base.summary().chunks} chunks "
              f"(index pass {index_s:.1f} s, {report.chunks_embedded} chunks embedded)", file=sys.stderr)  # fmt: skip
        shared = base.retrieval().embedder
        for variant in variants:
            overrides, with_also = VARIANTS[variant]
            semantic = overrides.get("semantic", True)
            kb = KnowledgeBase(
                settings=Settings(**fixed, **{**(extra or {}), **overrides}),
                embedder=shared if semantic else None,
            )
            started = time.perf_counter()
            results = run_eval(kb, queries, with_also=with_also)
            per_query_ms = (time.perf_counter() - started) * 1000 / max(len(queries), 1)
            kb.close()
            scored = [Scored(r.query, halves[r.query.id], r) for r in results]
            for half in HALVES:
                pooled.setdefault((variant, half), []).extend(s for s in scored if s.half == half)
                rows.append({"collection": name, "provider": provider, "variant": variant, "half": half,
                             "ms per query": per_query_ms,
                             **metrics([s for s in scored if s.half == half])})  # fmt: skip
        base.close()
    if len(names) > 1:  # every question of the collections run, counted once each
        for (variant, half), items in pooled.items():
            rows.append({"collection": "all (pooled)", "provider": provider, "variant": variant, "half": half,
                         "ms per query": None, **metrics(items)})  # fmt: skip
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    keys = [k for k in rows[0] if k not in ("collection", "provider", "variant", "half")]
    lines = [
        "| collection | provider | variant | half | " + " | ".join(keys) + " |",
        "|---" * (len(keys) + 4) + "|",
    ]
    for row in rows:
        cells = [
            "—" if row[k] is None else f"{row[k]:.3f}" if isinstance(row[k], float) else str(row[k])
            for k in keys
        ]
        lines.append(
            f"| {row['collection']} | {row['provider']} | {row['variant']} | {row['half']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def write_split(names: Sequence[str]) -> None:
    """``devsets/split.yml``: the halves as data, so a change in the rule shows up in a diff."""
    out: dict[str, dict[str, list[str]]] = {}
    for name in names:
        halves = split_of(name, load_golden(SETS / f"{name}.yml"))
        out[name] = {h: sorted(q for q, half in halves.items() if half == h) for h in HALVES}
    header = (
        "# Written by `python benchmarks/devset.py --write-split`; the rule is split_of() in devset.py.\n"
    )
    (SETS / "split.yml").write_text(header + yaml.safe_dump(out, allow_unicode=True, sort_keys=True))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", action="append", choices=sorted(ASSEMBLE), help="One collection (repeatable)."
    )
    parser.add_argument(
        "--flipped", action="store_true", help="The flipped collections instead (see FLIPPED)."
    )
    parser.add_argument(
        "--all", action="store_true", help="The original and the flipped collections together (pooled rows)."
    )
    parser.add_argument("--legs", action="store_true", help="Also score lexical-only and dense-only.")
    parser.add_argument("--half", choices=HALVES, help="Print only this half.")
    parser.add_argument("--json", action="store_true", help="Print the rows as JSON.")
    parser.add_argument(
        "--provider", default=EmbedderSpec().provider, choices=[p for p in PROVIDERS if p != "http"],
        help="Embedding provider (a non-default one gets its own index beside the collection).",
    )  # fmt: skip
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="A Settings field for every variant, e.g. --set bridge_weight=0 (repeatable; the value is read as JSON).",
    )  # fmt: skip
    parser.add_argument("--write-split", action="store_true", help="Write devsets/split.yml and stop.")
    args = parser.parse_args()
    originals = sorted(n for n in ASSEMBLE if n not in FLIPPED)
    names = args.only or (sorted(ASSEMBLE) if args.all else sorted(FLIPPED) if args.flipped else originals)
    if args.write_split:
        write_split(originals)
        return
    extra = {name: json.loads(value) for name, _, value in (item.partition("=") for item in args.set)}
    rows = run(names, list(VARIANTS) if args.legs else ["default", "default + also"], args.provider, extra)
    if args.half:
        rows = [r for r in rows if r["half"] == args.half]
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))


if __name__ == "__main__":
    main()
