"""What every extraction reader shares: the block list under its character cap, refusals, the zip check.

This package runs only inside the extraction child (``_extract_child.py``), which puts its folder on
``sys.path``: it imports nothing from kbseek, so a child starts without kbseek's own imports.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from typing import Any

MAX_MEMBERS = 10_000
MAX_DEPTH = 8
"""Tables inside tables (and shape groups) followed at most this deep; deeper text is left out."""


class Stop(Exception):
    """A cap was reached; what was extracted so far is the answer."""


class Refused(Exception):
    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


class Out:
    """Blocks, counted against the character cap."""

    def __init__(self, max_chars: int) -> None:
        self.blocks: list[list[Any]] = []
        self.left = max_chars
        self.stopped: str | None = None

    def _take(self, text: str) -> str:
        if len(text) > self.left:
            text = text[: self.left]
            self.left = 0
            self.stopped = "chars"
            return text
        self.left -= len(text)
        return text

    def add(self, kind: str, *args: Any) -> None:
        if kind == "table":
            rows: list[list[str]] = []
            for row in args[0]:
                cells = [self._take(c) for c in row]
                rows.append(cells)
                if self.stopped:
                    break
            self.blocks.append(["table", rows])
        else:
            *head, text = args
            self.blocks.append([kind, *head, self._take(text)])
        if self.stopped:
            raise Stop


def check_zip(raw: bytes, budget: int) -> None:
    """Refuse a package that is not a zip, or inflates past ``budget`` bytes, before any library reads it."""
    try:
        package = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise Refused(
            "corrupt", f"not a zip package ({exc}); encrypted, damaged or an older binary format?"
        ) from None
    with package:
        members = package.infolist()
        if len(members) > MAX_MEMBERS:
            raise Refused("bomb", f"{len(members)} members in the package, over the limit of {MAX_MEMBERS}")
        declared = sum(m.file_size for m in members)
        if declared > budget:
            raise Refused(
                "bomb", f"its members declare {declared} bytes uncompressed, over the budget of {budget}"
            )
        inflated = 0
        for member in members:
            try:
                with package.open(member) as stream:
                    while chunk := stream.read(1 << 20):
                        inflated += len(chunk)
                        if inflated > budget:
                            raise Refused("bomb", f"its members inflate past the budget of {budget} bytes")
            except Refused:
                raise
            except RuntimeError as exc:  # zipfile: "File ... is encrypted"
                raise Refused("corrupt", f"{member.filename}: {exc}") from None
            except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
                raise Refused("corrupt", f"{member.filename}: {exc}") from None
            except Exception as exc:  # zlib.error and the like
                raise Refused("corrupt", f"{member.filename}: {type(exc).__name__}: {exc}") from None


def when(value: object) -> str | None:
    return value.isoformat() if isinstance(value, (dt.datetime, dt.date)) else None


def core_meta(props: Any) -> dict[str, Any]:
    """Title, keywords and dates from an OPC package's core properties (docx, xlsx, pptx alike)."""
    return {
        "title": getattr(props, "title", None),
        "keywords": getattr(props, "keywords", None),
        "date": when(getattr(props, "created", None)),
        "modified": when(getattr(props, "modified", None)),
    }
