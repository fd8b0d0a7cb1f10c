"""Every error kbseek raises on purpose.

::

    KbError
    ├── ConfigError            bad config file, unknown key, bad value
    ├── IndexIncompatible      index built by another schema or embedding model
    ├── IndexLocked            another process is writing the same index
    ├── EmbedderUnavailable    the embedding model cannot be loaded or reached
    └── DocumentRefused        the one document guard said no (D5)
        ├── PathOutsideRoot        traversal, or a path that resolves outside the root
        ├── DocumentNotFound       nothing at that path
        ├── NotARegularFile        a directory, device, socket …
        ├── LinkRefused            a symlink, or a file with more than one hard link
        ├── UnsupportedExtension   no active parser opens that extension
        ├── DocumentTooLarge       over the size cap
        ├── NotText                not decodable as the parser's text
        └── NotServable            a resource read of a path the server does not offer (D3)

Messages say what was wrong and what to do next, because the reader is often
an agent that can only act on the words it is given.
"""

from __future__ import annotations


class KbError(Exception):
    """Base of every error kbseek raises deliberately."""


class ConfigError(KbError, ValueError):
    """The configuration (file, flags or environment) is invalid."""


class IndexIncompatible(KbError):
    """The index on disk was written by an incompatible schema or embedding model."""


class IndexLocked(KbError):
    """Another kbseek process holds the writer lock on this index."""


class EmbedderUnavailable(KbError):
    """The configured embedding model cannot be loaded or reached."""


class DocumentRefused(KbError):
    """The document guard refused to load a path; ``path`` is the argument as given."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class PathOutsideRoot(DocumentRefused, ValueError):
    """The path escapes the knowledge-base root (``..``, or a link that points out)."""


class DocumentNotFound(DocumentRefused, LookupError):
    """No file exists at the path."""


class NotARegularFile(DocumentRefused):
    """The path names a directory or special file."""


class LinkRefused(DocumentRefused):
    """The path is a symlink or a hard-linked file; links could expose files outside the root."""


class UnsupportedExtension(DocumentRefused):
    """No active parser opens this file's extension."""


class DocumentTooLarge(DocumentRefused):
    """The file exceeds the read size cap."""


class NotText(DocumentRefused):
    """The file is not valid text for its parser (for example not UTF-8)."""


class NotServable(DocumentRefused):
    """A resource read of a document outside the servable set (not indexed, format disabled, over the cap)."""
