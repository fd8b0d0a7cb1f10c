"""The PostgreSQL store's lexical leg: FTS5's BM25 in SQL, bounded as the SQLite store bounds it.

A query's score is FTS5's ``bm25()`` computed over the postings table (docs/decisions/0030), so a
knowledge base ranks alike on both backends. Its cost is kept in proportion to the answer rather than
the collection (docs/decisions/0033):

- each term's IDF, and how common it is, come from ``vocabulary`` (one index lookup per term),
  never from counting its posting list;
- a query whose terms hold more than :data:`lexical_bound.FULL_QUERY_POSTINGS` postings takes its
  candidates from the chunks holding its rarest terms, chosen by the SQLite store's own rule
  (:func:`lexical_bound.rare_terms`, its budget and counts), and scores exactly those chunks on the
  query's other terms by index lookups of (term, chunk); when that yields fewer than ``limit``
  chunks, the full query runs, as in SQLite (docs/decisions/0016).

The constants are read from the modules that define them at each call, so one setting (or one
patch in a test) moves both backends alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbseek.store import lexical_bound
from kbseek.store.conventions import BM25_WEIGHTS
from kbseek.store.postgres.pool import Conn

__all__ = ["BM25_B", "BM25_K1", "candidates", "document_frequencies"]

BM25_K1 = 1.2
BM25_B = 0.75
"""FTS5's constants for ``bm25()``, so a chunk scores the same on both backends."""

# The collection statistics, and each distinct query term with how often the query gives it and its
# IDF: ln((N − n + 0.5) / (n + 0.5)), clamped to 1e-6 where it would be zero or less, as FTS5 does.
# A term the vocabulary lacks is held by no chunk and drops out. Both CTEs are MATERIALIZED and the
# postings are read per term behind OFFSET 0, so the plan is index lookups per term whether or not
# the tables have statistics yet: inlined, PostgreSQL ran per-term work once per posting, and a new
# index without statistics was read whole (docs/decisions/0030).
_WEIGHTS = """
WITH s AS MATERIALIZED (
    SELECT chunks::float8 AS n, terms::float8 / nullif(chunks, 0)::float8 AS avgdl FROM lexical_stats
), w AS MATERIALIZED (
    SELECT q.term, q.times,
           CASE WHEN ln((s.n - v.chunks + 0.5) / (v.chunks + 0.5)) <= 0 THEN 1e-6
                ELSE ln((s.n - v.chunks + 0.5) / (v.chunks + 0.5)) END AS idf
    FROM (SELECT term, count(*)::float8 AS times FROM unnest(%(terms)s::text[]) AS term GROUP BY term) q
    CROSS JOIN s
    JOIN vocabulary v ON v.term = q.term
)"""

# The sum over the query's terms of FTS5's per-term score: the weighted frequency (heading 2, body 1)
# saturated by k1 and normalised by the chunk's length against the average; a term given twice
# counts twice, as FTS5 scores each phrase.
_SCORE = """
SELECT p.chunk, sum(w.times * (w.idf * (
           ((%(wh)s * p.tf_heading + %(wb)s * p.tf_body) * (%(k1)s + 1.0))
           / ((%(wh)s * p.tf_heading + %(wb)s * p.tf_body)
              + %(k1)s * (1 - %(b)s + %(b)s * p.chunk_terms::float8 / s.avgdl))
       ))) AS score
FROM w CROSS JOIN s"""

FULL_QUERY = (
    _WEIGHTS
    + _SCORE
    + """
CROSS JOIN LATERAL (SELECT * FROM postings p WHERE p.term = w.term OFFSET 0) p
{join}
GROUP BY p.chunk ORDER BY score DESC, p.chunk LIMIT %(limit)s"""
)
"""Every posting of every query term scored: exact, and what a query of rare terms costs anyway."""

FILTER_JOIN = "JOIN chunks c ON c.id = p.chunk JOIN documents d ON d.id = c.document_id"

AMONG_QUERY = (
    _WEIGHTS
    + """, among AS MATERIALIZED (
    SELECT DISTINCT p.chunk FROM unnest(%(rare)s::text[]) AS r(term)
    CROSS JOIN LATERAL (SELECT p.chunk FROM postings p WHERE p.term = r.term OFFSET 0) p
    {join}
)"""
    + _SCORE
    + """
CROSS JOIN LATERAL (
    SELECT * FROM postings p
    WHERE p.term = w.term AND p.chunk = ANY(ARRAY(SELECT chunk FROM among ORDER BY chunk)) OFFSET 0
) p
GROUP BY p.chunk ORDER BY score DESC, p.chunk LIMIT %(limit)s"""
)
"""The chunks holding a rare term (and passing the filters), scored on the query's terms.

The candidates are read from the rare terms' postings alone; every scored term is then looked up in
the postings' (term, chunk) key for those chunks only, one ordered pass of the key per term, so a
common term costs the index pages its candidates sit on, not its posting list."""

_COUNTS = (
    "SELECT term, chunks FROM vocabulary WHERE term = ANY(%s::text[])"
    " UNION ALL SELECT NULL, chunks FROM lexical_stats"
)


def candidates(
    conn: Conn,
    terms: Sequence[str],
    *,
    limit: int,
    filters: Sequence[str] = (),
    filter_params: Mapping[str, Any] | None = None,
) -> list[tuple[int, float]]:
    """At most ``limit`` (chunk rowid, BM25) best first, ties by rowid; ``limit < 0``: every one.

    ``terms`` are analyzed terms without NUL; ``filters`` are SQL conditions on ``d`` (documents),
    AND-ed, whose parameters are ``filter_params``. Two statements at most, three when the bounded
    query falls back: the counts, then the bounded or the full query, each on its own snapshot; the
    counts only choose which terms bound the query, and the score is read in one statement.
    """
    if not terms:
        return []
    params: dict[str, Any] = {
        **(filter_params or {}), "terms": list(terms), "wh": BM25_WEIGHTS[0], "wb": BM25_WEIGHTS[1],
        "k1": BM25_K1, "b": BM25_B, "limit": None if limit < 0 else limit,
    }  # fmt: skip
    join = (FILTER_JOIN + " WHERE " + " AND ".join(filters)) if filters else ""
    budget = lexical_bound.LEXICAL_POSTINGS_BUDGET
    if budget is not None:
        df, total = _counts(conn, terms)
        rare = lexical_bound.rare_terms(capped_counts(terms, df, budget), budget, least=limit)
        if rare is not None:
            rows = _run(
                conn,
                AMONG_QUERY.format(join=join),
                {**params, "rare": list(rare), "terms": weighty(terms, rare, df, total)},
            )
            if len(rows) >= limit:
                return rows
            # Fewer than ``limit`` chunks hold a rare term: the full query's tail is made of chunks
            # holding only common ones, which the bounded query cannot rank. Run it whole.
    return _run(conn, FULL_QUERY.format(join=join), params)


def capped_counts(terms: Sequence[str], df: Mapping[str, int], budget: int) -> dict[str, int]:
    """Each distinct term's count of chunks as the SQLite store counts it for :func:`lexical_bound.rare_terms`.

    SQLite stops counting a term at what is left of :data:`lexical_bound.FULL_QUERY_POSTINGS` (never
    below ``budget + 1``), so that a common term costs no more than the cap
    (``SqliteStore._postings``). Capping the exact counts the same way makes both backends take the
    same rare terms, ties among capped terms included.
    """
    out: dict[str, int] = {}
    left = lexical_bound.FULL_QUERY_POSTINGS + 1
    for term in dict.fromkeys(terms):
        out[term] = min(df.get(term, 0), max(left, budget + 1))
        left -= out[term]
    return out


def weighty(terms: Sequence[str], rare: Sequence[str], df: Mapping[str, int], total: int) -> list[str]:
    """The terms a bounded query scores with, repeats kept: all but those most chunks hold.

    The SQLite store's rule (``SqliteStore._weighty``, ``NEGLIGIBLE_SHARE``): a term held by half
    the chunks or more has an IDF of 1e-6, so it moves no score by more than about 2e-6, and
    leaving it out keeps the two backends' scores equal. Here it also spares the lookups of the
    commonest terms in the candidates' postings.
    """
    share = lexical_bound.NEGLIGIBLE_SHARE
    if share >= 1.0:
        return list(terms)
    keep = set(rare)
    return [t for t in terms if t in keep or df.get(t, 0) < share * total]


def document_frequencies(conn: Conn, terms: Sequence[str]) -> dict[str, int]:
    """How many chunks hold each term, from the vocabulary: exact and current, one lookup per term."""
    wanted = sorted({t for t in terms if "\x00" not in t})
    if not wanted:
        return {}
    rows = conn.execute("SELECT term, chunks FROM vocabulary WHERE term = ANY(%s::text[])", (wanted,))
    found = {str(r[0]): int(r[1]) for r in rows}
    return {t: found[t] for t in terms if t in found}


def _counts(conn: Conn, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    """The query's terms' counts of chunks, and the number of chunks, in one statement."""
    df: dict[str, int] = {}
    total = 0
    for term, chunks in conn.execute(_COUNTS, (sorted(set(terms)),)):
        if term is None:
            total = int(chunks)
        else:
            df[str(term)] = int(chunks)
    return df, total


def _run(conn: Conn, query: str, params: Mapping[str, Any]) -> list[tuple[int, float]]:
    return [(int(r[0]), float(r[1])) for r in conn.execute(query, params)]
