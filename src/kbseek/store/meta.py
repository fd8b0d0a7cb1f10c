"""The meta table both stores keep alike: its keys, how its rows read as ``records.IndexMeta``, and the
rows a finished pass or a new generation of vectors writes.

Each store keeps the rows in its own table; what they say is decided here once, so a reader of
either store sees the same facts.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kbseek.store.records import EmbeddingRecord, IndexMeta

# The meta table's keys. Only the store reads or writes them; everyone else sees ``records.IndexMeta``.
META_SCHEMA_VERSION = "schema_version"
META_LAST_PASS_AT = "last_pass_at"
META_PARSE_VERSION = "parse_version"
META_DATE_FIELDS = "date_fields"
META_CHUNKING = "chunking"
META_PASSES = "passes"
META_LISTING_PASS = "listing_pass"
META_EMBED_MODEL = "embed_model"
META_EMBED_DIM = "embed_dim"
META_EMBED_SCHEME = "embed_scheme"
META_EMBED_SPEC = "embed_spec"
META_EMBEDDING = (META_EMBED_MODEL, META_EMBED_DIM, META_EMBED_SCHEME, META_EMBED_SPEC)
NEXT_PREFIX = "next_"
"""The next generation's record is kept under the same keys with this prefix (``next_embed_model`` …)."""
META_NEXT_EMBEDDING = tuple(NEXT_PREFIX + key for key in META_EMBEDDING)


def updated_in_place(version: int, *, current: int, added: Collection[int]) -> bool:
    """Whether an index of schema ``version`` is brought to ``current`` by creating tables alone:
    every version after it is in ``added`` (0: tables of no known version, never)."""
    return 0 < version < current and all(v in added for v in range(version + 1, current + 1))


def index_meta(raw: dict[str, str]) -> IndexMeta:
    """The meta table's strings as typed facts; a value that does not parse counts as never recorded."""
    return IndexMeta(
        last_pass_at=_float_or_none(raw.get(META_LAST_PASS_AT)),
        parse_version=_int_or_none(raw.get(META_PARSE_VERSION)),
        embedding=_embedding_record(raw, ""),
        passes=_int_or_none(raw.get(META_PASSES)) or 0,
        listing_pass=_int_or_none(raw.get(META_LISTING_PASS)) or 0,
        next_embedding=_embedding_record(raw, NEXT_PREFIX),
        date_fields=tuple(raw[META_DATE_FIELDS].split("\n")) if raw.get(META_DATE_FIELDS) else None,
        chunking=raw.get(META_CHUNKING) or None,
    )


def _embedding_record(raw: dict[str, str], prefix: str) -> EmbeddingRecord | None:
    model = raw.get(prefix + META_EMBED_MODEL)
    if model is None:
        return None
    return EmbeddingRecord(
        model, _int_or_none(raw.get(prefix + META_EMBED_DIM)), raw.get(prefix + META_EMBED_SCHEME),
        raw.get(prefix + META_EMBED_SPEC),
    )  # fmt: skip


def pass_meta(
    *, finished_at: float, parse_version: int, passes_before: str | None, listing_changed: bool,
    date_fields: Sequence[str] | None = None, chunking: str | None = None,
) -> dict[str, str | None]:  # fmt: skip
    """The meta rows that record a finished pass, as :func:`index_meta` reads them back.

    ``passes_before`` is the counter's row as the writer's transaction reads it: transactions are
    serialised per index, so no other pass counts between that read and this write.
    """
    passes = (_int_or_none(passes_before) or 0) + 1
    rows: dict[str, str | None] = {
        META_LAST_PASS_AT: repr(finished_at),
        META_PARSE_VERSION: str(parse_version),
        META_PASSES: str(passes),
    }
    if listing_changed:
        rows[META_LISTING_PASS] = str(passes)
    if date_fields is not None:
        rows[META_DATE_FIELDS] = "\n".join(date_fields)
    if chunking is not None:
        rows[META_CHUNKING] = chunking
    return rows


def embedding_meta(embedding: EmbeddingRecord, *, prefix: str = "") -> dict[str, str | None]:
    """The meta rows that record what made the vectors (with :data:`NEXT_PREFIX`: the next
    generation's); ``None`` removes a row (read back as unknown)."""
    return {
        prefix + META_EMBED_MODEL: embedding.model,
        prefix + META_EMBED_DIM: None if embedding.dim is None else str(embedding.dim),
        prefix + META_EMBED_SCHEME: embedding.scheme,
        prefix + META_EMBED_SPEC: embedding.spec,
    }


def same_generation(old: EmbeddingRecord | None, new: EmbeddingRecord) -> bool:
    """Whether a next generation recorded as ``old`` is the one ``new`` starts: its vectors are kept."""
    return old is not None and (old.model, old.scheme) == (new.model, new.scheme)


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _float_or_none(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
