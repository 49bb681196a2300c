"""Load one file into readable text, page by page.

Formats and sources of text:

- PDF (`application/pdf`): the text layer via pdfplumber's characters, grouped into words with a
  font-size-relative gap (0.15 em) and read in reading order (multi-column pages are cut into columns
  and blocks by a recursive XY-cut; sideways pages are turned; text outside the crop box is dropped),
  with ruled tables rendered as rows ("cell | cell | cell", one row per line) placed where the table
  sits on the page. Raster images that the text layer does not cover are OCR'd (pypdfium2 renders the
  page at `settings.ocr_dpi`, tesseract reads it in `settings.ocr_lang`); a page whose text layer looks
  garbled (see `garbled_reason`) or that has none is OCR'd whole. Without tesseract the text layer is
  kept and a warning says what was not read.
- Markdown (`text/markdown`): markup stripped with markdown-it-py (tables kept as rows; raw <script>/<style>
  content dropped, block or inline, line breaks kept); title = first level-1 heading.
- HTML (`text/html`): beautifulsoup4; script/style/nav dropped; title from `<title>`.
- Plain text (`text/plain`): as is, tags included (a text file is never rendered: its tags are its text);
  title = file stem.
- BEIR corpora (`application/x-beir`): `corpus.jsonl`, one `{"_id", "title", "text"}` object per line.

Text files may be UTF-8 (with or without a byte-order mark) or UTF-16/UTF-32 with a byte-order mark.

Errors: input that cannot be read raises `relayrag.errors.IngestError` whose message says what is wrong
and why (empty file, not a PDF, encrypted, truncated, undecodable bytes, no text...). Problems that lose
only part of a document go to `LoadedDocument.warnings` ("page 9: OCR unavailable (...)").

Coordinates below are PDF points (1/72 inch) in pdfplumber's page space: origin at the top-left corner,
`top`/`bottom` measured downwards.
"""

from __future__ import annotations

from pathlib import Path

from relayrag.errors import IngestError
from relayrag.ingest.beir import is_beir_corpus, iter_beir_corpus
from relayrag.ingest.decode import _decode_html, _decode_text, _read_bytes
from relayrag.ingest.document import (
    _MIME,
    IMAGE_SUFFIXES,
    SUPPORTED_SUFFIXES,
    LoadedDocument,
    Page,
)
from relayrag.ingest.html import _html_to_text
from relayrag.ingest.image import load_image
from relayrag.ingest.limits import MAX_PDF_FILE_BYTES, MAX_TEXT_FILE_BYTES, FileBudget, check_size
from relayrag.ingest.markdown import _markdown_to_text
from relayrag.ingest.pdf import garbled_reason, load_pdf

__all__ = [
    "Page",
    "LoadedDocument",
    "SUPPORTED_SUFFIXES",
    "load_document",
    "iter_beir_corpus",
    "is_beir_corpus",
    "garbled_reason",
]


def load_document(path: Path, budget: FileBudget | None = None) -> LoadedDocument:
    """Load a PDF, Markdown, HTML, plain-text or image file (PNG, JPEG, TIFF: OCR; see `SUPPORTED_SUFFIXES`).

    Returns a `LoadedDocument` whose `source` is `str(path)`. Raises `IngestError` (message: what + why)
    for a missing/unreadable/empty file, an unsupported suffix, bytes that are not what the suffix says,
    an encrypted or corrupt PDF, undecodable text, a file with no extractable text at all, and a file past
    a per-file budget (relayrag.ingest.limits: size, time `budget`, PDF decompressed bytes).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        hint = "; a BEIR corpus (.jsonl) is read with iter_beir_corpus" if suffix == ".jsonl" else ""
        raise IngestError(
            f"{path.name}: unsupported file type {suffix or '(no suffix)'}; supported: "
            f"{', '.join(sorted(SUPPORTED_SUFFIXES))}{hint}"
        )
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # _read_bytes says why
    if suffix == ".pdf":
        check_size(path.name, size, MAX_PDF_FILE_BYTES, "PDF")
    elif suffix in IMAGE_SUFFIXES:
        check_size(path.name, size, MAX_PDF_FILE_BYTES, "image")
    else:
        check_size(path.name, size, MAX_TEXT_FILE_BYTES, "text, Markdown and HTML")
    data = _read_bytes(path)
    if not data:
        raise IngestError(f"{path.name}: empty file (0 bytes)")
    mime = _MIME[suffix]
    if suffix == ".pdf":
        return load_pdf(path, data, budget)
    if suffix in IMAGE_SUFFIXES:
        from relayrag.settings import load_settings
        return load_image(path, data, load_settings().ocr_lang, budget)
    if suffix in (".html", ".htm"):
        text, title = _html_to_text(_decode_html(data, path.name))
    elif suffix in (".md", ".markdown"):
        text, title = _markdown_to_text(_decode_text(data, path.name))
    else:
        text, title = _decode_text(data, path.name).strip("\n"), None
    if not text.strip():
        raise IngestError(f"{path.name}: no extractable text (the file holds only markup or whitespace)")
    return LoadedDocument(
        source=str(path), title=title or path.stem, pages=[Page(1, text, "text")], mime=mime, warnings=[]
    )
