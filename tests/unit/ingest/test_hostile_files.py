"""Hostile files (issue 10 items 9, 10, 14): quadratic HTML, PDF decompression bombs, per-file budgets,
files that are something else than their suffix says. Each gets a one-line reason; nothing else is lost."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from relayrag.errors import IngestError
from relayrag.ingest import limits, loaders
from tests.unit.ingest.test_loaders import ENGLISH, _Pdf, text_ops

REPO = Path(__file__).resolve().parents[3]


class _FlatePdf(_Pdf):
    """_Pdf whose page content streams are FlateDecode-compressed (given already compressed)."""

    def __init__(self, compressed_pages: list[bytes]):
        super().__init__()
        self.compressed = compressed_pages

    def bytes(self) -> bytes:
        raw = super().bytes()
        for page in self.compressed:  # placeholders written by super(): swap in the compressed bodies
            marker = b"<< /Length 11 >>\nstream\nPLACEHOLDER\nendstream"
            raw = raw.replace(marker, b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(page) + page
                              + b"\nendstream", 1)
        return _fix_xref(raw)


def _fix_xref(raw: bytes) -> bytes:
    """Recompute the xref offsets after the bodies changed length."""
    import re
    body, _, _ = raw.partition(b"xref\n")
    offsets = [m.start() for m in re.finditer(rb"(?m)^\d+ 0 obj\n", body)]
    n = len(offsets) + 1
    out = bytearray(body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % n
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (n, xref)
    return bytes(out)


def _spaces_bomb(mib: int) -> bytes:
    c = zlib.compressobj(9)
    block = b" " * 2**20
    return b"".join(c.compress(block) for _ in range(mib)) + c.flush()


def _flate_pdf(path: Path, pages: list[bytes]) -> Path:
    pdf = _FlatePdf(pages)
    for _ in pages:
        pdf.page(b"PLACEHOLDER")
    return pdf.write(path)


def test_pdf_decompression_bomb_is_refused_in_bounded_memory(tmp_path):
    """A one-page PDF whose content stream inflates to 512 MiB of spaces (a ~0.5 MB file): refused with a
    reason, and the loading process stays far below the stream's size (peak RSS measured in a child)."""
    bomb = _flate_pdf(tmp_path / "bomb.pdf", [_spaces_bomb(512)])
    assert bomb.stat().st_size < 2 * 2**20
    code = (
        "import json, resource, sys\n"
        "from pathlib import Path\n"
        "from relayrag.ingest import loaders\n"
        "import pdfplumber, pypdf, pypdfium2  # the loader's libraries, loaded before the baseline\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "try:\n"
        "    loaders.load_document(Path(sys.argv[1])); err = None\n"
        "except Exception as e:\n"
        "    err = f'{type(e).__name__}: {e}'\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps({'error': err, 'base_mb': base, 'rss_mb': peak}))\n")
    r = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["error"] and out["error"].startswith("DecodeBombError: bomb.pdf: a Flate stream on page 1 "
                                                    "decompresses past 64 MiB per stream"), out
    assert out["rss_mb"] - out["base_mb"] < 300, out  # at most one bounded (64 MiB) stream and its parsing


def test_a_compressed_pdf_within_the_bounds_loads(tmp_path):
    pdf = _flate_pdf(tmp_path / "ok.pdf", [zlib.compress(text_ops(ENGLISH, 72, 700))])
    doc = loaders.load_document(pdf)
    assert "public libraries" in doc.pages[0].text


def test_per_file_decoded_bytes_are_bounded_across_pages(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_PDF_DECODED_BYTES", 3 * 2**20)
    page = zlib.compress(text_ops(ENGLISH, 72, 700) + b" " * (2 * 2**20))
    pdf = _flate_pdf(tmp_path / "many.pdf", [page, page, page])
    with pytest.raises(limits.DecodeBombError, match=r"many.pdf: a Flate stream on page 2 .* 3 MiB per file"):
        loaders.load_document(pdf)


def test_time_budget_stops_a_pdf_between_pages(tmp_path):
    pdf = _Pdf()
    for _ in range(5):
        pdf.page(text_ops(ENGLISH, 72, 700))
    path = pdf.write(tmp_path / "slow.pdf")
    with pytest.raises(limits.BudgetExceeded, match=r"slow.pdf: stopped at page 1 of 5: over the per-file time "
                                                    r"budget of 0 s"):
        loaders.load_document(path, limits.FileBudget("slow.pdf", 0.0))
    assert len(loaders.load_document(path, limits.FileBudget("slow.pdf", 60.0)).pages) == 5


def test_text_files_past_the_size_budget_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(loaders, "MAX_TEXT_FILE_BYTES", 1000)
    big = tmp_path / "big.html"
    big.write_text("<p>" + "x " * 1000 + "</p>", encoding="utf-8")
    with pytest.raises(IngestError, match=r"big.html: file too large for the text, Markdown and HTML loader"):
        loaders.load_document(big)


def test_deeply_nested_html_is_walked_without_editing_the_tree(tmp_path, monkeypatch):
    """The old converter inserted separators into the tree (bs4 insert_after: quadratic, 8,000 nested divs
    took 28 s); the walk must not edit the tree at all, and must not recurse (20,000 levels)."""
    from bs4 import Tag
    calls = []
    for name in ("insert_before", "insert_after", "replace_with", "decompose", "extract"):
        real = getattr(Tag, name)
        monkeypatch.setattr(Tag, name, lambda self, *a, _n=name, _r=real, **k: (calls.append(_n), _r(self, *a, **k))[1])
    deep = tmp_path / "deep.html"
    deep.write_text("<div>" * 20000 + "<p>the bottom</p><table><tr><td>a</td><td>b</td></tr></table>"
                    + "</div>" * 20000, encoding="utf-8")
    doc = loaders.load_document(deep)
    assert doc.pages[0].text.splitlines() == ["the bottom", "", "a | b"]
    assert calls == []


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("word/document.xml", "<w:document/>")


@pytest.mark.parametrize("make, reason", [
    (lambda p: _zip(p), "ZIP archive"),
    (lambda p: zipfile.ZipFile(p, "w").close(), "empty ZIP archive"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64), "PNG image"),
    (lambda p: p.write_bytes(b"\x1f\x8b\x08" + b"\0" * 64), "gzip"),
])
def test_other_formats_named_pdf_say_what_they_are(tmp_path, make, reason):
    """Issue 10 item 14: a zip renamed .pdf was reported as "random bytes"."""
    p = tmp_path / "report.pdf"
    make(p)
    with pytest.raises(IngestError, match=reason):
        loaders.load_document(p)
