"""Reads that carry each document's hash, on a knowledge base that lets agents write.

An agent edits a note by sending back the hash of the content it read (docs/decisions/0058), so
every read gives it one: a search hit and a fetched passage the hash the index recorded when it
last read the file, a document read the hash of the bytes it just read. An index behind the file
gives an older hash, and the edit is refused as a conflict with the current one: read again, then
edit. With writing off nothing here runs, and every answer is what it was.
"""

from __future__ import annotations

from kbseek.ingest.guard import LoadedDocument
from kbseek.responses import DocumentResponse, FetchResponse, SearchResponse
from kbseek.store.base import Store
from kbseek.write.hashes import shown_hash


def _hashes(store: Store, paths: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in dict.fromkeys(paths):
        row = store.document(path)
        if row is not None:
            found[path] = shown_hash(row.content_hash)
    return found


def search_with_hashes(r: SearchResponse, store: Store) -> SearchResponse:
    known = _hashes(store, [h.path for h in r.hits])
    hits = [h.model_copy(update={"hash": known.get(h.path)}) for h in r.hits]
    return r.model_copy(update={"hits": hits})


def fetch_with_hashes(r: FetchResponse, store: Store) -> FetchResponse:
    known = _hashes(store, [p.path for p in r.passages])
    passages = [p.model_copy(update={"hash": known.get(p.path)}) for p in r.passages]
    return r.model_copy(update={"passages": passages})


def document_with_hash(r: DocumentResponse, doc: LoadedDocument) -> DocumentResponse:
    return r.model_copy(update={"hash": shown_hash(doc.digest) if doc.digest else None})
