"""PDF loading: text layer (words, tables, reading order), OCR, garbled-layer detection."""

from relayrag.ingest.pdf.garble import garbled_reason
from relayrag.ingest.pdf.loader import load_pdf

__all__ = ["garbled_reason", "load_pdf"]
