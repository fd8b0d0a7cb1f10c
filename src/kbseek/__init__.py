"""kbseek: semantic search over a Markdown knowledge base, served to AI agents over MCP.

As a library::

    from kbseek import KnowledgeBase

    with KnowledgeBase("~/notes") as kb:
        kb.index()
        for hit in kb.search("how do I roll back a release").hits:
            print(hit.path, hit.snippet)

``help(kbseek.KnowledgeBase)`` documents the rest.
"""

from __future__ import annotations

from kbseek.config import Settings
from kbseek.errors import (
    ConfigError,
    DocumentRefused,
    EmbedderUnavailable,
    IndexIncompatible,
    IndexLocked,
    KbError,
)
from kbseek.ingest.indexer import IndexReport
from kbseek.kb import KnowledgeBase

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DocumentRefused",
    "EmbedderUnavailable",
    "IndexIncompatible",
    "IndexLocked",
    "IndexReport",
    "KbError",
    "KnowledgeBase",
    "Settings",
]
