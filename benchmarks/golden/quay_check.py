"""Self-check of the quay golden set (the author's script; it does not use relayrag).

    python benchmarks/golden/quay_check.py [--ocr]

Checks that every line of quay.jsonl is valid JSON with a unique id and the expected keys, that every
answerable row's expected strings occur in its document's text (PDF: pdfplumber extract_text on the
given page(s); HTML: text without tags; scanned_notice.pdf: the source lines in quay_build.py, since the
page has no text layer), and prints counts. With --ocr it also runs tesseract on the scanned page and
reports which expected strings the OCR text contains (informational).
"""

from __future__ import annotations

import collections
import html.parser
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "quay"
SCANNED = "scanned_notice.pdf"
KEYS = {"id", "question", "answers", "doc", "page", "category", "unanswerable"}


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s)


def doc_text(name: str, pages: list[int]) -> str:
    path = DOCS / name
    if name == SCANNED:
        sys.path.insert(0, str(HERE))
        from quay_build import SCAN_LINES

        return _norm(" ".join(SCAN_LINES))
    if name.endswith(".pdf"):
        import pdfplumber

        with pdfplumber.open(path) as pdf:
            return _norm(" ".join(pdf.pages[p - 1].extract_text() or "" for p in pages))
    raw = path.read_text(encoding="utf-8")
    if name.endswith(".html"):
        parser = _Text()
        parser.feed(raw)
        return _norm(" ".join(parser.parts))
    return _norm(raw)


def ocr_text() -> str:
    import pypdfium2

    with tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "page.png"
        pypdfium2.PdfDocument(str(DOCS / SCANNED))[0].render(scale=2).to_pil().save(png)
        out = subprocess.run(["tesseract", str(png), "-"], capture_output=True, text=True, check=True)
    return _norm(out.stdout)


def main() -> int:
    rows = []
    errors = []
    for n, line in enumerate((HERE / "quay.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            errors.append(f"line {n}: {exc}")
    ids = [r.get("id") for r in rows]
    for dup, k in collections.Counter(ids).items():
        if k > 1:
            errors.append(f"duplicate id {dup}")
    docs = sorted(p.name for p in DOCS.iterdir())
    ocr = ocr_text() if "--ocr" in sys.argv else None
    for r in rows:
        if set(r) != KEYS:
            errors.append(f"{r.get('id')}: keys {sorted(r)}")
        if r["unanswerable"]:
            if r["answers"] or r["doc"] is not None or r["page"] is not None:
                errors.append(f"{r['id']}: unanswerable row with answers/doc/page")
            continue
        if r["doc"] not in docs:
            errors.append(f"{r['id']}: unknown doc {r['doc']}")
            continue
        pages = r["page"] if isinstance(r["page"], list) else [r["page"]]
        text = doc_text(r["doc"], pages)
        for a in r["answers"]:
            if _norm(a) not in text:
                errors.append(f"{r['id']}: {a!r} not in {r['doc']} p{pages}")
        if ocr is not None and r["doc"] == SCANNED:
            hit = [a for a in r["answers"] if _norm(a) in ocr]
            print(f"OCR {r['id']}: {'ok' if hit else 'MISSING'} {r['answers']}")
    ja = [r for r in rows if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", r["question"])]
    print(
        f"rows {len(rows)}  unanswerable {sum(r['unanswerable'] for r in rows)}  "
        f"japanese {len(ja)} (unanswerable {sum(r['unanswerable'] for r in ja)})  docs {len(docs)}"
    )
    for cat, k in sorted(collections.Counter(r["category"] for r in rows).items()):
        print(f"  {cat:13s} {k}")
    for doc, k in sorted(collections.Counter(r["doc"] or "-" for r in rows).items()):
        print(f"  {doc:24s} {k}")
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
