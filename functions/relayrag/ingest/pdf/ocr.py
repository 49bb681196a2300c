"""OCR with pypdfium2 (rendering) and tesseract (reading): whole pages and the raster images on a page."""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from relayrag.ingest.decode import _tidy_lines
from relayrag.ingest.pdf.garble import _EDGE_PUNCT, _looks_like_word
from relayrag.ingest.pdf.layout import _El, _inside
from relayrag.ingest.pdf.words import _View

MIN_OCR_IMAGE_FRACTION = 0.02  # images smaller than 2% of the page area are not OCR'd
TEXT_COVERED_WORDS = 25  # an image with this many text-layer words on it already has a text layer


@functools.lru_cache(maxsize=1)
def _tesseract_available() -> bool:
    """True when the tesseract binary runs (pytesseract importable and `tesseract --version` works)."""
    try:
        import pytesseract

        pytesseract.get_tesseract_version()
        return True
    except Exception:
        return False


_TESSERACT_MISSING = "OCR unavailable (tesseract not installed)"


class _OcrFailed(Exception):
    """tesseract ran but failed (missing language data, timeout...)."""


@dataclass
class _Ocr:
    text: str  # lines kept; a blank line between tesseract's blocks/paragraphs
    conf: float  # mean word confidence 0-100, weighted by word length (0 when no words)


def _ocr_image(image: Any, lang: str) -> _Ocr:
    """Run tesseract (page segmentation mode 3: automatic, finds columns) on a PIL image."""
    import pytesseract

    # tesseract's OpenMP threading makes it ~10x slower on small VMs (DESIGN.md §6); respect a user value.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        data = pytesseract.image_to_data(image, lang=lang, config="--psm 3", timeout=180,
                                         output_type=pytesseract.Output.DICT)
    except RuntimeError as e:  # pytesseract's timeout
        raise _OcrFailed(f"tesseract timed out ({e})") from None
    except pytesseract.TesseractError as e:
        msg = " ".join(str(e.message or e).split())[:200]
        raise _OcrFailed(f"tesseract failed: {msg}") from None
    parts: list[str] = []
    prev = None
    weighted = letters = 0.0
    for i, word in enumerate(data["text"]):
        word = (word or "").strip()
        if data["level"][i] != 5 or not word:
            continue
        key = (data["page_num"][i], data["block_num"][i], data["par_num"][i], data["line_num"][i])
        if prev is not None:
            parts.append("\n\n" if key[:3] != prev[:3] else "\n" if key != prev else " ")
        parts.append(word)
        prev = key
        conf = float(data["conf"][i])
        if conf >= 0:
            weighted += conf * len(word)
            letters += len(word)
    return _Ocr(_tidy_lines("".join(parts)), weighted / letters if letters else 0.0)


def _ocr_page(image: Any, lang: str, known_orientation: bool = False) -> _Ocr:
    """OCR an image. When the result is not readable (`_ocr_text_readable`), the image may be sideways
    or upside down: ask tesseract's orientation detection (`--psm 0`, osd data) and read it turned by
    the angle it reports, then by that angle + 180 degrees; without a usable detection try 90, 270 and
    180. The first readable turn wins, else the most confident read."""
    first_try = _ocr_image(image, lang)
    if known_orientation or not first_try.text or _ocr_text_readable(first_try) or min(image.size) < 100:
        return first_try
    import pytesseract

    try:
        osd = pytesseract.image_to_osd(image, config="--psm 0", output_type=pytesseract.Output.DICT, timeout=60)
        first = int(osd.get("rotate", 0)) % 360
        angles = [first, (first + 180) % 360] if first else [180]
    except Exception:  # too little text to decide, or no osd data
        angles = [90, 270, 180]
    best = first_try
    for angle in angles:
        turned = _ocr_image(image.rotate(-angle, expand=True), lang)  # angles are clockwise
        if _ocr_text_readable(turned):
            return turned
        if turned.conf > best.conf:
            best = turned
    return best


class _Renderer:
    """Renders pages of one PDF with pypdfium2 at a given DPI, lazily, one page image cached."""

    MAX_PIXELS = 60_000_000

    def __init__(self, data: bytes, dpi: int):
        self.data, self.dpi = data, dpi
        self._doc: Any = None
        self._cache: tuple[int, Any, float] | None = None

    def page_image(self, index: int) -> tuple[Any, float]:
        """(PIL image of page `index`, pixels per point)."""
        if self._cache and self._cache[0] == index:
            return self._cache[1], self._cache[2]
        import pypdfium2 as pdfium

        if self._doc is None:
            self._doc = pdfium.PdfDocument(self.data)
        page = self._doc[index]
        try:
            w, h = page.get_size()
            scale = self.dpi / 72.0
            if w * h * scale * scale > self.MAX_PIXELS:
                scale = math.sqrt(self.MAX_PIXELS / (w * h))
            image = page.render(scale=scale).to_pil()
        finally:
            page.close()
        self._cache = (index, image, scale)
        return image, scale

    def close(self) -> None:
        self._cache = None
        if self._doc is not None:
            self._doc.close()
            self._doc = None


def _ocr_text_readable(ocr: "_Ocr") -> bool:
    """OCR output counts as text (not photo noise, not a sideways or upside-down read) when tesseract's
    mean word confidence (weighted by word length) is >= 60 — upright text measures 90-96, the same
    text turned 90/180 degrees about 26 — at least half of its digit-free tokens look like words (see
    `garbled_reason`), and at least two of those have 3+ letters."""
    if ocr.conf < 60:
        return False
    toks = [t.strip(_EDGE_PUNCT) for t in re.split(r"[\s/–—]+", ocr.text)]
    toks = [t for t in toks if t and not any(c.isdigit() for c in t)]
    if not toks:
        return False
    good = [t for t in toks if _looks_like_word(t)]
    return len(good) / len(toks) >= 0.5 and sum(1 for t in good if len(t) >= 3) >= 2


def _ocr_images(page: Any, index: int, words: list[_El], renderer: _Renderer, lang: str,
                view: _View) -> tuple[list[_El], list[str]]:
    """OCR the page's raster images that the text layer does not cover.

    Candidates: images covering >= 2% of the page, with fewer than `TEXT_COVERED_WORDS` text-layer words
    on them (more means a searchable scan or a background: the text layer already has the text). Words
    of the text layer drawn over an image (labels) are whited out before OCR so they are not read twice.
    OCR text that does not read as words (photos, diagrams) is dropped. Coordinates are in `view`'s
    reading space. Returns (blocks, notes)."""
    W, H = view.size
    ox, oy = view.origin
    boxes: list[tuple[float, float, float, float]] = []
    for im in page.images:
        x0, top, x1, bottom = view.box(im["x0"], im["top"], im["x1"], im["bottom"])
        x0, top, x1, bottom = max(x0, ox), max(top, oy), min(x1, ox + W), min(bottom, oy + H)
        if x1 - x0 < 24 or bottom - top < 12 or (x1 - x0) * (bottom - top) < MIN_OCR_IMAGE_FRACTION * W * H:
            continue
        box = (x0, top, x1, bottom)
        if any(all(abs(a - b) < 2 for a, b in zip(box, other)) for other in boxes):
            continue
        if sum(1 for w in words if _inside(w, box, 0)) >= TEXT_COVERED_WORDS:
            continue
        boxes.append(box)
    if not boxes:
        return [], []
    if not _tesseract_available():
        return [], [f"{_TESSERACT_MISSING}; {len(boxes)} image(s) not read, kept the text layer only"]
    image, scale = renderer.page_image(index)
    image = view.image(image)
    if abs(image.width / image.height - W / H) > 0.02 * (W / H):
        boxes = [(ox, oy, ox + W, oy + H)]  # page geometry disagrees with the rendering: read it all
    from PIL import ImageDraw

    blocks, notes = [], []
    for x0, top, x1, bottom in boxes:
        pad = 2.0
        left, upper = max(0, int((x0 - ox - pad) * scale)), max(0, int((top - oy - pad) * scale))
        crop = image.crop((
            left, upper,
            min(image.width, int(math.ceil((x1 - ox + pad) * scale))),
            min(image.height, int(math.ceil((bottom - oy + pad) * scale))),
        ))
        # White out text-layer words drawn over the image (labels): the text layer already has them.
        draw = ImageDraw.Draw(crop)
        for w in words:
            if w.x1 > x0 and w.x0 < x1 and w.bottom > top and w.top < bottom:
                draw.rectangle(
                    ((w.x0 - ox - 1) * scale - left, (w.top - oy - 1) * scale - upper,
                     (w.x1 - ox + 1) * scale - left, (w.bottom - oy + 1) * scale - upper),
                    fill="white",
                )
        try:
            # Orientation detection only for page-sized images (sideways scans), not for every photo.
            big = (x1 - x0) * (bottom - top) >= 0.5 * W * H
            ocr = _ocr_page(crop, lang, known_orientation=bool(view.rot) or not big)
        except _OcrFailed as e:
            notes.append(f"OCR failed on an image ({e})")
            continue
        if ocr.text and _ocr_text_readable(ocr):
            blocks.append(_El(x0, top, x1, bottom, ocr.text, block=True))
    return blocks, notes
