"""What ``[write]`` says: whether agents may write notes, and where.

Off unless asked (``enabled = true`` or ``serve --allow-write``): a server that only reads offers
exactly the tools it offered before. On, writes are held to a few folders (by default one,
``inbox/``), to Markdown and plain text, and to a size; the one write guard (``kbseek.write.guard``)
applies these on every path. This value holds the settings only, checked when the file is read.
Lives in the settings layer beside ``config`` (which lists it in ``SECTIONS``), as ``auth_spec``
does.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbseek.errors import ConfigError

WRITABLE_EXTENSIONS = (".md", ".markdown", ".txt")
"""What a note may be. Office files and PDFs are never written: kbseek reads them through
converters that do not round-trip, so an edit would rewrite the whole file."""
NEVER_WRITTEN = (".docx", ".xlsx", ".pptx", ".pdf", ".doc", ".xls", ".ppt", ".odt", ".ods", ".odp")
MAX_BYTES = 1_000_000
"""The largest note a write may leave: a long design record is under 100 KB."""


@dataclass(frozen=True)
class WriteSpec:
    """The ``[write]`` table. Every check is made here, so a typo fails at start naming the key."""

    enabled: bool = False
    """Whether the server offers the tools that create, edit, move and delete notes. Also
    ``serve --allow-write``."""
    folders: tuple[str, ...] = ("inbox",)
    """The folders, relative to the knowledge-base root, writes may touch (and their subfolders);
    ``"."`` for the whole root. A folder that does not exist yet is created by the first write."""
    extensions: tuple[str, ...] = WRITABLE_EXTENSIONS
    """The extensions a written note may have: Markdown and plain text only."""
    max_bytes: int = MAX_BYTES
    """The largest note a write may leave, in bytes as written."""

    def __post_init__(self) -> None:
        if not self.folders:
            raise ConfigError('[write].folders is empty: name at least one folder, e.g. ["inbox"]')
        for folder in self.folders:
            parts = folder.replace("\\", "/").strip("/").split("/")
            if folder.strip() in (".", ""):
                continue
            if any(p in ("", "..") or p.startswith(".") for p in parts) or ":" in folder:
                raise ConfigError(
                    f"[write].folders: {folder!r} is not a folder under the root (no '..', no hidden "
                    "folder, no absolute path); use e.g. 'inbox' or 'notes/agents', or '.' for the root"
                )
        for extension in self.extensions:
            if not extension.startswith(".") or extension.lower() in NEVER_WRITTEN:
                raise ConfigError(
                    f"[write].extensions: {extension!r} refused; notes are Markdown or text "
                    f"({', '.join(WRITABLE_EXTENSIONS)})"
                )
        if not 1 <= self.max_bytes <= 100_000_000:
            raise ConfigError("[write].max_bytes must be between 1 and 100000000")

    @property
    def root_folders(self) -> tuple[str, ...]:
        """The folders as root-relative POSIX prefixes, ``""`` for the whole root."""
        return tuple("" if f.strip() in (".", "") else f.replace("\\", "/").strip("/") for f in self.folders)
