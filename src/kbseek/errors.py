"""Every error kbseek raises on purpose, in two families that never mix.

A **refusal** is a :class:`KbError`: the request or the setup is wrong, and the message says what
was wrong and what to do next, because the reader is often an agent that can only act on the words
it is given::

    KbError
    ├── InvalidArgument        an argument that cannot be used as given (empty, not a number, a bad date)
    │   ├── BadResourceUri         a kb:// URI that cannot name anything kbseek offers
    │   └── UnknownField           a search's where names a front-matter field no document has
    ├── TopicNotFound          a kb://topic/ URI naming a folder with no servable document
    ├── ConfigError            bad config file, unknown key, bad value, missing knowledge-base folder
    ├── IndexIncompatible      index built by another schema or embedding model
    ├── IndexLocked            another process is writing the same index
    │   └── WrittenElsewhere       a shared index is written from another folder or machine
    ├── IndexReadOnly          a knowledge base opened to read only was asked to index
    ├── StoreUnavailable       the index database cannot be reached or its connection was lost
    ├── EmbedderUnavailable    the embedding model cannot be loaded or reached
    ├── ServiceError           a background service cannot be written, found or removed as asked
    └── DocumentRefused        the one document guard said no (D5)
        ├── PathOutsideRoot        traversal, or a path that resolves outside the root
        ├── DocumentNotFound       nothing at that path (or a name no file can have: too long …)
        ├── NotARegularFile        a directory, device, socket …
        ├── LinkRefused            a symlink, or a file with more than one hard link
        ├── UnsupportedExtension   no active parser opens that extension
        ├── DocumentTooLarge       over the size cap
        ├── NotText                not decodable as the parser's text
        └── NotServable            a resource read of a path the server does not offer (D3)
    WriteRefused           a write to a note refused, nothing written; ``code`` says which case:
        ├── NoteExists             ``exists``: creating over a file that is there
        ├── NoteConflict           ``conflict``: the note changed since the hash the caller sent
        ├── WriteNotAllowed        ``not_allowed``: outside the folders or extensions writes may touch
        ├── NoteTooLarge           ``too_large``: over ``[write] max_bytes``
        ├── NoteNotFound           ``not_found``: no note at that path (edit, move, delete, restore)
        └── WritesReadOnly         ``read_only``: this server does not write (off, or a reader)

A **bug** is anything else: :class:`KbBug` when kbseek notices it broke one of its own rules, and
every exception that is not a ``KbError``. A bug is never the caller's fault, so no surface reports
it as a refusal: the caller is told it is a bug in kbseek, and the traceback goes to the log.

How each surface (MCP tools, resources and prompts, the web API, the CLI) answers each class is
one table, :data:`kbseek.server.errors.TABLE`; this module holds no protocol codes.
"""

from __future__ import annotations


class KbError(Exception):
    """Base of every refusal: the request or the setup is wrong, and the message says how to fix it."""


class InvalidArgument(KbError, ValueError):
    """An argument a caller passed cannot be used as given; the message names it and what it takes."""


class BadResourceUri(InvalidArgument):
    """A ``kb://`` URI that cannot name anything kbseek offers; the message says why."""


class UnknownField(InvalidArgument):
    """A search's ``where`` names a front-matter field no document has (likely misspelt); the message
    lists the fields there are. Several collections searched together skip a collection that lacks
    the field instead (``Library.search``), and refuse only when none has it."""


class TopicNotFound(KbError, LookupError):
    """A ``kb://topic/`` URI naming a folder that holds no servable document."""


class ConfigError(KbError, ValueError):
    """The configuration (file, flags or environment) is invalid."""


class IndexIncompatible(KbError):
    """The index on disk was written by an incompatible schema or embedding model."""


class IndexLocked(KbError):
    """Another kbseek process holds the writer lock on this index."""


class WrittenElsewhere(IndexLocked):
    """A knowledge base in a shared store is written from another folder (or machine) than this
    writer's: indexing here would replace its documents with this folder's, so it is refused unless
    the caller takes the knowledge base over on purpose (``--take-over``)."""


class IndexReadOnly(KbError):
    """A knowledge base opened to read only (``kbseek status``, ``kbseek get``) was asked to write its index."""


class StoreUnavailable(KbError):
    """The index database (PostgreSQL) cannot be reached, or the connection broke mid-request.

    Not a :class:`ConfigError`: the setup was right when kbseek started and will be again when the
    database is back, which kbseek notices by itself; the message says so, so nobody restarts it.
    """


class EmbedderUnavailable(KbError):
    """The configured embedding model cannot be loaded or reached."""


class ServiceError(KbError):
    """A service cannot be written, found or removed as asked; the message says what to do instead."""


class DocumentRefused(KbError):
    """The document guard refused to load a path; ``path`` is the argument as given."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class PathOutsideRoot(DocumentRefused, ValueError):
    """The path escapes the knowledge-base root (``..``, or a link that points out)."""


class DocumentNotFound(DocumentRefused, LookupError):
    """No file exists at the path, or none could: a name longer than the file system allows, or one
    it refuses; the message says which."""


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


class WriteRefused(KbError):
    """A write to a note was refused and nothing was written. ``code`` is the case as an agent
    reads it (``exists``, ``conflict``, ``not_allowed``, ``too_large``, ``not_found``,
    ``read_only``); the message says what to do. ``current_hash`` is the note's hash now, when
    there is a note, so a caller can read it again and retry."""

    code = "refused"

    def __init__(self, message: str, path: str, *, current_hash: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.current_hash = current_hash


class NoteExists(WriteRefused):
    """Creating a note where a file is: never replaced unless asked, with the current hash."""

    code = "exists"


class NoteConflict(WriteRefused):
    """The note's content is not the one the caller's hash names: someone changed it since."""

    code = "conflict"


class WriteNotAllowed(WriteRefused):
    """The path is outside what writes may touch: a folder not allowed, an extension, a link, a
    hidden or ignored folder, the index, or a name no note may have."""

    code = "not_allowed"


class NoteTooLarge(WriteRefused):
    """The note would be larger than ``[write] max_bytes``."""

    code = "too_large"


class NoteNotFound(WriteRefused, LookupError):
    """No note at the path to edit, move, delete or restore."""

    code = "not_found"


class WritesReadOnly(WriteRefused):
    """This server does not write: writing is off, or it is a reader of a shared index."""

    code = "read_only"


class KbBug(Exception):
    """kbseek broke one of its own rules: a bug to report, never a refusal of the caller's input.

    Deliberately not a :class:`KbError`, so no ``except KbError`` (which turns a refusal into a
    message for the caller) can swallow it. Any other exception escaping kbseek is a bug too;
    this class only lets kbseek say so where it notices.
    """
