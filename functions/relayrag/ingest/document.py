"""The loaded-document types every loader returns (`Page`, `LoadedDocument`) and the formats by suffix."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Page:
    """One page of readable text.

    number: 1-based page number (1 for formats without pages).
    text:   the page's text in reading order; tables as rows, one row per line, cells joined by " | ".
    method: how the text was obtained: "text" (text layer / text file), "text+tables" (text layer with at
            least one table rendered as rows), "ocr" (tesseract read all of the page or some of its images).
    """

    number: int
    text: str
    method: str


@dataclass
class LoadedDocument:
    """A loaded file.

    source:   the path as given (str); for a BEIR document "<corpus path>#<_id>".
    title:    PDF metadata title, else the first heading; Markdown first "# " heading; HTML <title>;
              BEIR title; else the file stem.
    pages:    pages that have text, in order (pages left empty are omitted and named in `warnings`).
    mime:     "application/pdf", "text/markdown", "text/plain", "text/html", "application/x-beir", or for an
              image file "image/png", "image/jpeg" or "image/tiff".
    warnings: non-fatal problems, e.g. "page 9: OCR unavailable (tesseract not installed); ...".
    """

    source: str
    title: str
    pages: list[Page]
    mime: str
    warnings: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """All pages' text joined by blank lines."""
        return "\n\n".join(p.text for p in self.pages)


IMAGE_SUFFIXES: frozenset[str] = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff"})
"""Image files: one-page documents (text by OCR; the image itself is the page image)."""
SUPPORTED_SUFFIXES: frozenset[str] = frozenset({".pdf", ".md", ".markdown", ".txt", ".html", ".htm"}) | IMAGE_SUFFIXES

_MIME = {
    ".pdf": "application/pdf",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
}
BEIR_MIME = "application/x-beir"
