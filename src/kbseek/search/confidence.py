"""Whether the best hit is too weak to answer from.

An agent that gets *some* hits for every question tends to answer from them.
``low_confidence`` lets it say "the knowledge base does not cover this"
instead. Three signals are combined, because each fails alone: a name the
query mentions that no chunk holds (``text.names``: the question is about
something the notes never mention, however close its other words come), the
dense similarity of the best hit (a paraphrase can match with no shared
words) and how much of the query's weight the best hit covers lexically (an
identifier matches exactly while its vector says little). The calibration is
in docs/decisions/0020.
"""

from __future__ import annotations

from collections.abc import Sequence

# Chosen on examples/golden.yml with the default model (docs/decisions/0003) and checked on the tune
# halves of the development sets (docs/decisions/0020): it is the 4th percentile of the best
# similarity of answerable questions whose best hit covers under half their weight, so it flags few
# of them. Above it the best hits of unanswerable and answerable questions overlap too much for
# similarity to tell them apart.
MIN_SIMILARITY = 0.22
# A hit that holds at least this share of the query's IDF weight matched the words that matter.
MIN_COVERAGE = 0.5


def is_low_confidence(
    *, has_hits: bool, top_similarity: float | None, top_coverage: float, names_absent: bool
) -> bool:
    """``names_absent``: the query names something no chunk holds."""
    if not has_hits or names_absent:
        return True
    if top_coverage >= MIN_COVERAGE:
        return False
    if top_similarity is None:  # lexical only: weak when the best hit matched little of the query
        return True
    return top_similarity < MIN_SIMILARITY


# Where a page stops listing: hits scoring under this share of the best hit's score are the tail a
# person scrolls past; the first FEW_DOCUMENTS documents are listed whatever their scores. Chosen on
# the tune halves of the development sets (benchmarks/page_cut.py): the rule listing fewest documents
# while keeping, for at least 95% of the answerable questions, an expected document the full list of
# 20 held. Keeping more documents did not keep more answers on tune, so FEW_DOCUMENTS is the best one.
# The held-out halves' numbers are in docs/quality.md.
STRONG_SHARE = 0.6
FEW_DOCUMENTS = 1
DOUBTFUL_DOCUMENTS = 2
"""At most this many documents are listed first when even the best hit is weak (``low_confidence``):
the scores of such a search are flat, so a share of the best one lists most of the page. Chosen on
the tune halves as the fewest that keeps as many answers as listing them all (benchmarks/page_cut.py)."""
CLOSE_SHARE = 0.8
"""A hit within this share of the best one reads as strong as it (a display choice, not measured)."""


def confident_count(
    hits: Sequence[tuple[str, float]],
    *,
    low_confidence: bool = False,
    share: float = STRONG_SHARE,
    few: int = FEW_DOCUMENTS,
    doubtful: int | None = DOUBTFUL_DOCUMENTS,
) -> int:
    """How many of the ranked ``hits`` (each its document and score, in rank order) to show before the
    ranking's confidence falls away: through the last hit within ``share`` of the best score, and
    at least through the first hit of the ``few``-th document; with ``low_confidence``, no further
    than the hits of the first ``doubtful`` documents (``None``: no such bound).

    The scores are fused ones (``search.fusion``): they compare within one answer, not across
    searches, so the cut is relative to the best hit. A page that fills itself with twenty passages
    of eighteen notes when one note answers buries that note; an agent reads the scores itself.
    """
    if not hits:
        return 0
    floor = max(score for _, score in hits) * share
    seen: set[str] = set()
    through = 0
    for i, (document, score) in enumerate(hits):
        if len(seen) < few and document not in seen:
            seen.add(document)
            through = i
        if score >= floor:
            through = max(through, i)
    if low_confidence and doubtful is not None:
        documents: list[str] = []
        for i, (document, _) in enumerate(hits[: through + 1]):
            if document not in documents:
                if len(documents) == max(doubtful, 1):
                    return i
                documents.append(document)
    return through + 1


def relevance(score: float, best: float, *, low_confidence: bool) -> str:
    """A hit's relevance as a word a person reads at a glance: ``strong``, ``fair`` or ``weak``.

    Relative to the best hit, because fused scores mean nothing across searches; and every hit is
    ``weak`` when the search's best hit is itself weak (``low_confidence``), so a page does not call
    a hit strong or fair beside "the knowledge base may not cover this".
    """
    ratio = score / best if best > 0 else 0.0
    if low_confidence:
        return "weak"
    if ratio >= CLOSE_SHARE:
        return "strong"
    return "fair" if ratio >= STRONG_SHARE else "weak"
