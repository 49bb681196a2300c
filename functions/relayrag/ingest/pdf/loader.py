"""One PDF file to a `LoadedDocument`: open (encryption, corruption), then page by page: words, tables,
OCR of what the text layer lacks, reading order."""

from __future__ import annotations

import contextlib
import io
import logging
import re
from pathlib import Path
from typing import Any

from relayrag.errors import IngestError
from relayrag.ingest.document import _MIME, LoadedDocument, Page
from relayrag.ingest.limits import DecodeBudget, FileBudget, decode_budget, install_pdf_decode_bounds
from relayrag.ingest.pdf import ocr
from relayrag.ingest.pdf.garble import garbled_reason
from relayrag.ingest.pdf.layout import _El, _inside, _layout_text
from relayrag.ingest.pdf.ocr import (
    _TESSERACT_MISSING,
    _ocr_images,
    _ocr_page,
    _OcrFailed,
    _Renderer,
)
from relayrag.ingest.pdf.tables import _find_tables, find_unruled_tables
from relayrag.ingest.pdf.words import (
    _chars_to_words,
    _drop_stray_rotated_chars,
    _first_heading,
    _page_words,
    _text_rotation,
    _View,
)


@contextlib.contextmanager
def _quiet_pdf_libs():
    """pdfminer and pypdf log every recoverable oddity as a warning; keep them quiet while loading."""
    loggers = [logging.getLogger(n) for n in ("pdfminer", "pypdf")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, lvl in zip(loggers, levels):
            lg.setLevel(lvl)


_MAGIC = (  # what a file named .pdf is instead, by its first bytes
    (b"PK\x03\x04", "it is a ZIP archive (a .docx, .xlsx, .epub or .zip renamed?)"),
    (b"PK\x05\x06", "it is an empty ZIP archive"),
    (b"\x1f\x8b", "it is gzip-compressed"),
    (b"\x89PNG", "it is a PNG image"),
    (b"\xff\xd8\xff", "it is a JPEG image"),
    (b"GIF8", "it is a GIF image"),
    (b"\xd0\xcf\x11\xe0", "it is an old Office document (.doc/.xls)"),
    (b"{\\rtf", "it is an RTF document"),
)


def _not_pdf_reason(head: bytes) -> str:
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    return "it looks like HTML: a saved web page?" if head.lstrip()[:1] == b"<" else "random bytes named .pdf?"


def load_pdf(path: Path, data: bytes, budget: FileBudget | None = None) -> LoadedDocument:
    """`budget`: the file's time budget, checked before each page (default: DEFAULT_FILE_BUDGET_S).
    Decoded stream bytes are bounded per stream, page and file (relayrag.ingest.limits)."""
    import pdfplumber

    from relayrag.settings import load_settings

    name = path.name
    head = data[:1024]
    if b"%PDF-" not in head:
        raise IngestError(f"{name}: not a PDF: file does not start with %PDF- ({_not_pdf_reason(head)})")
    install_pdf_decode_bounds()
    budget = budget or FileBudget(name)
    with decode_budget(name) as decoded:
        return _load_pdf(path, data, name, budget, decoded, pdfplumber, load_settings())


def _load_pdf(path: Path, data: bytes, name: str, budget: FileBudget, decoded: DecodeBudget, pdfplumber,
              settings) -> LoadedDocument:
    warnings: list[str] = []
    pages: list[Page] = []
    with _quiet_pdf_libs():
        _check_encryption(data, name)
        try:
            pdf = pdfplumber.open(io.BytesIO(data))
            n_pages = len(pdf.pages)
        except Exception as e:  # pdfminer wraps everything in PdfminerException
            raise (_wrapped_refusal(e) or _pdf_open_error(e, data, name)) from None
        renderer = _Renderer(data, settings.ocr_dpi)
        try:
            if n_pages == 0:
                raise IngestError(f"{name}: PDF has no pages")
            title = _pdf_meta_title(pdf.metadata)
            for index, page in enumerate(pdf.pages):
                number = index + 1
                budget.check(f"page {number} of {n_pages}")
                decoded.start_page(number)
                try:
                    result = _extract_pdf_page(page, index, renderer, settings.ocr_lang, warnings)
                    if result is not None and not title and number == 1:
                        title = result[1]
                    if result is None or not result[0].text.strip():
                        if not any(w.startswith(f"page {number}:") for w in warnings):
                            warnings.append(f"page {number}: no text (blank, or images without readable text); skipped")
                        continue
                    pages.append(result[0])
                except IngestError:
                    raise
                except Exception as e:  # one bad page must not lose the document
                    refusal = _wrapped_refusal(e)
                    if refusal is not None:  # a bound (decompression bomb) is the file's reason, not the page's
                        raise refusal from None
                    warnings.append(f"page {number}: could not be read ({type(e).__name__}: {e}); skipped")
                finally:
                    page.close()
        finally:
            renderer.close()
            pdf.close()
    if not pages:
        why = "; ".join(warnings[:3]) + (" ..." if len(warnings) > 3 else "")
        raise IngestError(f"{name}: no extractable text in {n_pages} page(s) ({why})")
    return LoadedDocument(
        source=str(path), title=title or path.stem, pages=pages, mime=_MIME[".pdf"], warnings=warnings
    )


def _wrapped_refusal(exc: BaseException) -> IngestError | None:
    """A DecodeBombError (or other IngestError) that pdfplumber/pdfminer wrapped in their own exception."""
    seen, e = 0, exc  # type: int, BaseException | None
    while e is not None and seen < 5:
        if isinstance(e, IngestError):
            return e
        inner = e.args[0] if getattr(e, "args", None) and isinstance(e.args[0], BaseException) else None
        e, seen = inner or e.__cause__ or e.__context__, seen + 1
    return None


def _check_encryption(data: bytes, name: str) -> None:
    """Raise IngestError for a PDF that needs a password. PDFs encrypted with an empty user password
    (owner-password only: printing/copying restrictions) open fine and pass."""
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        encrypted = reader.is_encrypted
    except Exception:
        return  # structure problems are reported by the pdfplumber open that follows
    if not encrypted:
        return
    try:
        ok = reader.decrypt("")
    except Exception:
        return  # e.g. AES without the `cryptography` package: let pdfminer decide
    if not ok:
        raise IngestError(f"{name}: PDF is encrypted (password protected); decrypt it first")


def _pdf_open_error(e: Exception, data: bytes, name: str) -> IngestError:
    inner = getattr(e, "args", None) and e.args[0] if type(e).__name__ == "PdfminerException" else e
    inner = inner if isinstance(inner, BaseException) else e
    kind = type(inner).__name__
    if "Password" in kind or "Encrypt" in kind:
        return IngestError(f"{name}: PDF is encrypted (password protected); decrypt it first")
    msg = str(inner) or kind
    if kind not in msg:
        msg = f"{kind}: {msg}" if str(inner) else kind
    hint = "" if b"%%EOF" in data[-2048:] else " (no %%EOF marker at the end: the file looks cut short)"
    return IngestError(f"{name}: PDF is truncated or corrupt: {msg}{hint}")


def _pdf_meta_title(meta: dict | None) -> str:
    raw = (meta or {}).get("Title")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return ""
    title = " ".join(raw.replace("\x00", "").split())
    title = re.sub(r"^Microsoft (Word|PowerPoint|Excel) - ", "", title)
    if not title or title.lower() in {"untitled", "title", "document"}:
        return ""
    if re.search(r"\.(docx?|pdf|indd|pptx?|xlsx?|tex|dvi|rtf|odt|qxd)$", title, re.I):
        return ""
    return title


def _extract_pdf_page(page: Any, index: int, renderer: _Renderer, lang: str, warnings: list[str]):
    """One PDF page -> (Page or None, first heading or ""). Appends warnings for what it could not read."""
    number = index + 1
    if tuple(page.cropbox) != tuple(page.bbox):
        try:  # what viewers (and pypdfium2) show is the crop box: text outside it is hidden
            page = page.crop(page.cropbox)
        except ValueError:
            pass
    page = _drop_stray_rotated_chars(page)
    chars = page.chars
    view = _View(float(page.width), float(page.height), float(page.bbox[0]), float(page.bbox[1]), _text_rotation(chars))
    if view.rot:
        # Read the sideways text in reading space; the few upright lines (a running header) follow it.
        turned = []
        for c in chars:
            if not c.get("upright", True):
                x0, top, x1, bottom = view.box(c["x0"], c["top"], c["x1"], c["bottom"])
                turned.append({**c, "x0": x0, "top": top, "x1": x1, "bottom": bottom, "upright": True})
        words = _chars_to_words(turned)
        extra = _chars_to_words([c for c in chars if c.get("upright", True)])
    else:
        words, extra = _page_words(page), []
    heading = _first_heading(words) if index == 0 else ""
    raw = " ".join(w.text for w in words + extra)

    reason = garbled_reason(raw) if raw else None
    if not raw and not (page.images or page.curves or page.rects or page.lines):
        warnings.append(f"page {number}: blank (nothing drawn on it); skipped")
        return None
    if reason or not raw:
        # Garbled text layer, or none at all (scan, text drawn as outlines): OCR the whole page.
        if not ocr._tesseract_available():
            if reason:
                warnings.append(f"page {number}: text layer looks garbled ({reason}); {_TESSERACT_MISSING}, kept it")
            else:
                warnings.append(f"page {number}: no text layer; {_TESSERACT_MISSING}; skipped")
                return None
        else:
            try:
                image, _ = renderer.page_image(index)
                text = _ocr_page(view.image(image), lang, known_orientation=bool(view.rot)).text
            except _OcrFailed as e:
                warnings.append(f"page {number}: OCR failed ({e}); " + ("kept the garbled text layer" if reason else "skipped"))
                text = None
            if text is not None:
                if not text.strip():
                    why = f" (text layer garbled: {reason})" if reason else ""
                    warnings.append(f"page {number}: no text after OCR{why}; skipped")
                    return None
                return Page(number, text, "ocr"), heading

    tables = _find_tables(page, words) if not view.rot else []  # pdfplumber's finder works in page space
    tables += find_unruled_tables(words, [t.bbox for t in tables]) if not view.rot else []  # text in columns
    elements: list[_El] = []
    for t in tables:
        elements.append(_El(*t.bbox, text="\n".join(t.rows), block=True))
    in_table = [any(_inside(w, t.bbox) for t in tables) for w in words]
    elements.extend(w for w, used in zip(words, in_table) if not used)

    ocr_blocks, ocr_notes = _ocr_images(page, index, words, renderer, lang, view)
    elements.extend(ocr_blocks)
    warnings.extend(f"page {number}: {n}" for n in ocr_notes)

    text = _layout_text(elements)
    if extra:
        text = (text + "\n\n" + _layout_text(extra)).strip()
    method = "ocr" if ocr_blocks else ("text+tables" if tables else "text")
    return Page(number, text, method), heading
