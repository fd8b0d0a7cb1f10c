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
