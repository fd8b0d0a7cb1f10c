"""The child process that extracts text from .docx, .xlsx, .pptx and .html files: bytes on stdin, JSON on stdout.

Like ``_pdf_child.py`` it runs apart from kbseek so the parent can kill it,
and a crash or a memory blow-up takes down only this process; it imports
nothing from kbseek. The libraries do the reading (python-docx, openpyxl,
python-pptx, the standard library's ``html.parser``); this script only walks
what they return into blocks (``converted.py`` describes them).

Before a library sees a file, its bytes are identified (``common.check_package``):
an empty file, an encrypted Office package, an Office 97-2003 file, a PDF or an
HTML page under an Office extension, a package of another kind or a macro-enabled
one is refused with the reason that names it. Then the zip package is checked
against a budget: the sizes its members declare, then the bytes they really
inflate to (``zipfile`` stops a member at its declared size and then fails its
CRC, so a member lying about its size is refused as damaged, never inflated further).
Last, a part whose XML declares an encoding other than UTF-8 or UTF-16 refuses the
file, naming the part (``common.check_xml_encodings``).

Arguments: ``format max_chars max_cells zip_budget cpu_seconds memory_bytes``.
The answer is ``{"blocks": [...], "meta": {...}, "stopped": null | "chars" | "cells"}`` (with
``"strict": true`` for a Strict Open XML package) or ``{"error": code, "detail": text}`` (with
``"found": kind`` when the bytes are another format): the codes are those of ``parsers/unreadable.py``.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

# The readers live in child/extraction/, put on the path here rather than this folder (``-P`` keeps
# it off: markdown.py here would shadow a package of that name).
sys.path.insert(0, str(Path(__file__).with_name("child")))

# Found at run time through the path above; mypy checks the readers as part of kbseek.
from extraction import excel, powerpoint, web, word  # type: ignore[import-not-found]
from extraction.common import (  # type: ignore[import-not-found]
    Out,
    Refused,
    Stop,
    check_markup,
    check_package,
    failure,
)


def _limit_resources(cpu_seconds: int, memory_bytes: int) -> None:
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
            continue


def extract(fmt: str, raw: bytes, max_chars: int, max_cells: int, zip_budget: int) -> dict[str, Any]:
    out = Out(max_chars)
    meta: dict[str, Any] = {}
    strict = False
    try:
        if fmt == "html":
            check_markup(raw)
        else:
            strict = check_package(raw, fmt, zip_budget)
        if fmt == "docx":
            word.read(raw, out, meta)
        elif fmt == "xlsx":
            excel.read(raw, out, meta, max_cells)
        elif fmt == "pptx":
            powerpoint.read(raw, out, meta)
        elif fmt == "html":
            web.read(raw, out, meta)
        else:
            return {"error": "unreadable", "detail": f"unknown format {fmt}"}
    except Stop:
        pass
    except Refused as exc:
        return exc.answer()  # type: ignore[no-any-return]
    except ImportError as exc:
        return {"error": "missing-library", "detail": str(exc)}
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:
        return failure(exc, strict)  # type: ignore[no-any-return]
    safe_meta = {k: v for k, v in meta.items() if isinstance(v, str) and v.strip()}
    answer: dict[str, Any] = {"blocks": out.blocks, "meta": safe_meta, "stopped": out.stopped}
    if strict:
        answer["strict"] = True
    return answer


def main() -> None:
    fmt = sys.argv[1]
    max_chars, max_cells, zip_budget, cpu_seconds, memory_bytes = (int(a) for a in sys.argv[2:7])
    out = sys.stdout
    sys.stdout = sys.stderr
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    _limit_resources(cpu_seconds, memory_bytes)
    try:
        answer = extract(fmt, sys.stdin.buffer.read(), max_chars, max_cells, zip_budget)
    except MemoryError:
        answer = {"error": "memory", "detail": ""}
    except RecursionError:
        answer = {"error": "unreadable", "detail": "elements nested too deeply"}
    # ASCII JSON: no stdout encoding can mangle it; the parent replaces any lone surrogate.
    out.write(json.dumps(answer, ensure_ascii=True))
    out.flush()


if __name__ == "__main__":
    main()
