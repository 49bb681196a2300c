"""Tests for relayrag.ingest.loaders: bad input, text formats, BEIR corpora, PDF layout/tables/OCR.

Small PDFs are written byte by byte here (`_Pdf`); the real-world PDFs are the repo copies under
examples/pdfs/ (public-domain U.S. government documents, see examples/pdfs.README.md). OCR tests skip
when the tesseract binary is missing.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from relayrag.errors import IngestError
from relayrag.ingest.loaders import (
    SUPPORTED_SUFFIXES,
    LoadedDocument,
    garbled_reason,
    is_beir_corpus,
    iter_beir_corpus,
    load_document,
)
from relayrag.ingest.pdf import ocr

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "pdfs"
FR = EXAMPLES / "federal-register-2020-17221.pdf"

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract not installed (apt-get install tesseract-ocr): the OCR path cannot run",
)
needs_examples = pytest.mark.skipif(not FR.exists(), reason=f"example PDFs missing under {EXAMPLES}")


@pytest.fixture
def no_tesseract(monkeypatch):
    """Make the loader believe tesseract is not installed."""
    monkeypatch.setattr(ocr, "_tesseract_available", lambda: False)


# --------------------------------------------------------------------------------------------------
# A minimal PDF writer (Helvetica text, ruling lines, gray images, optional ToUnicode CMap)
# --------------------------------------------------------------------------------------------------


def _esc(s: str) -> bytes:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def text_ops(lines: list[str], x: float, y: float, size: float = 11, leading: float = 14) -> bytes:
    """Content-stream operators drawing `lines` top-down from baseline (x, y) in PDF user space."""
    ops = [b"BT /F1 %g Tf %g TL %g %g Td" % (size, leading, x, y)]
    for i, ln in enumerate(lines):
        ops.append((b"" if i == 0 else b"T* ") + b"(" + _esc(ln) + b") Tj")
    ops.append(b"ET")
    return b"\n".join(ops) + b"\n"


def line_ops(x0: float, y0: float, x1: float, y1: float, width: float = 0.7) -> bytes:
    return b"%g w %g %g m %g %g l S\n" % (width, x0, y0, x1, y1)


class _Pdf:
    """Writes a PDF: pages of content streams, one Helvetica font (/F1), optional gray image (/Im1)."""

    def __init__(self, tounicode: bytes | None = None, title: str | None = None):
        self.pages: list[bytes] = []
        self.tounicode = tounicode
        self.title = title  # the document information dictionary's /Title
        self.image: tuple[int, int, bytes] | None = None

    def page(self, content: bytes) -> "_Pdf":
        self.pages.append(content)
        return self

    def with_image(self, width: int, height: int, gray: bytes) -> "_Pdf":
        self.image = (width, height, gray)
        return self

    def bytes(self) -> bytes:
        objs: list[bytes] = []

        def add(body: bytes) -> int:
            objs.append(body)
            return len(objs)

        def stream(data: bytes, extra: bytes = b"") -> int:
            return add(b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream")

        catalog = add(b"")  # placeholders, filled below
        pages_id = add(b"")
        tu = stream(self.tounicode) if self.tounicode else None
        font = add(
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding"
            + (b" /ToUnicode %d 0 R" % tu if tu else b"") + b" >>"
        )
        xobj = b""
        if self.image:
            w, h, data = self.image
            im = stream(data, b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                              b"/BitsPerComponent 8 " % (w, h))
            xobj = b" /XObject << /Im1 %d 0 R >>" % im
        kids = []
        for content in self.pages:
            c = stream(content)
            kids.append(add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >>%s >> "
                b"/Contents %d 0 R >>" % (pages_id, font, xobj, c)
            ))
        info = add(b"<< /Title (" + _esc(self.title) + b") >>") if self.title is not None else None
        objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
        objs[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
            b" ".join(b"%d 0 R" % k for k in kids), len(kids))
        out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for i, body in enumerate(objs, 1):
            offsets.append(len(out))
            out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
        xref = len(out)
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
        for off in offsets:
            out += b"%010d 00000 n \n" % off
        out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
            len(objs) + 1, catalog, b" /Info %d 0 R" % info if info else b"", xref)
        return bytes(out)

    def write(self, path: Path) -> Path:
        path.write_bytes(self.bytes())
        return path


ENGLISH = [
    "The committee reviewed the annual budget and",
    "approved new funding for public libraries in",
    "every county of the state. Members agreed that",
    "the program should start in the spring and that",
    "reports on its progress will be published twice",
    "a year on the website of the department.",
]


# --------------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------------


def test_supported_suffixes():
    assert SUPPORTED_SUFFIXES == frozenset({".pdf", ".md", ".markdown", ".txt", ".html", ".htm",
                                            ".png", ".jpg", ".jpeg", ".tif", ".tiff"})


@pytest.mark.parametrize("name", ["empty.pdf", "empty.txt", "empty.md", "empty.html"])
def test_empty_file(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(IngestError, match=r"empty file \(0 bytes\)"):
        load_document(tmp_path / name)


def test_random_bytes_named_pdf(tmp_path):
    p = tmp_path / "random.pdf"
    p.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(IngestError, match=r"not a PDF: file does not start with %PDF-"):
        load_document(p)


def test_html_saved_as_pdf_says_so(tmp_path):
    p = tmp_path / "download.pdf"
    p.write_bytes(b"<!DOCTYPE html><html><body>404 Not Found</body></html>")
    with pytest.raises(IngestError, match="not a PDF.*HTML"):
        load_document(p)


def _encrypted_pdf(path, user_password: str):
    """A one-page English PDF encrypted with `user_password` (and an owner password)."""
    import pypdf

    writer = pypdf.PdfWriter()
    writer.append(pypdf.PdfReader(io.BytesIO(_Pdf().page(text_ops(ENGLISH, 72, 700)).bytes())))
    writer.encrypt(user_password=user_password, owner_password="owner-secret")
    with path.open("wb") as fh:
        writer.write(fh)
    return path


def test_encrypted_pdf(tmp_path):
    p = _encrypted_pdf(tmp_path / "locked.pdf", "secret")
    with pytest.raises(IngestError, match=r"PDF is encrypted \(password protected\); decrypt it first"):
        load_document(p)


def test_owner_password_only_pdf_opens(tmp_path):
    """Encrypted with an empty user password (restrictions only): readable, so it loads."""
    doc = load_document(_encrypted_pdf(tmp_path / "restricted.pdf", ""))
    assert "annual budget" in doc.pages[0].text


@needs_examples
def test_truncated_pdf(tmp_path):
    data = FR.read_bytes()
    p = tmp_path / "half.pdf"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match=r"PDF is truncated or corrupt: .+cut short"):
        load_document(p)


def test_corrupt_pdf_body(tmp_path):
    p = tmp_path / "corrupt.pdf"
    p.write_bytes(b"%PDF-1.4\n" + b"garbage " * 200 + b"\n%%EOF\n")
    with pytest.raises(IngestError, match=r"PDF is truncated or corrupt"):
        load_document(p)


def test_non_utf8_text(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("café au lait\n".encode("latin-1"))
    with pytest.raises(IngestError, match=r"not UTF-8 text: undecodable byte 0xe9 at offset 3"):
        load_document(p)


def test_utf16_without_bom_is_not_text(tmp_path):
    p = tmp_path / "u16.txt"
    p.write_bytes("hello".encode("utf-16-le"))
    with pytest.raises(IngestError, match="NUL bytes"):
        load_document(p)


def test_unsupported_suffix_lists_supported(tmp_path):
    p = tmp_path / "report.docx"
    p.write_bytes(b"PK\x03\x04")
    with pytest.raises(IngestError) as ei:
        load_document(p)
    msg = str(ei.value)
    assert "unsupported file type .docx" in msg
    for s in (".pdf", ".md", ".markdown", ".txt", ".html", ".htm"):
        assert s in msg


def test_jsonl_points_to_beir_reader(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_text('{"_id": "1", "text": "x"}\n')
    with pytest.raises(IngestError, match="iter_beir_corpus"):
        load_document(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(IngestError, match="file not found"):
        load_document(tmp_path / "nope.txt")
    d = tmp_path / "dir.txt"
    d.mkdir()
    with pytest.raises(IngestError, match="directory"):
        load_document(d)


def test_whitespace_only_text(tmp_path):
    p = tmp_path / "blank.txt"
    p.write_text("  \n\n \t\n")
    with pytest.raises(IngestError, match="no extractable text"):
        load_document(p)


def test_blank_pdf_has_no_extractable_text(tmp_path):
    p = _Pdf().page(b"").write(tmp_path / "blank.pdf")
    with pytest.raises(IngestError, match="no extractable text"):
        load_document(p)


# --------------------------------------------------------------------------------------------------
# Text, Markdown, HTML
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "Héllo wörld\r\nsecond line\r\n".encode("utf-8"),
        b"\xef\xbb\xbf" + "Héllo wörld\nsecond line\n".encode("utf-8"),
        b"\xff\xfe" + "Héllo wörld\nsecond line\n".encode("utf-16-le"),
        b"\xfe\xff" + "Héllo wörld\r\nsecond line\n".encode("utf-16-be"),
    ],
    ids=["utf8-crlf", "utf8-bom", "utf16le-bom", "utf16be-bom"],
)
def test_plain_text_encodings(tmp_path, raw):
    p = tmp_path / "notes.txt"
    p.write_bytes(raw)
    doc = load_document(p)
    assert isinstance(doc, LoadedDocument)
    assert doc.title == "notes" and doc.mime == "text/plain" and doc.source == str(p)
    assert len(doc.pages) == 1
    page = doc.pages[0]
    assert (page.number, page.method) == (1, "text")
    assert page.text == "Héllo wörld\nsecond line"
    assert doc.warnings == []


def test_markdown(tmp_path):
    p = tmp_path / "guide.markdown"
    p.write_text(
        "---\ntitle: Front matter title\n---\n"
        "Intro before the heading.\n\n"
        "# Install *relayrag* today\n\n"
        "Use **pip** and read [the docs](https://example.com/docs). ![diagram](d.png)\n\n"
        "- first item\n- second `code` item\n\n"
        "1. one\n2. two\n\n"
        "| Name | Price |\n|------|------:|\n| Tea | 3.50 |\n| Cake | 4.00 |\n\n"
        "```python\nprint('hi')\n```\n\n"
        "<div class=\"note\">Raw <b>HTML</b> note</div>\n",
        encoding="utf-8",
    )
    doc = load_document(p)
    text = doc.pages[0].text
    assert doc.title == "Install relayrag today"
    assert doc.mime == "text/markdown"
    assert "Use pip and read the docs. diagram" in text
    assert "https://example.com" not in text and "**" not in text
    assert "- first item\n- second code item" in text
    assert "1. one\n2. two" in text
    assert "Name | Price\nTea | 3.50\nCake | 4.00" in text
    assert "print('hi')" in text
    assert "Raw HTML note" in text and "<b>" not in text
    assert "title: Front matter" not in text


def test_markdown_title_falls_back(tmp_path):
    p = tmp_path / "plain-notes.md"
    p.write_text("## Only a subheading\n\nSome text.\n")
    assert load_document(p).title == "plain-notes"
    p2 = tmp_path / "fm.md"
    p2.write_text("---\ntitle: 'From front matter'\n---\nBody.\n")
    assert load_document(p2).title == "From front matter"


def test_html(tmp_path):
    p = tmp_path / "page.html"
    p.write_text(
        "<!doctype html><html><head><title> Quarterly  report </title><style>body{color:red}</style>"
        "<script>var secret = 1;</script></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/about'>About</a></nav>"
        "<h1>Results</h1><p>Revenue grew by <b>12%</b> &amp; costs fell.</p>"
        "<ul><li>North</li><li>South</li></ul>"
        "<table><tr><th>Region</th><th>Sales</th></tr><tr><td>North</td><td>1,200</td></tr></table>"
        "<p>Line one<br>line two</p><script>alert(1)</script></body></html>",
        encoding="utf-8",
    )
    doc = load_document(p)
    text = doc.pages[0].text
    assert doc.title == "Quarterly report" and doc.mime == "text/html"
    assert "Revenue grew by 12% & costs fell." in text
    assert "Region | Sales\nNorth | 1,200" in text
    assert "- North\n- South" in text
    assert "Line one\nline two" in text
    for junk in ("secret", "alert", "color:red", "Home", "About"):
        assert junk not in text


def test_html_declared_charset_and_fallback_title(tmp_path):
    p = tmp_path / "old.htm"
    p.write_bytes('<html><head><meta charset="iso-8859-1"></head><body><h1>Caf\xe9</h1><p>cr\xe8me</p></body></html>'
                  .encode("latin-1"))
    doc = load_document(p)
    assert doc.title == "Café" and "crème" in doc.pages[0].text
    bad = tmp_path / "bad.html"
    bad.write_bytes("<p>cr\xe8me</p>".encode("latin-1"))
    with pytest.raises(IngestError, match="not UTF-8 text"):
        load_document(bad)


def test_html_without_text(tmp_path):
    p = tmp_path / "empty.html"
    p.write_text("<html><head><script>x()</script></head><body><nav>menu</nav></body></html>")
    with pytest.raises(IngestError, match="no extractable text"):
        load_document(p)


# --------------------------------------------------------------------------------------------------
# BEIR corpora
# --------------------------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list, extra_lines: list[str] = ()) -> Path:
    lines = [json.dumps(r) for r in rows] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_beir_corpus(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps({"_id": "d1", "title": "Vitamin D", "text": "Vitamin D helps bones."}).encode()
        + b"\n\n"
        + json.dumps({"_id": 42, "title": "", "text": "No title here."}).encode()
        + b"\n"
        + json.dumps({"_id": "d3", "text": "Title key missing."}).encode()
        + b"\n"
    )
    docs = list(iter_beir_corpus(p))
    assert [d.source for d in docs] == [f"{p}#d1", f"{p}#42", f"{p}#d3"]
    assert docs[0].title == "Vitamin D"
    assert docs[0].pages[0].text == "Vitamin D\nVitamin D helps bones."
    assert docs[1].pages[0].text == "No title here." and docs[1].title == ""
    assert all(d.mime == "application/x-beir" and d.pages[0].number == 1 and d.pages[0].method == "text" for d in docs)


@pytest.mark.parametrize(
    "bad_line, pattern",
    [
        ("{not json", r"line 3: invalid JSON"),
        ('["a", "b"]', r"line 3: expected a JSON object"),
        ('{"title": "x", "text": "y"}', r"line 3: missing key\(s\) _id"),
        ('{"_id": "x"}', r"line 3: missing key\(s\) text"),
        ('{"_id": "x", "text": 5}', r"line 3: title and text must be strings"),
    ],
)
def test_beir_bad_line_names_line_number(tmp_path, bad_line, pattern):
    p = _write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "1", "text": "a"}, {"_id": "2", "text": "b"}], [bad_line])
    it = iter_beir_corpus(p)
    assert next(it).source.endswith("#1")
    assert next(it).source.endswith("#2")
    with pytest.raises(IngestError, match=pattern):
        next(it)


def test_beir_undecodable_line(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_bytes(b'{"_id": "1", "text": "ok"}\n{"_id": "2", "text": "caf\xe9"}\n')
    with pytest.raises(IngestError, match=r"line 2: not UTF-8 text: undecodable byte 0xe9"):
        list(iter_beir_corpus(p))


def test_beir_empty_and_missing(tmp_path):
    (tmp_path / "corpus.jsonl").write_bytes(b"")
    with pytest.raises(IngestError, match="empty file"):
        list(iter_beir_corpus(tmp_path / "corpus.jsonl"))
    with pytest.raises(IngestError, match="file not found"):
        list(iter_beir_corpus(tmp_path / "missing" / "corpus.jsonl"))


def test_is_beir_corpus(tmp_path):
    assert is_beir_corpus(_write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "1", "text": "a"}]))
    assert is_beir_corpus(_write_jsonl(tmp_path / "scifact.jsonl", [{"_id": "1", "title": "", "text": "a"}]))
    assert not is_beir_corpus(_write_jsonl(tmp_path / "queries.jsonl", [{"query": "q", "id": 1}]))
    (tmp_path / "broken.jsonl").write_text("{nope\n")
    assert not is_beir_corpus(tmp_path / "broken.jsonl")
    (tmp_path / "notes.txt").write_text('{"_id": "1", "text": "a"}\n')
    assert not is_beir_corpus(tmp_path / "notes.txt")
    assert not is_beir_corpus(tmp_path / "absent.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    assert not is_beir_corpus(tmp_path / "dir.jsonl")


# --------------------------------------------------------------------------------------------------
# Garbled-text heuristic
# --------------------------------------------------------------------------------------------------

_PROSE = " ".join(ENGLISH) + " The agency estimates the following costs to comply with this proposed rule."


def _shift(text: str, k: int) -> str:
    return "".join(
        chr((ord(c) - 97 + k) % 26 + 97) if c.islower() else chr((ord(c) - 65 + k) % 26 + 65) if c.isupper() else c
        for c in text
    )


def test_garbled_reason_accepts_real_text():
    assert garbled_reason(_PROSE) is None
    assert garbled_reason("Alabama 18,870 23,022 22,650 859\nAlaska 209 3,062 3,209 191\n" * 20) is None
    assert garbled_reason("DHAW20190001 05/03/2019 CITIBANK - TRAVEL CBA CARD STAFF TRANSPORTATION 920.68\n" * 10) is None
    assert garbled_reason("") is None and garbled_reason("Figure 3 (cid:3)") is None  # too little to judge


def test_garbled_reason_flags_broken_encodings():
    assert "cid" in garbled_reason(" ".join(f"(cid:{i})" for i in range(60)))
    assert "private-use" in garbled_reason("".join(chr(0xE000 + ord(c)) if c != " " else c for c in _PROSE))
    assert "look like words" in garbled_reason("".join(chr(0x2200 + ord(c) - 0x20) if c != " " else c for c in _PROSE))
    assert "vowels" in garbled_reason(_shift(_PROSE, 3))  # "Wkh frpplwwhh uhylhzhg..."


# --------------------------------------------------------------------------------------------------
# Generated PDFs: layout, tables, garbled text, images
# --------------------------------------------------------------------------------------------------


def test_pdf_two_columns_read_column_by_column(tmp_path):
    left = ["Left column starts here and", "continues on this line and", "ends the left column."]
    right = ["Right column begins after", "the left one is finished."]
    content = text_ops(["A Heading Across The Page"], 72, 740, size=20) + text_ops(left, 72, 700) + text_ops(right, 320, 700)
    doc = load_document(_Pdf().page(content).write(tmp_path / "cols.pdf"))
    text = doc.pages[0].text
    assert doc.title == "A Heading Across The Page"  # no metadata title: first large-font line
    assert doc.pages[0].method == "text"
    assert (text.index("A Heading") < text.index("Left column starts") < text.index("ends the left column.")
            < text.index("Right column begins"))
    assert "Left column starts here and\ncontinues on this line and" in text


def test_pdf_ruled_table_rows_in_place(tmp_path):
    xs, ys = [72, 200, 300, 420], [600, 580, 560, 540]
    ops = text_ops(["Prices are listed below."], 72, 640)
    for y in ys:
        ops += line_ops(xs[0], y, xs[-1], y)
    for x in xs:
        ops += line_ops(x, ys[0], x, ys[-1])
    cells = [["Item", "Quantity", "Price"], ["Green tea", "2 boxes", "$7.00"], ["Oat cake", "12", "$4.50"]]
    for r, row in enumerate(cells):
        for c, val in enumerate(row):
            ops += text_ops([val], xs[c] + 4, ys[r] - 14, size=10)
    ops += text_ops(["Totals follow after the table."], 72, 500)
    doc = load_document(_Pdf().page(ops).write(tmp_path / "table.pdf"))
    page = doc.pages[0]
    assert page.method == "text+tables"
    assert "Item | Quantity | Price\nGreen tea | 2 boxes | $7.00\nOat cake | 12 | $4.50" in page.text
    assert page.text.index("Prices are listed") < page.text.index("Item | Quantity") < page.text.index("Totals follow")


def _scrambled_tounicode() -> bytes:
    """A ToUnicode CMap that maps every printable code except space to a math symbol: the PDF renders
    Helvetica letters but extracts as "∴∨∅ ∑∕..." — a broken font encoding."""
    return (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        b"/CMapName /Scrambled def /CMapType 2 def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n"
        b"2 beginbfrange <20> <20> <0020> <21> <7E> <2201> endbfrange\n"
        b"endcmap CMapName currentdict /CMap defineresource pop end end\n"
    )


def _garbled_pdf(tmp_path: Path) -> Path:
    return _Pdf(tounicode=_scrambled_tounicode()).page(text_ops(ENGLISH, 72, 700, size=16, leading=24)).write(
        tmp_path / "garbled.pdf")


def test_garbled_pdf_without_tesseract_keeps_text_and_warns(tmp_path, no_tesseract):
    doc = load_document(_garbled_pdf(tmp_path))
    assert doc.pages[0].method == "text"
    assert any(w.startswith("page 1: text layer looks garbled") and "OCR unavailable (tesseract not installed)" in w
               for w in doc.warnings), doc.warnings


@needs_tesseract
def test_garbled_pdf_is_ocrd(tmp_path):
    doc = load_document(_garbled_pdf(tmp_path))
    page = doc.pages[0]
    assert page.method == "ocr"
    assert "committee reviewed the annual budget" in page.text
    assert garbled_reason(page.text) is None


def _image_only_pdf(tmp_path: Path) -> Path:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=44)
    for i, line in enumerate(ENGLISH):
        draw.text((150, 200 + i * 70), line, fill=0, font=font)
    path = tmp_path / "scan.pdf"
    img.save(path, "PDF", resolution=200)
    return path


@needs_tesseract
def test_image_only_pdf_is_ocrd(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_THREAD_LIMIT", raising=False)
    doc = load_document(_image_only_pdf(tmp_path))
    page = doc.pages[0]
    assert page.method == "ocr"
    assert "public libraries" in page.text and "published twice" in page.text
    assert os.environ.get("OMP_THREAD_LIMIT") == "1"  # tesseract's threading is ~10x slower here


def test_image_only_pdf_without_tesseract(tmp_path, no_tesseract):
    with pytest.raises(IngestError, match=r"no extractable text.*OCR unavailable \(tesseract not installed\)"):
        load_document(_image_only_pdf(tmp_path))


def test_text_and_image_without_tesseract_warns_and_keeps_text(tmp_path, no_tesseract):
    content = text_ops(ENGLISH[:3], 72, 740) + b"q 300 0 0 150 72 400 cm /Im1 Do Q\n"
    pdf = _Pdf().with_image(60, 30, bytes([200]) * 1800).page(content)
    doc = load_document(pdf.write(tmp_path / "mixed.pdf"))
    assert doc.pages[0].method == "text" and "annual budget" in doc.pages[0].text
    assert doc.warnings == ["page 1: OCR unavailable (tesseract not installed); 1 image(s) not read, kept the text layer only"]


@needs_tesseract
def test_blank_image_gives_no_ocr_noise(tmp_path):
    content = text_ops(ENGLISH[:3], 72, 740) + b"q 300 0 0 150 72 400 cm /Im1 Do Q\n"
    doc = load_document(_Pdf().with_image(60, 30, bytes([200]) * 1800).page(content).write(tmp_path / "mixed.pdf"))
    assert doc.pages[0].method == "text" and doc.warnings == []


# --------------------------------------------------------------------------------------------------
# Real-world PDFs (examples/pdfs)
# --------------------------------------------------------------------------------------------------


@needs_examples
def test_federal_register_cost_table_rows(no_tesseract):
    doc = load_document(FR)
    assert doc.mime == "application/pdf" and doc.source == str(FR)
    assert [p.number for p in doc.pages] == list(range(1, 16))
    text = {p.number: p.text for p in doc.pages}
    header = "Action | Labor cost | Parts cost | Cost per product | Cost on U.S. operators"
    assert header in text[5] and header in text[6]
    assert "AFM revisions | 1 work-hour × $85 per hour = $85 | $0 | $85 | $6,205." in text[5]
    row = "MDS installation and verification, INOP marker removal. | 1 work-hour × $85 per hour = $85 | $0 | $85 | $6,205."
    assert row in text[5]
    assert ("Stabilizer wiring change | Up to 79 work-hours × $85 per hour = Up to $6,715. | Up to $3,790 | "
            "Up to $10,505 | Up to $766,865.") in text[6]
    assert "AOA sensor system test | 40 work-hours × $85 per hour = $3,400. | $0 | $3,400 | $248,200." in text[6]
    # the table sits where it is printed: after the paragraph that announces it
    assert text[5].index("costs to comply with this proposed AD:") < text[5].index(header)
    assert doc.pages[4].method == "text+tables"
    # three-column text comes out column by column, lines intact
    assert "SUMMARY: The FAA proposes to\nsupersede Airworthiness Directive (AD)" in text[1]
    # margin stamps printed sideways are not read as reversed noise
    assert "SLASOPORP" not in text[5]
    # without tesseract the image pages keep their text layer and say what was not read
    assert "page 8: OCR unavailable (tesseract not installed); 1 image(s) not read, kept the text layer only" in doc.warnings
    assert all(p.method != "ocr" for p in doc.pages)


def _single_page(src: Path, index: int, dest: Path) -> Path:
    import pypdf

    writer = pypdf.PdfWriter()
    writer.add_page(pypdf.PdfReader(src).pages[index])
    with dest.open("wb") as fh:
        writer.write(fh)
    return dest


@needs_examples
@needs_tesseract
def test_federal_register_page8_is_ocrd(tmp_path):
    doc = load_document(_single_page(FR, 7, tmp_path / "fr-p8.pdf"))
    page = doc.pages[0]
    assert page.method == "ocr"
    assert "Airspeed Unreliable" in page.text
    assert "If autopilot is engaged, disengage." in page.text
    assert "Federal Register / Vol. 85" in page.text  # the text-layer header is kept beside the OCR text
    assert garbled_reason(page.text) is None


@needs_examples
def test_senate_expenditures_text_layer_is_sound_and_kept():
    """The page's text layer is not garbled: its glyphs map to the right letters, but words are set
    1.4 pt apart in a 5 pt font, below pdfplumber's fixed 3 pt word gap, so a plain extract_text() runs
    them together ("DISTRICTDIRECTOR"). The loader splits words at 0.15 em instead and keeps the exact
    text layer; OCR at 200 dpi would be worse (it reads "37.499.96" for 37,499.96)."""
    import pdfplumber

    with pdfplumber.open(EXAMPLES / "senate-expenditures.pdf") as pdf:
        assert "DISTRICTDIRECTOR" in pdf.pages[0].extract_text()
    doc = load_document(EXAMPLES / "senate-expenditures.pdf")
    page = doc.pages[0]
    assert page.method == "text+tables" and doc.warnings == []
    assert garbled_reason(page.text) is None
    assert "BAIN, J MATTHEW | DISTRICT DIRECTOR | 37,499.96" in page.text
    assert ("DHAW20190001 | 05/03/2019 | CITIBANK - TRAVEL CBA CARD | 03/04/2019 | 03/06/2019 | STAFF TRANSPORTATION "
            "AIRFARE FOR E JOHNSON KANSAS CITY TO WASHINGTON DC AND RETURN | 920.68") in page.text
    assert "B-1191" not in page.text  # sideways page label


@needs_examples
def test_nics_table_rows():
    doc = load_document(EXAMPLES / "nics-background-checks-2015-11.pdf")
    text = doc.pages[0].text
    assert doc.pages[0].method == "text+tables"
    assert text.startswith("NICS Firearm Background Checks\nNovember - 2015")
    assert ("Alabama | 18,870 | 23,022 | 22,650 | 859 | 1,178 | 0 | 14 | 15 | 0 | 2,179 | 2,307 | 11 | 0 | 0 | 0 | | "
            "| 13 | 14 | 0 | 3 | 2 | 0 | 71,137") in text
    assert "State / Territory | Permit | Handgun | Long Gun | *Other" in text


@needs_examples
def test_ag_energy_table_rows_and_charts_apart():
    doc = load_document(EXAMPLES / "ag-energy-round-up-2017-02-24.pdf")
    text = doc.pages[0].text
    assert doc.title == "National Ag Energy"
    assert "Iowa | 1.35 - 1.42 | 1.38 - 1.43 | 1.27 - 1.35 | Iowa Ethanol" in text
    assert "Midwest (Food Grade) | 37.88 | 37.75 | 39.75 - 40.75 | Central Illinois Corn Processor" in text
    assert "NYMEX Crude Oil ($/barrel) | 54.45 | 53.36 | 30.77 | CME Group" in text
    # the chart panels beside the table do not leak tick labels into its rows
    iowa = next(ln for ln in text.splitlines() if ln.startswith("Iowa | 1.35"))
    assert iowa.count("|") == 4


@needs_examples
def test_amt_handbook_two_columns_and_figures():
    doc = load_document(EXAMPLES / "amt_handbook_sample.pdf")
    text = doc.pages[0].text
    assert doc.title == "AMT General Handbook"
    assert doc.pages[0].method == "text"  # photos are not turned into OCR noise
    # the left column ends mid-sentence and the right column continues it
    assert text.index("The wing type that is") < text.index("the most common ranges in size for No. 6 up to 1⁄4 inch")
    assert text.index("Boots Self-Locking Nut") < text.index("Stainless Steel Self-Locking Nut")
    assert "Figure 7-27. Stainless steel self-locking nut." in text


@needs_examples
@needs_tesseract
@pytest.mark.slow
def test_federal_register_full_load_with_ocr():
    t0 = time.perf_counter()
    doc = load_document(FR)
    elapsed = time.perf_counter() - t0
    assert [p.number for p in doc.pages if p.method == "ocr"] == list(range(7, 15))
    assert doc.warnings == []
    assert "Airspeed Unreliable" in doc.pages[7].text
    assert elapsed < 60, f"took {elapsed:.1f} s"


# --------------------------------------------------------------------------------------------------
# Sideways pages and crop boxes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("angle", [90, 270])
def test_sideways_text_page_reads_in_order(tmp_path, angle):
    import pypdf

    writer = pypdf.PdfWriter()
    writer.append(pypdf.PdfReader(io.BytesIO(_Pdf().page(text_ops(ENGLISH, 72, 700)).bytes())))
    writer.pages[0].rotate(angle)
    p = tmp_path / "sideways.pdf"
    with p.open("wb") as fh:
        writer.write(fh)
    text = load_document(p).pages[0].text
    assert text.startswith("The committee reviewed the annual budget and\napproved new funding")


@needs_tesseract
def test_sideways_scan_is_turned_before_ocr(tmp_path):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=44)
    for i, line in enumerate(ENGLISH * 2):
        draw.text((150, 200 + i * 70), line, fill=0, font=font)
    path = tmp_path / "sideways-scan.pdf"
    img.rotate(90, expand=True).save(path, "PDF", resolution=200)
    page = load_document(path).pages[0]
    assert page.method == "ocr" and "public libraries" in page.text


@needs_examples
def test_crop_box_is_respected(tmp_path):
    """Text outside the crop box is hidden in viewers and is not read."""
    import pypdf

    writer = pypdf.PdfWriter()
    page = writer.add_page(pypdf.PdfReader(FR).pages[0])
    page.cropbox.lower_left = (40, 40)
    page.cropbox.upper_right = (572, 745)  # hides the page number "47698" printed at the top
    p = tmp_path / "cropped.pdf"
    with p.open("wb") as fh:
        writer.write(fh)
    text = load_document(p).pages[0].text
    assert "47698" not in text
    assert text.startswith("Proposed Rules")
    assert "SUMMARY: The FAA proposes to" in text
