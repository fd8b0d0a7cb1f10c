"""Office files made in tests: saved to bytes, and their zip packages edited member by member."""

from __future__ import annotations

import io
import zipfile


def saved(document: object) -> bytes:
    """A python-docx document, openpyxl workbook or python-pptx deck as the bytes of its file."""
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def rewrite(package: bytes, changes: dict[str, bytes]) -> bytes:
    """The same zip package with some members' bytes replaced, and the members it lacks added."""
    left = dict(changes)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(package)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info.filename, left.pop(info.filename, source.read(info.filename)))
        for name, data in left.items():
            target.writestr(name, data)
    return out.getvalue()
