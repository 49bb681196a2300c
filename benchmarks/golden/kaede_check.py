"""Verify the kaede golden set (kaede.jsonl against the documents in kaede/).

Run with the project's venv (needs pypdfium2 and beautifulsoup4):
    /work/main/.venv/bin/python benchmarks/golden/kaede_check.py
Exits non-zero on any failure.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import pypdfium2
from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
DOCS = HERE / "kaede"
QUESTIONS = HERE / "kaede.jsonl"
FIELDS = ["id", "question", "answers", "doc", "page", "category", "unanswerable"]
MIN_TOTAL, MIN_JA, MIN_EN, MIN_UNANSWERABLE, MIN_UNANSWERABLE_PER_LANG = 150, 100, 25, 40, 8
JA_CHARS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def normalize(text: str) -> str:
    """Ignore case, full/half width and thousands separators; keep spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"(?<=\d),(?=\d{3})", "", text)


def load_docs() -> dict[str, list[str]]:
    """Map file name to its extracted text per page (one page for non-PDF files)."""
    docs: dict[str, list[str]] = {}
    for path in sorted(DOCS.iterdir()):
        if path.suffix == ".pdf":
            pdf = pypdfium2.PdfDocument(str(path))
            docs[path.name] = [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
        elif path.suffix in {".html", ".htm"}:
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            docs[path.name] = [soup.get_text(" ")]
        else:
            docs[path.name] = [path.read_text(encoding="utf-8")]
    return docs


def is_japanese_doc(text: str) -> bool:
    """A document counts as Japanese when at least 30% of its non-space characters are kana or kanji."""
    chars = re.sub(r"\s+", "", text)
    return bool(chars) and len(JA_CHARS.findall(chars)) / len(chars) >= 0.3


def language(question: str) -> str:
    return "ja" if JA_CHARS.search(question) else "en"


def check_row(row: dict, docs: dict[str, list[str]], norm_pages: dict[str, list[str]]) -> list[str]:
    errors = []
    missing = [f for f in FIELDS if f not in row]
    extra = [f for f in row if f not in FIELDS]
    if missing or extra:
        return [f"missing fields {missing}, extra fields {extra}"]
    if not re.fullmatch(r"kd-\d{3}", str(row["id"])):
        errors.append("id is not kd-NNN")
    if not isinstance(row["question"], str) or not row["question"].strip():
        errors.append("empty question")
    if not isinstance(row["category"], str) or not row["category"]:
        errors.append("empty category")
    if not isinstance(row["answers"], list) or not all(isinstance(a, str) and a for a in row["answers"]):
        errors.append("answers must be a list of non-empty strings")
        return errors
    if row["unanswerable"] is True:
        if row["answers"] or row["doc"] is not None or row["page"] is not None:
            errors.append("unanswerable rows need answers [], doc null, page null")
        if not row["category"].startswith("unanswerable"):
            errors.append("unanswerable row with an answerable category")
        return errors
    if row["unanswerable"] is not False:
        errors.append("unanswerable must be true or false")
        return errors
    if row["category"].startswith("unanswerable"):
        errors.append("answerable row with an unanswerable category")
    if not row["answers"]:
        errors.append("answerable row without answers")
    doc = row["doc"]
    if doc not in docs:
        errors.append(f"unknown doc {doc!r}")
        return errors
    pages = row["page"] if isinstance(row["page"], list) else [row["page"]]
    if not pages or not all(isinstance(p, int) and not isinstance(p, bool) for p in pages):
        errors.append("page must be an int or a list of ints")
        return errors
    for p in pages:
        if not 1 <= p <= len(docs[doc]):
            errors.append(f"page {p} out of range for {doc}")
            continue
        for answer in row["answers"]:
            if normalize(answer) not in norm_pages[doc][p - 1]:
                errors.append(f"answer {answer!r} not on page {p} of {doc}")
    return errors


def near_duplicates(rows: list[dict]) -> list[str]:
    def grams(q: str) -> set[str]:
        q = re.sub(r"\s+", "", normalize(q))
        return {q[i : i + 2] for i in range(len(q) - 1)}

    found = []
    sets = [(r["id"], grams(r["question"])) for r in rows]
    for i, (id_a, a) in enumerate(sets):
        for id_b, b in sets[i + 1 :]:
            if a and b and len(a & b) / len(a | b) >= 0.8:
                found.append(f"{id_a} and {id_b} are near-duplicates")
    return found


def main() -> int:
    docs = load_docs()
    norm_pages = {name: [normalize(p) for p in pages] for name, pages in docs.items()}
    failures: list[str] = []
    rows: list[dict] = []
    for n, line in enumerate(QUESTIONS.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            failures.append(f"line {n}: blank line")
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            failures.append(f"line {n}: bad JSON ({exc})")
            continue
        rows.append(row)
        failures += [f"{row.get('id', f'line {n}')}: {e}" for e in check_row(row, docs, norm_pages)]
    ids = Counter(r.get("id") for r in rows)
    failures += [f"duplicate id {i}" for i, c in ids.items() if c > 1]
    failures += near_duplicates(rows)

    lang = Counter(language(r["question"]) for r in rows)
    unans = [r for r in rows if r.get("unanswerable") is True]
    unans_lang = Counter(language(r["question"]) for r in unans)
    ja_docs = [n for n, pages in docs.items() if is_japanese_doc("".join(pages))]
    checks = [
        (len(rows) >= MIN_TOTAL, f"{len(rows)} questions (need >= {MIN_TOTAL})"),
        (lang["ja"] >= MIN_JA, f"{lang['ja']} Japanese questions (need >= {MIN_JA})"),
        (lang["en"] >= MIN_EN, f"{lang['en']} English questions (need >= {MIN_EN})"),
        (len(unans) >= MIN_UNANSWERABLE, f"{len(unans)} unanswerable (need >= {MIN_UNANSWERABLE})"),
        (
            min(unans_lang["ja"], unans_lang["en"]) >= MIN_UNANSWERABLE_PER_LANG,
            f"unanswerable by language {dict(unans_lang)} (need >= {MIN_UNANSWERABLE_PER_LANG} each)",
        ),
        (10 <= len(docs) <= 12, f"{len(docs)} documents (need 10-12)"),
        (len(ja_docs) >= 7, f"{len(ja_docs)} Japanese documents (need >= 7)"),
    ]
    failures += [msg for ok, msg in checks if not ok]

    print(f"{len(rows)} questions over {len(docs)} documents ({len(ja_docs)} Japanese)")
    print(f"language: {dict(sorted(lang.items()))}; answerable {len(rows) - len(unans)}, unanswerable {len(unans)}")
    print("category              ja   en  total")
    cats = Counter((r.get("category"), language(r["question"])) for r in rows)
    for cat in sorted({c for c, _ in cats}):
        ja, en = cats[(cat, "ja")], cats[(cat, "en")]
        print(f"{cat:<20} {ja:>4} {en:>4} {ja + en:>6}")
    per_doc = Counter(r.get("doc") for r in rows if r.get("doc"))
    print("answerable per doc: " + ", ".join(f"{d} {c}" for d, c in sorted(per_doc.items())))
    if failures:
        print(f"\nFAILED ({len(failures)}):")
        for f in failures:
            print("  " + f)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
