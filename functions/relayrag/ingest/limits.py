"""Per-file budgets for ingestion, so one hostile or broken file can never block or exhaust the rest.

- Size: text, Markdown and HTML files are read whole and parsed in memory: at most MAX_TEXT_FILE_BYTES;
  a PDF at most MAX_PDF_FILE_BYTES (pages are read one by one).
- Time: `FileBudget(seconds)`; loaders call `check(where)` between units of work (a PDF page, a BEIR
  line batch) and the file is given up with a reason once the budget is spent. One library call is never
  interrupted (that needs a process per file), so the budget can be overrun by one page's work, which
  the size and decompression bounds keep small.
- PDF decompression: a PDF stream is decoded by pdfminer in one `zlib.decompress` (or LZW / RunLength)
  call; a 1 MB file can hold a 1 GiB content stream of spaces (measured: 2.2 GB peak RSS before this
  bound). `install_pdf_decode_bounds()` replaces those decoders inside pdfminer.pdftypes by bounded ones
  that stop at MAX_STREAM_BYTES per stream, MAX_PAGE_BYTES per page and MAX_PDF_DECODED_BYTES per file
  (counted per file through `decode_budget()`), raising `DecodeBombError`, which the loader reports as the
  file's one-line reason.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from relayrag.errors import IngestError

MAX_TEXT_FILE_BYTES = 64 * 2**20
MAX_PDF_FILE_BYTES = 512 * 2**20
MAX_STREAM_BYTES = 64 * 2**20
MAX_PAGE_BYTES = 128 * 2**20
MAX_PDF_DECODED_BYTES = 512 * 2**20
DEFAULT_FILE_BUDGET_S = 600.0


class DecodeBombError(IngestError):
    """A PDF stream decompressed past a bound (a decompression bomb, or a file beyond what we index)."""


class BudgetExceeded(IngestError):
    """A file took longer than its time budget."""


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def check_size(name: str, size: int, limit: int, kind: str) -> None:
    """IngestError when a file of `size` bytes exceeds `limit` for its `kind`."""
    if size > limit:
        raise IngestError(f"{name}: file too large for the {kind} loader ({_mib(size)} > {_mib(limit)})")


@dataclass
class FileBudget:
    """Wall-clock budget of one file: `check(where)` raises BudgetExceeded once `seconds` have passed."""
    name: str
    seconds: float = DEFAULT_FILE_BUDGET_S
    t0: float = field(default_factory=time.monotonic)

    def check(self, where: str) -> None:
        spent = time.monotonic() - self.t0
        if spent > self.seconds:
            raise BudgetExceeded(f"{self.name}: stopped at {where}: over the per-file time budget of "
                                 f"{self.seconds:g} s ({spent:.0f} s spent; RELAYRAG_INGEST_FILE_BUDGET_S)")


@dataclass
class DecodeBudget:
    """Decoded bytes of one PDF: per stream, per page and per file."""
    name: str
    per_stream: int = field(default_factory=lambda: MAX_STREAM_BYTES)
    per_page: int = field(default_factory=lambda: MAX_PAGE_BYTES)
    per_file: int = field(default_factory=lambda: MAX_PDF_DECODED_BYTES)
    page: int = 0       # 1-based page being read (0 = document structure)
    page_bytes: int = 0
    file_bytes: int = 0

    def start_page(self, number: int) -> None:
        self.page, self.page_bytes = number, 0

    def room(self) -> int:
        """Bytes the next stream may still decode to before some bound is passed."""
        return min(self.per_stream, self.per_page - self.page_bytes, self.per_file - self.file_bytes)

    def add(self, n: int) -> None:
        self.page_bytes += n
        self.file_bytes += n

    def refuse(self, what: str) -> DecodeBombError:
        where = f"page {self.page}" if self.page else "the document structure"
        if self.per_file - self.file_bytes <= min(self.per_stream, self.per_page - self.page_bytes):
            bound = f"{_mib(self.per_file)} per file"
        elif self.per_page - self.page_bytes < self.per_stream:
            bound = f"{_mib(self.per_page)} per page"
        else:
            bound = f"{_mib(self.per_stream)} per stream"
        return DecodeBombError(f"{self.name}: a {what} stream on {where} decompresses past {bound} "
                               f"(a decompression bomb?); not indexed")


_budget: contextvars.ContextVar[DecodeBudget | None] = contextvars.ContextVar("relayrag_pdf_decode", default=None)


@contextlib.contextmanager
def decode_budget(name: str) -> Iterator[DecodeBudget]:
    """The decode budget of one PDF while it is loaded (this thread / context only)."""
    b = DecodeBudget(name)
    token = _budget.set(b)
    try:
        yield b
    finally:
        _budget.reset(token)


def _current() -> DecodeBudget:
    return _budget.get() or DecodeBudget("PDF")  # outside load_pdf: the default bounds, per call


def bounded_inflate(data: bytes) -> bytes:
    """zlib.decompress with the current budget; zlib.error for corrupt data, as zlib.decompress."""
    b = _current()
    room = b.room()
    d = zlib.decompressobj()
    out = d.decompress(data, max(room, 0) + 1)
    if len(out) > room:
        raise b.refuse("Flate")
    if d.unconsumed_tail and not d.eof:
        raise b.refuse("Flate")
    b.add(len(out))
    return out


def _bounded_lzw(data: bytes) -> bytes:
    from io import BytesIO

    from pdfminer.lzw import LZWDecoder
    b = _current()
    room, parts, n = b.room(), [], 0
    for chunk in LZWDecoder(BytesIO(data)).run():
        n += len(chunk)
        if n > room:
            raise b.refuse("LZW")
        parts.append(chunk)
    b.add(n)
    return b"".join(parts)


def _bounded_runlength(data: bytes) -> bytes:
    b = _current()
    room, out, i = b.room(), bytearray(), 0
    while i < len(data):
        length = data[i]
        if length == 128:
            break
        if length < 128:
            out += data[i + 1:i + 2 + length]
            i += 2 + length
        else:
            out += data[i + 1:i + 2] * (257 - length)
            i += 2
        if len(out) > room:
            raise b.refuse("RunLength")
    b.add(len(out))
    return bytes(out)


def _bounded_corrupted(data: bytes) -> bytes:
    """pdfminer's decompress_corrupted (inflate a stream with a bad checksum), bounded like the rest."""
    b = _current()
    room = b.room()
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, max(room, 0) + 1)
    except zlib.error:
        out = b""
    if len(out) > room:
        raise b.refuse("Flate")
    b.add(len(out))
    return out


class _BoundedZlib:
    """Stands in for the `zlib` module inside pdfminer.pdftypes: only `decompress` is bounded."""
    error = zlib.error

    def __getattr__(self, name: str):
        return getattr(zlib, name)

    @staticmethod
    def decompress(data: bytes, *args) -> bytes:
        return bounded_inflate(data)


_installed = False
_install_lock = threading.Lock()


def install_pdf_decode_bounds() -> None:
    """Bound pdfminer's stream decoders (idempotent; process-wide, budgets are per context)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        import pdfminer.pdftypes as pt
        pt.zlib = _BoundedZlib()  # type: ignore[assignment]  # a module stand-in with a bounded decompress
        pt.lzwdecode = _bounded_lzw
        pt.rldecode = _bounded_runlength
        pt.decompress_corrupted = _bounded_corrupted
        _installed = True
