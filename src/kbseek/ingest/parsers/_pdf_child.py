"""The child process that extracts PDF text: PDF bytes on stdin, one JSON object on stdout.

It runs apart from kbseek so the parent can kill it when a hostile or broken
PDF makes pypdf loop, and so a crash or a memory blow-up takes down only this
process. It is started as a plain script (``python -P _pdf_child.py``) rather
than with ``-m``: it imports nothing from kbseek, which keeps its start-up to
the cost of importing pypdf and makes it work however kbseek itself was put
on ``sys.path``.

Arguments: ``max_pages max_chars cpu_seconds memory_bytes``. The answer is
``{"pages": [...], "total_pages": n, "stopped": null | "pages" | "chars"}``
or ``{"error": code, "detail": text}``; the parent turns errors into
messages.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import warnings
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""C0 controls except tab and newline, the form feed among them (pages are
separated by the parent, with marker lines); carriage returns are turned into
newlines before this runs. The parent cleans further (``pdf.page_text``):
zero-width and symbol-font characters, and runs of blank lines, which would
pass for its page separator."""


def _limit_resources(cpu_seconds: int, memory_bytes: int) -> None:
    """Kernel-enforced backstops, so even an orphaned child cannot run or grow without bound.

    The parent's wall-clock limit is the real one; the CPU limit only matters
    if the parent died and can no longer kill this process. Platforms without
    ``resource`` (Windows) rely on the parent alone.
    """
    try:
        import resource
    except ImportError:
        return
    for kind, soft in ((resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_AS, memory_bytes)):
        try:
            _, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(kind, (soft, hard))
        except (ValueError, OSError):
            continue  # not settable here (macOS refuses RLIMIT_AS); the wall-clock limit still holds


def clean(text: str) -> str:
    """Page text as kbseek serves it: newline line ends, no control characters, valid Unicode.

    A broken ToUnicode map can yield lone surrogates, which cannot be stored
    as UTF-8; they become U+FFFD instead of failing the whole document.
    """
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(" ", text).strip()


def extract(raw: bytes, max_pages: int, max_chars: int) -> dict[str, Any]:
    """The pages' text up to the caps, or the reason there is none."""
    try:
        import pypdf
        from pypdf.errors import DependencyError
    except ImportError:
        return {"error": "missing-pypdf", "detail": ""}
    try:
        reader = pypdf.PdfReader(io.BytesIO(raw))
    except DependencyError:
        # Opening an encrypted file tries the empty password, which may need a
        # crypto library; either way the file is encrypted.
        return {"error": "encrypted", "detail": ""}
    except MemoryError:
        raise
    except Exception as exc:
        if b"/Encrypt" in raw:
            return {"error": "encrypted", "detail": ""}
        return {"error": "unreadable", "detail": f"{type(exc).__name__}: {exc}"}
    if reader.is_encrypted:
        # Even an empty user password means the author restricted the file;
        # kbseek does not second-guess that.
        return {"error": "encrypted", "detail": ""}
    try:
        total = len(reader.pages)
    except MemoryError:
        raise
    except Exception as exc:
        return {"error": "unreadable", "detail": f"page tree: {type(exc).__name__}: {exc}"}
    pages: list[str] = []
    used = 0
    stopped: str | None = "pages" if total > max_pages else None
    failures: list[str] = []
    for number in range(min(total, max_pages)):
        try:
            text = clean(reader.pages[number].extract_text() or "")
        except MemoryError:
            raise
        except Exception as exc:
            # One damaged page should not cost the rest of the document.
            failures.append(f"page {number + 1}: {type(exc).__name__}: {exc}")
            text = ""
        if used + len(text) > max_chars:
            pages.append(text[: max_chars - used].rstrip())
            stopped = "chars"
            break
        used += len(text)
        pages.append(text)
    if failures and len(failures) == len(pages):
        return {"error": "unreadable", "detail": failures[0]}
    return {"pages": pages, "total_pages": total, "stopped": stopped}


def main() -> None:
    max_pages, max_chars, cpu_seconds, memory_bytes = (int(arg) for arg in sys.argv[1:5])
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing pypdf prints may corrupt the answer
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    _limit_resources(cpu_seconds, memory_bytes)
    try:
        answer = extract(sys.stdin.buffer.read(), max_pages, max_chars)
    except MemoryError:
        answer = {"error": "memory", "detail": ""}
    except RecursionError:
        answer = {"error": "unreadable", "detail": "objects nested too deeply"}
    # ASCII JSON: no stdout encoding can mangle it, and lone surrogates cannot occur.
    out.write(json.dumps(answer, ensure_ascii=True))
    out.flush()


if __name__ == "__main__":
    main()
