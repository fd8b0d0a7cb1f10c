"""Compare the libraries that could read .docx, .xlsx, .pptx and .html for kbseek (decision 0034).

For each candidate it reports the time to extract the text of one file, the peak resident memory of a
process that does only that, whether known words and headings came through, the installed size of the
library with everything it pulls in, and its licence. The office files are written here with the
libraries themselves (English and Japanese text, headings, a table, speaker notes, core properties);
HTML pages are real ones when ``--html`` names a folder of them, else one written here with a
navigation bar, scripts and styles around the article.

    python -m venv /tmp/fmt && /tmp/fmt/bin/pip install python-docx==1.2.0 openpyxl==3.1.5 \\
        python-pptx==1.0.2 python-calamine==0.9.1 beautifulsoup4==4.15.0 selectolax==1.0.2 \\
        docx2python==3.7.1 mammoth==1.13.0
    /tmp/fmt/bin/python benchmarks/formats.py [--html DIR] [--rows 50000]

It imports nothing from kbseek, so it runs in a bare environment holding only the candidates; but
``--hostile CASE``, which runs kbseek's own parser on one hostile file and prints the peak memory of
its extraction child::

    for c in million-cells zip-bomb-at-budget nested-html; do python benchmarks/formats.py --hostile $c; done

Each measurement runs in a fresh child process (``--one``), so import costs and memory of one
candidate never reach another's numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

WORDS = ["capacity", "heartbeat", "障害対応", "キャッシュ", "quorum", "rollback"]
HEADINGS = ["Overview", "Recovery steps", "振り返り"]

# --------------------------------------------------------------- fixtures


def write_docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "Capacity review"
    document.core_properties.keywords = "ops, capacity"
    for section in range(40):
        document.add_heading(HEADINGS[section % 3], level=1 + section % 2)
        for n in range(6):
            document.add_paragraph(
                f"Paragraph {n} of section {section}: the {WORDS[n % 6]} plan keeps the cluster "
                "within its budget, and 障害対応の手順はキャッシュを最初に確認する。"
            )
        table = document.add_table(rows=4, cols=3)
        for r, row in enumerate(table.rows):
            for c, cell in enumerate(row.cells):
                cell.text = f"{WORDS[(r + c) % 6]} {r}.{c}"
    document.save(str(path))


def write_xlsx(path: Path, rows: int) -> None:
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    for name in ("Budget", "予算"):
        sheet = book.create_sheet(name)
        sheet.append(["host", "role", "cores", "memory", "note", "owner"])
        for r in range(rows // 2):
            sheet.append([f"node-{r}", WORDS[r % 6], r % 64, r * 1.5, f"キャッシュ {r}", "platform"])
    book.save(str(path))


def write_pptx(path: Path) -> None:
    import pptx

    deck = pptx.Presentation()
    for n in range(30):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"{HEADINGS[n % 3]} {n}"
        body = slide.placeholders[1].text_frame
        body.text = f"The {WORDS[n % 6]} point of slide {n}"
        body.add_paragraph().text = "障害対応の振り返り"
        slide.notes_slide.notes_text_frame.text = f"Speaker note: mention {WORDS[(n + 1) % 6]}."
    deck.save(str(path))


def write_html(path: Path) -> None:
    nav = "".join(f'<li><a href="/p{n}">Navigation entry {n}</a></li>' for n in range(200))
    article = "".join(
        f"<h2>{HEADINGS[s % 3]}</h2>"
        + "".join(f"<p>The {WORDS[n % 6]} plan, 障害対応とキャッシュ, step {n}.</p>" for n in range(8))
        + "<table><tr><th>host</th><th>role</th></tr><tr><td>a</td><td>quorum</td></tr></table>"
        for s in range(60)
    )
    path.write_text(
        "<!doctype html><html><head><title>Runbook</title><style>p{color:red}</style>"
        f"<script>var secretScriptWord = 1;</script></head><body><nav><ul>{nav}</ul></nav>"
        f"<main><h1>Runbook</h1>{article}</main><footer>footer words</footer></body></html>",
        encoding="utf-8",
    )


# ------------------------------------------------------------- candidates


def docx_python_docx(path: Path) -> tuple[str, list[str]]:
    import docx

    document = docx.Document(str(path))
    parts: list[str] = []
    headings: list[str] = []
    for paragraph in document.paragraphs:
        if paragraph.style is not None and (paragraph.style.name or "").startswith("Heading"):
            headings.append(paragraph.text)
        parts.append(paragraph.text)
    for table in document.tables:
        for row in table.rows:
            parts.append("\t".join(cell.text for cell in row.cells))
    return "\n".join(parts), headings


def docx_docx2python(path: Path) -> tuple[str, list[str]]:
    from docx2python import docx2python

    with docx2python(str(path), html=True) as result:
        text = result.text
    headings = re.findall(r"<h\d>(.*?)</h\d>", text)
    return text, headings


def docx_mammoth(path: Path) -> tuple[str, list[str]]:
    import mammoth

    with path.open("rb") as handle:
        html = mammoth.convert_to_html(handle).value
    return re.sub(r"<[^>]+>", " ", html), re.findall(r"<h\d>(.*?)</h\d>", html)


def xlsx_openpyxl(path: Path) -> tuple[str, list[str]]:
    import openpyxl

    book = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    parts: list[str] = []
    for sheet in book.worksheets:
        parts.append(sheet.title)
        for row in sheet.iter_rows(values_only=True):
            parts.append("\t".join("" if v is None else str(v) for v in row))
    book.close()
    return "\n".join(parts), list(book.sheetnames)


def xlsx_calamine(path: Path) -> tuple[str, list[str]]:
    from python_calamine import CalamineWorkbook

    book = CalamineWorkbook.from_path(str(path))
    parts: list[str] = []
    for name in book.sheet_names:
        parts.append(name)
        for row in book.get_sheet_by_name(name).iter_rows():
            parts.append("\t".join(str(v) for v in row))
    return "\n".join(parts), list(book.sheet_names)


def pptx_python_pptx(path: Path) -> tuple[str, list[str]]:
    import pptx

    deck = pptx.Presentation(str(path))
    parts: list[str] = []
    titles: list[str] = []
    for slide in deck.slides:
        title = slide.shapes.title
        if title is not None:
            titles.append(title.text_frame.text)
        parts.extend(s.text_frame.text for s in slide.shapes if s.has_text_frame)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            parts.append(slide.notes_slide.notes_text_frame.text)
    return "\n".join(parts), titles


_DROP = ("script", "style", "nav", "header", "footer", "aside", "noscript", "template")


def html_bs4(path: Path) -> tuple[str, list[str]]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_bytes(), "html.parser")
    for tag in soup.find_all(_DROP):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    headings = [h.get_text(" ", strip=True) for h in root.find_all(re.compile(r"^h[1-6]$"))]
    return root.get_text("\n", strip=True), headings


def html_selectolax(path: Path) -> tuple[str, list[str]]:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(path.read_bytes())
    tree.strip_tags(list(_DROP))
    root = tree.css_first("main") or tree.css_first("article") or tree.body
    if root is None:
        return "", []
    headings = [h.text(strip=True) for h in root.css("h1, h2, h3, h4, h5, h6")]
    return root.text(separator="\n", strip=True), headings


def html_stdlib(path: Path) -> tuple[str, list[str]]:
    from html.parser import HTMLParser

    class Walker(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.skip = 0
            self.parts: list[str] = []
            self.heading: list[str] | None = None
            self.headings: list[str] = []

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            if tag in _DROP:
                self.skip += 1
            elif re.fullmatch(r"h[1-6]", tag):
                self.heading = []

        def handle_endtag(self, tag: str) -> None:
            if tag in _DROP:
                self.skip = max(0, self.skip - 1)
            elif re.fullmatch(r"h[1-6]", tag) and self.heading is not None:
                self.headings.append("".join(self.heading).strip())
                self.heading = None

        def handle_data(self, data: str) -> None:
            if not self.skip:
                self.parts.append(data)
                if self.heading is not None:
                    self.heading.append(data)

    walker = Walker()
    walker.feed(path.read_text(encoding="utf-8", errors="replace"))
    walker.close()
    return "\n".join(walker.parts), walker.headings


CANDIDATES: dict[str, tuple[str, Any, list[str]]] = {
    # name: (format, function, distributions it needs)
    "python-docx": ("docx", docx_python_docx, ["python-docx"]),
    "docx2python": ("docx", docx_docx2python, ["docx2python"]),
    "mammoth": ("docx", docx_mammoth, ["mammoth"]),
    "openpyxl": ("xlsx", xlsx_openpyxl, ["openpyxl"]),
    "python-calamine": ("xlsx", xlsx_calamine, ["python-calamine"]),
    "python-pptx": ("pptx", pptx_python_pptx, ["python-pptx"]),
    "beautifulsoup4": ("html", html_bs4, ["beautifulsoup4"]),
    "selectolax": ("html", html_selectolax, ["selectolax"]),
    "html.parser (stdlib)": ("html", html_stdlib, []),
}

# ----------------------------------------------------------- measurement


def run_one(name: str, file: Path) -> dict[str, Any]:
    """In this (fresh) process: extract once, report time, peak RSS and what came through."""
    _, function, _ = CANDIDATES[name]
    began = time.perf_counter()
    text, headings = function(file)
    seconds = time.perf_counter() - began
    peak_kib = peak_rss_kib()
    return {
        "seconds": seconds,
        "peak_mib": peak_kib / 1024,
        "chars": len(text),
        "words_found": sum(word in text for word in WORDS),
        "headings": len(headings),
        "nav_dropped": "Navigation entry" not in text and "secretScriptWord" not in text,
    }


def peak_rss_kib() -> int:
    """This process's peak resident set (``VmHWM``): unlike ``ru_maxrss``, it starts again at ``exec``,
    so a child forked from a parent that wrote large fixtures does not inherit the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource  # not Linux: the closest measure there is

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def installed_size(requirement: str, seen: set[str] | None = None) -> tuple[int, set[str]]:
    """Bytes on disk of a distribution and every distribution it requires (extras left out)."""
    seen = set() if seen is None else seen
    key = re.split(r"[ ;<>=!~\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")
    if key in seen:
        return 0, seen
    try:
        dist = metadata.distribution(key)
    except metadata.PackageNotFoundError:
        return 0, seen
    seen.add(key)
    total = 0
    for file in dist.files or []:
        located = Path(str(file.locate()))
        if located.is_file():
            total += located.stat().st_size
    for requirement_line in dist.requires or []:
        if "extra ==" in requirement_line:
            continue
        total += installed_size(requirement_line, seen)[0]
    return total, seen


def licence(distribution: str) -> str:
    try:
        meta = metadata.metadata(distribution)
    except metadata.PackageNotFoundError:
        return "?"
    expression = meta.get("License-Expression")
    if expression:
        return str(expression)
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License")]
    return ", ".join(classifiers) or (meta.get("License") or "?").splitlines()[0][:40]


def hostile(case: str) -> None:
    """In a fresh process (kbseek installed): decode one hostile file, then print the child's peak RSS."""
    import io
    import zipfile

    import docx
    import openpyxl

    from kbseek.ingest.parsers.extracted import DocxParser, HtmlParser, XlsxParser

    def saved(document: Any) -> bytes:
        buffer = io.BytesIO()
        document.save(buffer)
        return buffer.getvalue()

    parser: Any
    if case == "million-cells":
        book = openpyxl.Workbook(write_only=True)
        sheet = book.create_sheet("big")
        for row in range(100_000):
            sheet.append([row, *range(9)])
        raw, parser = saved(book), XlsxParser()
    elif case == "zip-bomb-at-budget":  # just under the declared budget: every byte is inflated and counted
        out = io.BytesIO(saved(docx.Document()))
        with (
            zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as package,
            package.open("word/media/x.bin", "w", force_zip64=True) as member,
        ):
            for _ in range(250):
                member.write(bytes(1 << 20))
        raw, parser = out.getvalue(), DocxParser()
    elif case == "nested-html":
        raw = b"<main>" + b"<table><tr><td>" * 200_000 + b"x" + b"</td></tr></table>" * 200_000 + b"</main>"
        parser = HtmlParser()
    else:
        raise SystemExit(f"unknown case {case}")
    # The child's peak is read by a small wrapper process: on Linux a child's ru_maxrss starts at its
    # parent's resident size at fork, and this process holds the fixture.
    wrapper = (
        "import resource, subprocess, sys; "
        "subprocess.run(sys.argv[1:], stdin=sys.stdin, stdout=subprocess.DEVNULL, check=False); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    began = time.perf_counter()
    measured = subprocess.run(
        [sys.executable, "-c", wrapper, *parser.child_command(len(raw))],
        input=raw,
        capture_output=True,
        check=True,
    )
    peak = int(measured.stdout) / 1024
    seconds = time.perf_counter() - began
    try:
        outcome = f"{len(parser.decode(raw))} characters"
    except ValueError as exc:
        outcome = f"refused: {exc}"[:100]
    print(
        f"{case:20} input {len(raw) / 1e6:6.2f} MB  {seconds:5.1f} s  child peak {peak:4.0f} MiB  {outcome}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--html", type=Path, help="a folder of real HTML pages to read instead of a written one"
    )
    parser.add_argument("--rows", type=int, default=50_000, help="rows of the written workbook")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hostile", metavar="CASE", help="million-cells, zip-bomb-at-budget or nested-html")
    parser.add_argument("--one", nargs=2, metavar=("CANDIDATE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hostile:
        hostile(args.hostile)
        return
    if args.one:
        print(json.dumps(run_one(args.one[0], Path(args.one[1]))))
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        files: dict[str, list[Path]] = {
            "docx": [folder / "review.docx"],
            "xlsx": [folder / "budget.xlsx"],
            "pptx": [folder / "deck.pptx"],
        }
        write_docx(files["docx"][0])
        write_xlsx(files["xlsx"][0], args.rows)
        write_pptx(files["pptx"][0])
        if args.html:
            files["html"] = sorted(args.html.rglob("*.html"))
        else:
            files["html"] = [folder / "runbook.html"]
            write_html(files["html"][0])
        sizes = {fmt: sum(p.stat().st_size for p in paths) for fmt, paths in files.items()}
        print(
            f"files: {', '.join(f'{fmt} {len(p)} file(s) {sizes[fmt] / 1e6:.2f} MB' for fmt, p in files.items())}"
        )
        print(
            f"{'candidate':22} {'fmt':5} {'ms/file':>8} {'peak MiB':>9} {'words':>6} {'heads':>6} "
            f"{'nav out':>8} {'install MB':>10}  licence"
        )
        for name, (fmt, _, dists) in CANDIDATES.items():
            rows = []
            for path in files[fmt]:
                for _ in range(args.repeat):
                    out = subprocess.run(
                        [sys.executable, __file__, "--one", name, str(path)],
                        capture_output=True, text=True, check=False,
                    )  # fmt: skip
                    if out.returncode != 0:
                        rows = []
                        break
                    rows.append(json.loads(out.stdout))
                if not rows:
                    break
            if not rows:
                print(f"{name:22} {fmt:5} not installed or failed")
                continue
            size = sum(installed_size(d)[0] for d in dists) / 1e6
            print(
                f"{name:22} {fmt:5} {statistics.median(r['seconds'] for r in rows) * 1000:8.0f} "
                f"{max(r['peak_mib'] for r in rows):9.0f} "
                f"{min(r['words_found'] for r in rows)}/{len(WORDS):<4} "
                f"{statistics.median(r['headings'] for r in rows):6.0f} "
                f"{'yes' if all(r['nav_dropped'] for r in rows) else 'no':>8} {size:10.1f}  "
                f"{licence(dists[0]) if dists else 'PSF'}"
            )


if __name__ == "__main__":
    main()
