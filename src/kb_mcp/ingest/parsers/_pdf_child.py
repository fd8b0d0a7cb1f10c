"""The child process that extracts PDF text: PDF bytes on stdin, JSON on stdout.

Kept apart so the parent can kill it on a time limit without harming itself.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings


def main() -> None:
    max_pages, max_chars = int(sys.argv[1]), int(sys.argv[2])
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    try:
        import io

        import pypdf
    except ImportError:
        print(json.dumps({"error": "missing-pypdf"}))
        return
    try:
        reader = pypdf.PdfReader(io.BytesIO(sys.stdin.buffer.read()))
        if reader.is_encrypted:
            print(json.dumps({"error": "encrypted PDF: kb-mcp does not index password-protected files"}))
            return
        pages: list[str] = []
        total = 0
        for page in reader.pages[:max_pages]:
            text = (page.extract_text() or "").replace("\f", "\n")
            text = text[: max(0, max_chars - total)]
            total += len(text)
            pages.append(text)
            if total >= max_chars:
                break
    except Exception as exc:
        print(json.dumps({"error": f"not a readable PDF: {type(exc).__name__}: {exc}"[:300]}))
        return
    print(json.dumps({"pages": pages}, ensure_ascii=False))


if __name__ == "__main__":
    main()
