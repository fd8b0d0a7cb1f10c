"""Combining the lexical and dense legs into one ranking.

Two methods, chosen by configuration: reciprocal rank fusion (rank only) and
a weighted blend of per-query normalised scores. Which is the default is
decided by measurement (see docs/decisions), not by habit. The weights and
``k`` have no defaults here: the configuration is their one source.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from kbseek.embed.base import VectorPart


@dataclass
class Fused:
    rowid: int
    score: float
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_similarity: float | None = None
    phrasing: int = 0
    """Which phrasing of the search gave this score: 0 the query, 1.. its alternatives (``also``);
    the ranks and scores above are that phrasing's."""
    agreement: float = 0.0
    """The part of ``score`` the other phrasings added, because they found this chunk too (:func:`best_of`)."""
    bridge: float = 0.0
    """The part of ``score`` the bilingual bridge added: the query's words in the other language
    found this chunk (:func:`add_bridge`)."""
    learned: tuple[tuple[str, float], ...] = ()
    """When the learned ranking scored this chunk (``search.ranker``): the features that moved its
    score most, each with its part of the model's sum, largest first."""


def _collect(lexical: Sequence[tuple[int, float]], dense: Sequence[tuple[int, float]]) -> dict[int, Fused]:
    out: dict[int, Fused] = {}
    for rank, (rowid, score) in enumerate(lexical, 1):
        out[rowid] = Fused(rowid, 0.0, lexical_rank=rank, lexical_score=score)
    for rank, (rowid, sim) in enumerate(dense, 1):
        f = out.setdefault(rowid, Fused(rowid, 0.0))
        f.dense_rank, f.dense_similarity = rank, sim
    return out


def rrf(lexical: Sequence[tuple[int, float]], dense: Sequence[tuple[int, float]], *, k: int) -> list[Fused]:
    """Reciprocal rank fusion: each leg votes 1 / (k + rank)."""
    fused = _collect(lexical, dense)
    for f in fused.values():
        f.score = sum(1.0 / (k + r) for r in (f.lexical_rank, f.dense_rank) if r is not None)
    return sorted(fused.values(), key=lambda f: (-f.score, f.rowid))


def blend(
    lexical: Sequence[tuple[int, float]],
    dense: Sequence[tuple[int, float]],
    *,
    dense_weight: float,
    matched_weight: float | None,
    coverage: Mapping[int, float] | None = None,
    scale: tuple[float, float] | None = None,
) -> list[Fused]:
    """Weighted sum of per-query normalised scores.

    Lexical: BM25 over the best BM25 of this query, times the square of the
    chunk's query coverage (the IDF share of query terms it holds), so a "best"
    lexical hit that shares only common words with the query counts for little.
    Dense: cosine similarity as is (clipped at 0); it already has a scale, and
    keeping it unscaled lets a weak dense match stay weak. Without ``coverage``
    the lexical part is BM25 over the best alone.

    The dense weight is :func:`adaptive_weight` when ``matched_weight`` is given. ``scale`` replaces
    this ranking's own best BM25 and best coverage with larger ones that several indexes share.
    """
    fused = _collect(lexical, dense)
    best = max((s for _, s in lexical), default=0.0)
    top = max(coverage.values(), default=0.0) if coverage is not None else 0.0
    if scale is not None:
        best, top = max(best, scale[0]), max(top, scale[1])
    weight = dense_weight
    if matched_weight is not None and coverage is not None:
        weight = adaptive_weight(dense_weight, matched_weight, top)
    for f in fused.values():
        lex = (f.lexical_score or 0.0) / best if best > 0 else 0.0
        if coverage is not None:
            lex *= coverage.get(f.rowid, 0.0) ** 2
        den = max(f.dense_similarity or 0.0, 0.0)
        f.score = weight * den + (1.0 - weight) * lex
    return sorted(fused.values(), key=lambda f: (-f.score, f.rowid))


def adaptive_weight(unmatched: float, matched: float, top_coverage: float) -> float:
    """The dense weight for one query: ``unmatched`` when no lexical candidate holds the query's
    terms, moving linearly to ``matched`` when one holds all of them.

    A chunk that contains every rare term of the query is strong evidence the
    lexical leg found the passage (an identifier, a claim worded like its
    source), so the embedding, weaker on specialised vocabulary, should not
    out-vote it. When no chunk covers the query (a paraphrase, a question in the
    other language) only the dense leg knows anything, and it carries the query.
    """
    c = min(max(top_coverage, 0.0), 1.0)
    return unmatched - (unmatched - matched) * c


def best_of(rankings: Sequence[Sequence[Fused]], *, agreement: float) -> list[Fused]:
    """One ranking from several phrasings of a search: each chunk at its best score over them, plus
    ``agreement`` times the mean of the other phrasings' scores for it (0 where one missed it).

    The rankings must be on one scale (blend: lexical normalised per phrasing and dense cosine on
    the model's scale; RRF: rank votes). The best score leads, so a chunk only one phrasing can find
    (the answer in the other language) is not outvoted by chunks every phrasing half-matches
    (docs/decisions/0011); the agreement term breaks the near-ties that remain in favour of the chunk
    the phrasings agree on, where the best score alone let one phrasing's strong keyword match in the
    query's language win (docs/decisions/0025). A tie keeps the earlier phrasing, the query first.
    Each kept entry records its phrasing, so ``explain`` shows the ranks that gave the score, and the
    part the others added.
    """
    best: dict[int, Fused] = {}
    total: dict[int, float] = {}
    for i, ranked in enumerate(rankings):
        for f in ranked:
            total[f.rowid] = total.get(f.rowid, 0.0) + f.score
            held = best.get(f.rowid)
            if held is None or f.score > held.score:
                f.phrasing = i
                best[f.rowid] = f
    others = max(len(rankings) - 1, 1)
    for rowid, f in best.items():
        f.agreement = agreement * (total[rowid] - f.score) / others
        f.score += f.agreement
    return sorted(best.values(), key=lambda f: (-f.score, f.rowid))


def add_bridge(
    ranked: Sequence[Fused],
    bridged: Sequence[tuple[int, float]],
    *,
    coverage: Mapping[int, float],
    weight: float,
    gated: bool,
) -> list[Fused]:
    """The query's ranking with the bridge's keyword scores added at ``weight``.

    A bridged score is normalised as the blend's lexical part is (BM25 over the best, times the
    square of the coverage of the bridged words), so only a chunk that holds the translations of
    the query's rare words gains much. With ``gated`` (a dense leg ranked the query), it is also
    multiplied by the chunk's dense similarity to the query, and a chunk the dense leg did not rank
    gains nothing: a translated word list is noisy on its own (株 for "share"), and the page about
    the question is the one both it and the query's meaning point at (docs/decisions/0027).
    """
    best = max((s for _, s in bridged), default=0.0)
    if best <= 0 or weight <= 0:
        return list(ranked)
    out = {f.rowid: f for f in ranked}
    for rowid, score in bridged:
        part = weight * (score / best) * coverage.get(rowid, 0.0) ** 2
        f = out.get(rowid)
        if gated:
            part *= max(f.dense_similarity or 0.0, 0.0) if f is not None else 0.0
        if part <= 0:
            continue
        if f is None:
            f = out[rowid] = Fused(rowid, 0.0)
        f.bridge = part
        f.score += part
    return sorted(out.values(), key=lambda f: (-f.score, f.rowid))


def gated_dense(
    candidates: Sequence[tuple[int, tuple[float, ...]]],
    parts: Sequence[VectorPart],
    *,
    query_japanese: bool,
    japanese: Collection[int],
) -> list[tuple[int, float]]:
    """One dense similarity per chunk from several models' cosines, best first.

    Each cosine is put on its model's scale (``(cos - floor) / (1 - floor)``) and the chunk's
    similarity is the mean over the models that may speak for it: all of them for a chunk in the
    query's language, only the cross-language ones for a chunk in the other language. Measured:
    multilingual e5 rates every passage in the query's language above the right passage in the
    other one, so letting it vote there buries cross-language answers; within a language it is the
    better judge of a paraphrase. ``japanese``: the candidates written in Japanese (``text.language``).
    """
    out: list[tuple[int, float]] = []
    for rowid, cosines in candidates:
        same = (rowid in japanese) == query_japanese
        scores = [
            (cos - part.floor) / (1.0 - part.floor)
            for cos, part in zip(cosines, parts, strict=True)
            if same or not part.own_language_only
        ]
        out.append((rowid, sum(scores) / len(scores) if scores else 0.0))
    out.sort(key=lambda item: (-item[1], item[0]))
    return out


def lexical_only(lexical: Sequence[tuple[int, float]]) -> list[Fused]:
    return [Fused(r, s, lexical_rank=i, lexical_score=s) for i, (r, s) in enumerate(lexical, 1)]
