"""Check benchmarks/golden/fenwick.jsonl against the documents in benchmarks/golden/fenwick/.

Every line must be valid JSON with the expected keys and a unique id; every answerable row must name an
existing document, and at least one of its expected strings must occur in that document's extracted text
(pdfplumber for PDFs, raw text for others, HTML tags stripped). The scanned page has no text layer: its rows
are checked against the source lines in fenwick_build.py (SCAN_LINES) and reported as OCR-dependent.
Run: .venv/bin/python benchmarks/golden/fenwick_check.py
"""

from __future__ import annotations

import html
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import pdfplumber

HERE = Path(__file__).resolve().parent
DOCS = HERE / "fenwick"
SCAN = "noise_notice_scan.pdf"
KEYS = {"id", "question", "answers", "doc", "page", "category", "unanswerable"}


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", text)


def _text(name: str) -> str:
    path = DOCS / name
    if name == SCAN:
        sys.path.insert(0, str(HERE))
        from fenwick_build import SCAN_LINES

        return " ".join(line.strip() for line in SCAN_LINES)
    if path.suffix == ".pdf":
        with pdfplumber.open(path) as pdf:
            return "\n".join(page.extract_text() or "" for page in pdf.pages)
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        raw = html.unescape(re.sub(r"<[^>]+>", " ", raw))
    return raw


def main() -> int:
    errors: list[str] = []
    rows = []
    for n, line in enumerate((HERE / "fenwick.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {n}: {exc}")
            continue
        if set(row) != KEYS:
            errors.append(f"line {n}: keys {sorted(row)}")
        rows.append(row)
    ids = Counter(r["id"] for r in rows)
    errors += [f"duplicate id {i}" for i, c in ids.items() if c > 1]
    cache: dict[str, str] = {}
    ocr = 0
    for r in rows:
        if r["unanswerable"]:
            if r["answers"] or r["doc"] is not None or r["page"] is not None:
                errors.append(f"{r['id']}: unanswerable row with answers/doc/page")
            continue
        if not r["answers"] or not (DOCS / str(r["doc"])).exists():
            errors.append(f"{r['id']}: no answers or missing doc {r['doc']}")
            continue
        text = cache.setdefault(r["doc"], _norm(_text(r["doc"])))
        missing = [a for a in r["answers"] if _norm(a) not in text]
        if missing:
            errors.append(f"{r['id']}: not in {r['doc']}: {missing}")
        if r["doc"] == SCAN:
            ocr += 1
    ja = sum(bool(re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", r["question"])) for r in rows)
    print(f"rows {len(rows)}, unanswerable {sum(r['unanswerable'] for r in rows)}, japanese {ja}, "
          f"OCR-dependent (checked against source text) {ocr}, docs {len({r['doc'] for r in rows} - {None})}")
    for cat, c in sorted(Counter(r["category"] for r in rows).items()):
        print(f"  {cat}: {c}")
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
