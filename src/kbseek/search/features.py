"""What a learned ranking reads about each candidate document: signals the legs and the fusion already have.

A search's fused ranking (``search.fusion``) is a few hand-set rules over a few numbers. The
learned ranking (``search.ranker``) reads the same numbers and more, per candidate chunk, per
document and per query, and weighs them as the development collections say. Every feature here is
either something the pipeline computed already (the legs' ranks and scores, coverage, the bridge's
and the other phrasings' parts) or cheap to read off the candidate rows it has already fetched
(title words, link density, length): the learned stage must not cost a search another query.

The unit is the document: an agent triages by document (``search.diversity``), and the numbers the
ranking is judged by count the first document that answers. A document is described by its best
fused chunk and by what its other candidate chunks add. The feature order is part of a trained model's file (``search/ranker.json`` names them), so a
feature is added at the end and a model trained without it is refused, not misread.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kbseek.search.fusion import Fused
from kbseek.store.records import ChunkRow
from kbseek.text.analyzer import terms
from kbseek.text.language import is_japanese

FEATURES: tuple[str, ...] = (
    # the candidate chunk, as the legs and the fusion saw it
    "fused",  # the hand-set blend's score (bridge and agreement included)
    "fused_share",  # that score over the search's best
    "lexical",  # BM25 over the best BM25 of the phrasing that scored it
    "coverage",  # the IDF share of that phrasing's terms the chunk holds
    "dense",  # the dense leg's similarity on the model's scale (0: not found)
    "lexical_rr",  # 1 / rank in the lexical leg (0: not found)
    "dense_rr",  # 1 / rank in the dense leg
    "both_legs",  # both legs found it
    "bridge",  # the bilingual bridge's part of the fused score
    "agreement",  # the other phrasings' part of the fused score
    "via_also",  # an alternative phrasing, not the query, gave its best score
    "other_language",  # written in the other language than the query
    "other_language_dense",  # other_language × dense
    "title_terms",  # share of the phrasing's terms in the title and heading path
    "heading_depth",  # headings above the chunk, below the title (0: the document's opening)
    "links",  # Markdown links per 100 characters (a hub: index, glossary, overview)
    "list_lines",  # share of lines that are list items
    "length",  # log of the chunk's characters
    # the candidate's document among this search's candidates
    "document_chunks",  # log(1 + candidates from the same document)
    "document_lexical",  # the best "lexical" among them
    "document_dense",  # the best "dense" among them
    "document_coverage",  # the best "coverage" among them
    "document_title_terms",  # the best "title_terms" among them
    "document_mass",  # the sum of their "fused_share"
    # the query, and how its legs agree (they matter through the other features)
    "query_japanese",
    "query_terms",  # log(1 + the query's terms)
    "top_coverage",  # the best coverage any candidate has for the query
    "best_similarity",  # the dense leg's best similarity for the query
    "legs_agree",  # the two legs' best chunks are in one document
    "lexical_confident",  # lexical × top_coverage: BM25 counts when some chunk holds the query
    "dense_uncovered",  # dense × (1 − top_coverage): the embedding counts when none does
    "japanese_lexical",  # query_japanese × document_lexical: Japanese keywords are bigrams, often noise
    "japanese_dense",  # query_japanese × document_dense
    "japanese_links",  # query_japanese × links: the hub pages of Japanese documentation
)

_LINK = re.compile(r"\]\(|\[\[")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+\.)\s", re.MULTILINE)


@dataclass(frozen=True)
class QueryView:
    """What the features need from the search as a whole, gathered once per search by the pipeline."""

    japanese: bool
    terms: tuple[tuple[str, ...], ...]
    """Per phrasing (the query first), its analyzed terms."""
    best_lexical: tuple[float, ...]
    """Per phrasing, the best BM25 of its lexical leg (0: it found nothing)."""
    coverage: tuple[Mapping[int, float], ...]
    """Per phrasing, the coverage the fusion read for its lexical candidates."""
    top_coverage: float
    """The query's own best coverage."""
    best_similarity: float | None
    """The query's own best dense similarity; ``None`` without a dense leg."""
    legs_agree: bool


@functools.lru_cache(maxsize=8192)
def _heading_terms(headings: tuple[str, ...]) -> frozenset[str]:
    """A chunk's heading path (the title first) as terms; cached, since a document's chunks share most."""
    return frozenset(terms(" \n".join(headings)))


def matrix(
    candidates: Sequence[Fused],
    rows: Mapping[int, ChunkRow],
    view: QueryView,
    japanese: Mapping[int, bool],
) -> tuple[list[int], np.ndarray]:
    """The candidates' documents in the order of their best fused chunk, and one row of
    :data:`FEATURES` per document. ``candidates`` (best first) must all be in ``rows``.

    ``japanese``: the language verdicts the dense gate already made, reused; the others are made here.
    """
    documents: list[int] = []
    chunks: dict[int, list[np.ndarray]] = {}
    top = max(candidates[0].score, 1e-9) if candidates else 1.0
    for f in candidates:
        doc = rows[f.rowid].document_id
        if doc not in chunks:
            documents.append(doc)
            chunks[doc] = []
        chunks[doc].append(_chunk(f, rows[f.rowid], view, japanese, top))
    out = np.zeros((len(documents), len(FEATURES)), dtype=np.float64)
    for i, doc in enumerate(documents):
        own = np.array(chunks[doc])
        out[i, :_CHUNK] = own[0]
        out[i, _CHUNK:_QUERY] = (
            math.log1p(len(own)), own[:, _LEXICAL].max(), own[:, _DENSE].max(), own[:, _COVERAGE].max(),
            own[:, _TITLE].max(), own[:, _SHARE].sum(),
        )  # fmt: skip
    if documents:
        query = _query(view)
        out[:, _QUERY : _QUERY + len(query)] = query
        asked_in_japanese = float(view.japanese)
        out[:, _AFTER:] = np.column_stack((
            out[:, _LEXICAL] * view.top_coverage, out[:, _DENSE] * (1.0 - view.top_coverage),
            asked_in_japanese * out[:, _DOC_LEXICAL], asked_in_japanese * out[:, _DOC_DENSE],
            asked_in_japanese * out[:, _LINKS],
        ))  # fmt: skip
    return documents, out


def _query(view: QueryView) -> tuple[float, ...]:
    similarity = view.best_similarity or 0.0
    return (
        float(view.japanese), math.log1p(len(view.terms[0])), view.top_coverage, similarity,
        float(view.legs_agree),
    )  # fmt: skip


def _chunk(f: Fused, row: ChunkRow, view: QueryView, japanese: Mapping[int, bool], top: float) -> np.ndarray:
    """The chunk's own features: :data:`FEATURES` up to ``document_chunks``."""
    text = row.text
    phrasing = min(f.phrasing, len(view.terms) - 1)
    best = view.best_lexical[phrasing]
    lexical = (f.lexical_score or 0.0) / best if best > 0 and f.lexical_score else 0.0
    dense = max(f.dense_similarity or 0.0, 0.0)
    written_japanese = japanese.get(f.rowid)
    if written_japanese is None:
        written_japanese = is_japanese(text)
    other = float(written_japanese != view.japanese)
    wanted = view.terms[phrasing]
    held = _heading_terms(row.heading_path or (row.title,))
    title_terms = sum(1 for t in wanted if t in held) / len(wanted) if wanted else 0.0
    lines = text.count("\n") + 1
    return np.array((
        f.score,
        f.score / top,
        lexical,
        view.coverage[phrasing].get(f.rowid, 0.0),
        dense,
        1.0 / f.lexical_rank if f.lexical_rank else 0.0,
        1.0 / f.dense_rank if f.dense_rank else 0.0,
        float(bool(f.lexical_rank) and bool(f.dense_rank)),
        f.bridge,
        f.agreement,
        float(f.phrasing > 0),
        other,
        other * dense,
        title_terms,
        float(max(len(row.heading_path) - 1, 0)),
        min(100.0 * len(_LINK.findall(text)) / max(len(text), 1), 5.0),
        len(_LIST.findall(text)) / lines,
        math.log1p(len(text)),
    ))  # fmt: skip


_CHUNK = FEATURES.index("document_chunks")
_QUERY = FEATURES.index("query_japanese")
_LEXICAL, _DENSE, _COVERAGE = FEATURES.index("lexical"), FEATURES.index("dense"), FEATURES.index("coverage")
_TITLE, _SHARE, _LINKS = FEATURES.index("title_terms"), FEATURES.index("fused_share"), FEATURES.index("links")
_DOC_LEXICAL, _DOC_DENSE = FEATURES.index("document_lexical"), FEATURES.index("document_dense")
_AFTER = FEATURES.index("lexical_confident")
"""The interactions, filled in from the other columns."""
