"""Files a team already has: what the converters make of Office, HTML and notebook files nobody here wrote.

    python benchmarks/realfiles.py                       # ../shared/realfiles, every parser enabled
    python benchmarks/realfiles.py --dir PATH --json

The folder (by default the development corpus of other projects' test files, with its sources and
licences in its README) is copied, leaving out any index, and indexed once from nothing by the
installed ``kbseek index`` with every parser enabled and keywords only (the model would only add its
own time). Printed: the files by extension, how many were indexed, the skipped ones grouped by their
reason (each group with one example, so a reason that reads badly shows), the pass's time, and the
peak resident memory of the indexing process and the extraction children it waited for.

Run it with the environment of the code to measure: a checkout's ``.venv/bin/python`` measures
that checkout (the script starts the ``kbseek`` beside the interpreter).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from beir import WORK
from processes import kbseek_script, run_child

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "realfiles"
HERE = WORK / "realfiles"
PARSERS = ["md", "txt", "pdf", "docx", "xlsx", "pptx", "html", "ipynb"]


def reason_kind(reason: str) -> str:
    """A reason without its particulars (numbers, quoted names, paths), to group like with like."""
    text = reason.removeprefix("cannot decode: ")
    text = re.sub(r"\d[\d,.]*", "N", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    return re.split(r"[:;(]", text)[0].strip()[:90] or reason[:90]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, default=DEFAULT)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    if not args.dir.is_dir():
        raise SystemExit(f"{args.dir} is not a folder: name one with --dir")

    shutil.rmtree(HERE, ignore_errors=True)
    kb = HERE / "kb"
    shutil.copytree(args.dir, kb, ignore=shutil.ignore_patterns(".kbseek"))
    config = HERE / "kbseek.toml"
    config.write_text(f"semantic = false\n[parsers]\nenabled = {json.dumps(PARSERS)}\n", encoding="utf-8")
    files = [p for p in kb.rglob("*") if p.is_file()]
    by_ext = Counter(p.suffix.lower() or "(none)" for p in files)
    try:
        seconds, peak_mib, out = run_child(
            [kbseek_script(), "index", "--kb", str(kb), "--config", str(config), "--json"]
        )
    finally:
        shutil.rmtree(HERE, ignore_errors=True)
    report = json.loads(out)
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for item in report["skipped"]:
        groups[reason_kind(item["reason"])].append((item["path"], item["reason"]))
    summary = {
        "files": len(files), "by_extension": dict(by_ext.most_common()),
        "indexed": len(report["added"]), "skipped": len(report["skipped"]),
        "warnings": len(report["warnings"]), "seconds": round(seconds, 1), "peak_rss_mib": round(peak_mib),
        "skipped_by_reason": {k: len(v) for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))},
    }  # fmt: skip
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    print(f"{len(files)} files: " + ", ".join(f"{n} {ext}" for ext, n in by_ext.most_common()))
    print(f"indexed {summary['indexed']}, skipped {summary['skipped']}, with warnings {summary['warnings']}")
    print(
        f"{seconds:.1f} s, peak RSS {peak_mib:.0f} MiB (kbseek index and the extraction children it waited for)"
    )
    print("skipped, by reason:")
    for kind, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        path, reason = items[0]
        print(f"  {len(items):3}  {kind}")
        print(f"       e.g. {path}: {reason[:200]}")


if __name__ == "__main__":
    main()
