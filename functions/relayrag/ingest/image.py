"""Image files (PNG, JPEG, TIFF) as one-page documents: the text comes from OCR (tesseract), and the image
itself becomes the document's page image (relayrag.ingest.pages), so page-image search can find it.

A multi-frame TIFF is read frame by frame, one page per frame (a scanned form of several sheets).
Errors: bytes that Pillow cannot open as the suffix says, or an image past the decompression-bomb limit,
raise IngestError; an image with no readable text (a photo, a chart without labels) still ingests as a page
with its file name as text, with a warning, so the page image can be found by page-image search.
"""

from __future__ import annotations

from pathlib import Path

from relayrag.errors import IngestError
from relayrag.ingest.document import _MIME, LoadedDocument, Page
from relayrag.ingest.limits import FileBudget

MAX_IMAGE_PIXELS = 60_000_000  # the PDF renderer's cap (ingest.pdf.ocr._Renderer.MAX_PIXELS)
MAX_FRAMES = 500


def open_frames(data: bytes, name: str) -> list:
    """The frames of an image file as RGB PIL images (one for PNG/JPEG, each frame of a TIFF).
    Raises IngestError when the bytes are not an image or the image is too large to decode safely."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            w, h = im.size
            if w * h > MAX_IMAGE_PIXELS:
                raise IngestError(f"{name}: image of {w}x{h} pixels is larger than the {MAX_IMAGE_PIXELS:,} pixels "
                                  f"relayrag decodes")
            frames = []
            for i in range(min(getattr(im, "n_frames", 1), MAX_FRAMES)):
                im.seek(i)
                frames.append(im.convert("RGB"))
            return frames
    except IngestError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise IngestError(f"{name}: not a readable image ({type(exc).__name__}: {exc})") from None
    except (OSError, ValueError, SyntaxError) as exc:  # truncated or corrupt data
        raise IngestError(f"{name}: corrupt image ({exc})") from None


def load_image(path: Path, data: bytes, lang: str = "eng", budget: FileBudget | None = None) -> LoadedDocument:
    """An image file as a LoadedDocument: one Page per frame, text by OCR ("ocr"), or the file's stem with a
    warning when OCR is unavailable or finds nothing (the page is still indexed for its image)."""
    from relayrag.ingest.pdf.ocr import _TESSERACT_MISSING, _OcrFailed, _ocr_page, _tesseract_available

    frames = open_frames(data, path.name)
    pages, warnings = [], []
    for i, frame in enumerate(frames, start=1):
        if budget is not None:
            budget.check(f"page {i}")
        text = ""
        if not _tesseract_available():
            warnings.append(f"page {i}: {_TESSERACT_MISSING}; indexed by its file name only")
        else:
            try:
                text = _ocr_page(frame, lang).text.strip()
            except _OcrFailed as exc:
                warnings.append(f"page {i}: OCR failed ({exc}); indexed by its file name only")
            else:
                if not text:
                    warnings.append(f"page {i}: OCR found no text; indexed by its file name only")
        pages.append(Page(i, text or path.stem.replace("_", " ").replace("-", " "), "ocr" if text else "name"))
    return LoadedDocument(source=str(path), title=path.stem, pages=pages, mime=_MIME[path.suffix.lower()],
                          warnings=warnings)
