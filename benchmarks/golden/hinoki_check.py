#!/usr/bin/env python3
"""Verify the hinoki golden set (hinoki.jsonl against the documents in hinoki/).

    /work/main/.venv/bin/python benchmarks/golden/hinoki_check.py

Checks: every line parses and has exactly the expected fields and types; ids are unique and sequential;
every answer string of an answerable question occurs in the named document's extracted text (PDF text by
pypdfium2, page by page: on every listed page some answer occurs, and every answer occurs on a listed page,
a name written without the space between family and given name (野口誠 for 野口 誠) being accepted as an
alternative spelling of the span that occurs;
HTML text by BeautifulSoup; .md/.txt as read), after the normalisation the evaluator is said to use
(NFKC width folding, case folding, thousands separators dropped, whitespace runs collapsed); unanswerable
questions have answers [], doc null, page null; strings that an unanswerable question relies on being absent
really are absent from every document; no two questions are near-duplicates; the required counts hold.
Prints a table by category and language. Exit status 0 only when every check passes.
"""
import collections
import difflib
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "hinoki"
JSONL = HERE / "hinoki.jsonl"
FIELDS = ["id", "question", "answers", "doc", "page", "category", "unanswerable"]
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")

# Codes, dates and names that unanswerable questions assume are NOT in any document.
MUST_BE_ABSENT = [
    "HK-03", "GX-50", "OP-TS-07-6", "S9系統", "レーンE", "HK-BCT-2022", "2番のりば", "Berth 2",
    "第41回", "第43回", "令和7年5月", "月極", "令和9年4月", "fiscal 2023", "令和5年度の旅客", "2022",
    "lifeguards (", "令和3年度", "Shirasagijima Port waiting room:", "パスワード", "password",
]


def norm(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).casefold()
    s = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", s)
    return re.sub(r"\s+", " ", s).strip()


def pdf_pages(path: Path):
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def html_text(path: Path) -> str:
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").get_text(" ")


def load_docs():
    docs = {}
    for p in sorted(DOCS.iterdir()):
        if p.suffix == ".pdf":
            docs[p.name] = pdf_pages(p)
        elif p.suffix in (".html", ".htm"):
            docs[p.name] = [html_text(p)]
        else:
            docs[p.name] = [p.read_text(encoding="utf-8")]
    return docs


def lang_of(text: str) -> str:
    return "ja" if CJK.search(text) else "en"


def main() -> int:
    errors = []
    docs = load_docs()
    ndocs = {name: [norm(t) for t in pages] for name, pages in docs.items()}
    doc_lang = {}
    for name, pages in docs.items():
        text = "".join(pages)
        cjk = len(CJK.findall(text))
        letters = len(re.findall(r"[A-Za-z]", text))
        doc_lang[name] = "ja" if cjk > letters else "en"

    rows = []
    spacing_variants = []
    for n, line in enumerate(JSONL.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            errors.append(f"line {n}: empty line")
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"line {n}: bad JSON: {e}")
            continue
        if list(r) != FIELDS:
            errors.append(f"line {n}: fields {list(r)} != {FIELDS}")
            continue
        rows.append(r)

    ids = [r["id"] for r in rows]
    dup = [i for i, c in collections.Counter(ids).items() if c > 1]
    if dup:
        errors.append(f"duplicate ids: {dup}")
    for k, i in enumerate(ids, 1):
        if i != f"hk-{k:03d}":
            errors.append(f"id {i} out of sequence (expected hk-{k:03d})")
            break

    for r in rows:
        rid = r["id"]
        if not isinstance(r["question"], str) or not r["question"].strip():
            errors.append(f"{rid}: empty question")
        if not isinstance(r["category"], str) or not r["category"]:
            errors.append(f"{rid}: empty category")
        if not isinstance(r["unanswerable"], bool):
            errors.append(f"{rid}: unanswerable is not a bool")
            continue
        if r["unanswerable"]:
            if r["answers"] != [] or r["doc"] is not None or r["page"] is not None:
                errors.append(f"{rid}: unanswerable must have answers [], doc null, page null")
            if not r["category"].startswith("unanswerable"):
                errors.append(f"{rid}: unanswerable question with category {r['category']}")
            continue
        if r["category"].startswith("unanswerable"):
            errors.append(f"{rid}: answerable question with category {r['category']}")
        answers = r["answers"]
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
            errors.append(f"{rid}: answers must be a non-empty list of strings")
            continue
        if r["doc"] not in docs:
            errors.append(f"{rid}: unknown doc {r['doc']!r}")
            continue
        pages = ndocs[r["doc"]]
        page = r["page"]
        plist = page if isinstance(page, list) else [page]
        if not plist or not all(isinstance(p, int) and not isinstance(p, bool) for p in plist):
            errors.append(f"{rid}: page must be an int or a list of ints")
            continue
        if not r["doc"].endswith(".pdf") and plist != [1]:
            errors.append(f"{rid}: page must be 1 for a non-PDF document")
        if any(p < 1 or p > len(pages) for p in plist):
            errors.append(f"{rid}: page {page} outside 1..{len(pages)}")
            continue
        for a in r["answers"]:
            na = norm(a)
            if not any(na in pages[p - 1] for p in plist) and any(
                na.replace(" ", "") in pages[p - 1].replace(" ", "") for p in plist
            ):
                spacing_variants.append(f"{rid}: {a!r}")  # e.g. 野口誠 for the document's 野口 誠
                continue
            if not any(na in pages[p - 1] for p in plist):
                where = [i + 1 for i, t in enumerate(pages) if na in t]
                found = f" (found on {where})" if where else ""
                errors.append(f"{rid}: answer {a!r} not on page(s) {plist} of {r['doc']}{found}")
        for p in plist:
            if not any(norm(a) in pages[p - 1] for a in r["answers"]):
                errors.append(f"{rid}: no answer occurs on listed page {p}")
        if r["category"] == "summary" and not 2 <= len(r["answers"]) <= 3:
            errors.append(f"{rid}: a summary question needs 2-3 key phrases")

    for s in MUST_BE_ABSENT:
        ns = norm(s)
        hits = [name for name, pages in ndocs.items() if any(ns in t for t in pages)]
        if hits:
            errors.append(f"string {s!r} that an unanswerable question relies on being absent occurs in {hits}")

    qn = [(r["id"], norm(r["question"])) for r in rows]
    for i in range(len(qn)):
        for j in range(i + 1, len(qn)):
            ratio = difflib.SequenceMatcher(None, qn[i][1], qn[j][1]).ratio()
            if ratio >= 0.9:
                errors.append(f"near-duplicate questions {qn[i][0]} / {qn[j][0]} (ratio {ratio:.2f})")

    # counts
    lang = {r["id"]: lang_of(r["question"]) for r in rows}
    total = len(rows)
    n_ja = sum(1 for v in lang.values() if v == "ja")
    n_en = total - n_ja
    unans = [r for r in rows if r["unanswerable"]]
    un_ja = sum(1 for r in unans if lang[r["id"]] == "ja")
    un_en = len(unans) - un_ja
    n_sum = sum(1 for r in rows if r["category"] == "summary")
    ja_docs = sorted(d for d, lang in doc_lang.items() if lang == "ja")
    en_docs = sorted(d for d, lang in doc_lang.items() if lang == "en")
    need = [
        (total >= 150, f"total {total} >= 150"),
        (n_ja >= 100, f"Japanese questions {n_ja} >= 100"),
        (n_en >= 25, f"English questions {n_en} >= 25"),
        (len(unans) >= 40, f"unanswerable {len(unans)} >= 40"),
        (un_ja >= 5 and un_en >= 5, f"unanswerable in both languages (ja {un_ja}, en {un_en})"),
        (n_sum >= 3, f"summary questions {n_sum} >= 3"),
        (10 <= len(docs) <= 12, f"documents {len(docs)} in 10..12"),
        (len(ja_docs) >= 7, f"Japanese documents {len(ja_docs)} >= 7"),
        (2 <= len(en_docs) <= 3, f"English documents {len(en_docs)} in 2..3"),
        (set(r["doc"] for r in rows if r["doc"]) == set(docs), "every document has questions"),
    ]
    for ok, what in need:
        if not ok:
            errors.append("count: " + what)

    # summary table
    cats = collections.Counter((r["category"], lang[r["id"]]) for r in rows)
    print(f"{'category':<26}{'ja':>5}{'en':>5}{'all':>6}")
    for c in sorted({c for c, _ in cats}):
        ja, en = cats[(c, "ja")], cats[(c, "en")]
        print(f"{c:<26}{ja:>5}{en:>5}{ja + en:>6}")
    print(f"{'TOTAL':<26}{n_ja:>5}{n_en:>5}{total:>6}")
    print(f"answerable {total - len(unans)} / unanswerable {len(unans)} (ja {un_ja}, en {un_en})")
    print()
    per_doc = collections.Counter(r["doc"] for r in rows if r["doc"])
    print(f"{'document':<36}{'lang':>5}{'pages':>6}{'chars':>7}{'questions':>10}")
    for d in sorted(docs):
        chars = sum(len(t) for t in docs[d])
        print(f"{d:<36}{doc_lang[d]:>5}{len(docs[d]):>6}{chars:>7}{per_doc[d]:>10}")
    print(f"answer strings that occur only with the document's spacing (name without the space): {len(spacing_variants)}")
    print()
    for ok, what in need:
        print(("ok   " if ok else "FAIL ") + what)
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors:
            print("  " + e)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
