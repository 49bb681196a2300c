"""Page-image test material shared by the default suite and the colpali session: a generated multi-page PDF whose
pages differ in what they *show* (a red or a blue filled rectangle) and a PNG, plus a deterministic page encoder /
page scorer pair that implements relayrag.retrieval.colpali's PageEncoder / PageScorer interfaces.

The double reads pixels, not text: a page's "vector" is its mean colour over the non-white pixels, and a query
naming a colour scores pages by how close their colour is to it. So a question about "the red diagram" finds
the page whose image is red even though no text on that page says "red" — enough to test routing, fusion,
citations and storage; retrieval quality needs real weights (not testable offline)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from relayrag.retrieval.colpali import PageHit
from tests.unit.ingest.test_loaders import _Pdf, text_ops

COLOURS = {"red": (0.8, 0.1, 0.1), "blue": (0.1, 0.2, 0.8), "green": (0.1, 0.7, 0.2), "black": (0.0, 0.0, 0.0)}


def manual_pdf(pages: list[tuple[list[str], str | None]]) -> bytes:
    """A PDF: per page, text lines and an optional filled rectangle of a colour in COLOURS."""
    pdf = _Pdf()
    for lines, colour in pages:
        ops = text_ops(lines, 72, 720)
        if colour:
            r, g, b = COLOURS[colour]
            ops += b"%g %g %g rg 100 250 360 260 re f\n" % (r, g, b)
        pdf.page(ops)
    return pdf.bytes()


MANUAL = [
    (["Pump maintenance manual", "Check the oil level of the pump every week."], None),
    (["Figure 2. Cross-section of the centrifugal pump impeller."], "red"),
    (["Figure 3. Wiring of the pump motor and its switch."], "blue"),
]


def write_manual(folder: Path, name: str = "manual.pdf", pages=MANUAL) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(manual_pdf(pages))
    return path


def write_png(path: Path, colour: str = "green", text: str = "SITE PHOTO") -> Path:
    from PIL import Image, ImageDraw
    im = Image.new("RGB", (480, 320), "white")
    d = ImageDraw.Draw(im)
    d.rectangle([60, 80, 420, 300], fill=tuple(int(255 * c) for c in COLOURS[colour]))
    d.text((20, 20), text, fill="black")
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path)
    return path


def _colour(image) -> np.ndarray:
    a = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    ink = a[(a < 0.95).any(axis=2)]
    if not len(ink):
        return np.ones((1, 3), np.float32)
    return ink.mean(axis=0, keepdims=True)


class ColourEncoder:
    """PageEncoder double: one 3-d "vector" per page (mean colour of its non-white pixels); counts encodings."""

    model_id = "test-colour-double"

    def __init__(self):
        self.encoded = 0

    def encode_pages(self, images):
        self.encoded += len(images)
        return [_colour(im).astype(np.float16) for im in images]

    def write_index(self, pages, vectors, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "index.json").write_text(json.dumps(
            [{**{k: p[k] for k in ("sha256", "source", "doc", "page")}, "vector": np.asarray(v, float).tolist()}
             for p, v in zip(pages, vectors)]))


class ColourScorer:
    """PageScorer double over a ColourEncoder index: a query naming a colour ranks pages by closeness to it."""

    model_id = "test-colour-double"

    def __init__(self, folder: Path):
        self.pages = json.loads((Path(folder) / "index.json").read_text())

    def search(self, query: str, k: int) -> list[PageHit]:
        want = next((np.array(c) for name, c in COLOURS.items() if name in query.lower()), np.array([0.5, 0.5, 0.5]))
        scored = [(1.0 - float(np.linalg.norm(np.array(p["vector"][0]) - want)), p) for p in self.pages]
        scored.sort(key=lambda t: -t[0])
        return [PageHit(sha256=p["sha256"], source=p["source"], doc=p["doc"], page=int(p["page"]), score=s)
                for s, p in scored[:k]]


def use_doubles(ctx) -> ColourEncoder:
    """Give `ctx` the double encoder and scorer (as RELAYRAG_COLPALI_MODEL + the extra would give byaldi's)."""
    enc = ColourEncoder()
    ctx._page_encoder = enc
    ctx.page_model_id = enc.model_id  # as if RELAYRAG_COLPALI_MODEL named it
    ctx.page_scorer_factory = lambda collection, version, folder: ColourScorer(folder)
    return enc
