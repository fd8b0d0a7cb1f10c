"""Whether the best hit is too weak to answer from.

An agent that gets *some* hits for every question tends to answer from them.
``low_confidence`` lets it say "the knowledge base does not cover this"
instead. Two signals are combined, because each fails alone: the dense
similarity of the best hit (a paraphrase can match with no shared words) and
how much of the query's weight the best hit covers lexically (an identifier
matches exactly while its vector says little).
"""

from __future__ import annotations

# Tuned on examples/golden.yml with the default model (see docs/decisions/0003):
# below this cosine similarity the best hit of an unanswerable query and of a
# real paraphrase overlap, so similarity alone only decides at the low end.
MIN_SIMILARITY = 0.22
# A hit that holds at least this share of the query's IDF weight matched the words that matter.
MIN_COVERAGE = 0.5


def is_low_confidence(*, has_hits: bool, top_similarity: float | None, top_coverage: float) -> bool:
    if not has_hits:
        return True
    if top_coverage >= MIN_COVERAGE:
        return False
    if top_similarity is None:  # lexical only: weak when the best hit matched little of the query
        return True
    return top_similarity < MIN_SIMILARITY
