"""What every store writes beside a document for the filters: its date and its front-matter fields.

Both stores write the same rows from the same ``DocumentInput``, so this is decided once, here, and
each writer only inserts what it is given (``sqlite_writer.py``, ``postgres_writer.py``).
"""

from __future__ import annotations

from kbseek.dates import DocumentDate, document_date
from kbseek.filters import field_rows
from kbseek.store.records import DocumentInput


def document_facts(document: DocumentInput) -> tuple[DocumentDate, list[tuple[str, str]]]:
    """The document's date (as ingest read it, else from the default fields) and its field rows."""
    dated = document.dated or document_date(document.frontmatter, document.mtime_ns)
    return dated, field_rows(document.frontmatter)
