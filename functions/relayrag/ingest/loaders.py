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
- Markdown (`text/markdown`): markup stripped with markdown-it-py (tables kept as rows); title = first
  level-1 heading.
- HTML (`text/html`): beautifulsoup4; script/style/nav dropped; title from `<title>`.
- Plain text (`text/plain`): as is; title = file stem.
- BEIR corpora (`application/x-beir`): `corpus.jsonl`, one `{"_id", "title", "text"}` object per line.

Text files may be UTF-8 (with or without a byte-order mark) or UTF-16/UTF-32 with a byte-order mark.

Errors: input that cannot be read raises `relayrag.errors.IngestError` whose message says what is wrong
and why (empty file, not a PDF, encrypted, truncated, undecodable bytes, no text...). Problems that lose
only part of a document go to `LoadedDocument.warnings` ("page 9: OCR unavailable (...)").

Coordinates below are PDF points (1/72 inch) in pdfplumber's page space: origin at the top-left corner,
`top`/`bottom` measured downwards.
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import functools
import io
import json
import logging
import math
import os
import re
import statistics
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from relayrag.errors import IngestError

__all__ = [
    "Page",
    "LoadedDocument",
    "SUPPORTED_SUFFIXES",
    "load_document",
    "iter_beir_corpus",
    "is_beir_corpus",
    "garbled_reason",
]



# ----------------------------------------------------------------------------------------------------
# Public data types
# ----------------------------------------------------------------------------------------------------


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
    mime:     "application/pdf", "text/markdown", "text/plain", "text/html" or "application/x-beir".
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


SUPPORTED_SUFFIXES: frozenset[str] = frozenset({".pdf", ".md", ".markdown", ".txt", ".html", ".htm"})

_MIME = {
    ".pdf": "application/pdf",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
}
BEIR_MIME = "application/x-beir"


# ----------------------------------------------------------------------------------------------------
# Entry points
# ----------------------------------------------------------------------------------------------------


def load_document(path: Path) -> LoadedDocument:
    """Load a PDF, Markdown, HTML or plain-text file (see `SUPPORTED_SUFFIXES`).

    Returns a `LoadedDocument` whose `source` is `str(path)`. Raises `IngestError` (message: what + why)
    for a missing/unreadable/empty file, an unsupported suffix, bytes that are not what the suffix says,
    an encrypted or corrupt PDF, undecodable text, or a file with no extractable text at all.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        hint = "; a BEIR corpus (.jsonl) is read with iter_beir_corpus" if suffix == ".jsonl" else ""
        raise IngestError(
            f"{path.name}: unsupported file type {suffix or '(no suffix)'}; supported: "
            f"{', '.join(sorted(SUPPORTED_SUFFIXES))}{hint}"
        )
    data = _read_bytes(path)
    if not data:
        raise IngestError(f"{path.name}: empty file (0 bytes)")
    mime = _MIME[suffix]
    if suffix == ".pdf":
        return _load_pdf(path, data)
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


def is_beir_corpus(path: Path) -> bool:
    """True for a file named `corpus.jsonl`, or a `*.jsonl` file whose first non-blank line is a JSON
    object with "_id" and "text" keys. Never raises (unreadable or missing -> False); reads at most 1 MiB."""
    path = Path(path)
    try:
        if not path.is_file():
            return False
        if path.name.lower() == "corpus.jsonl":
            return True
        if path.suffix.lower() != ".jsonl":
            return False
        with path.open("rb") as fh:
            for raw in iter(lambda: fh.readline(1 << 20), b""):
                if raw.strip():
                    obj = json.loads(raw.decode("utf-8-sig"))
                    return isinstance(obj, dict) and "_id" in obj and "text" in obj
    except (OSError, ValueError):
        return False
    return False


def iter_beir_corpus(path: Path) -> Iterator[LoadedDocument]:
    """Yield one `LoadedDocument` per line of a BEIR `corpus.jsonl` ({"_id", "title", "text"}).

    Each document has one page (method "text") whose text is `title + "\\n" + text` (title omitted when
    empty), source "<path>#<_id>", mime "application/x-beir". Blank lines are skipped. Raises
    `IngestError` naming the 1-based line number for a line that is not UTF-8, not a JSON object, or
    lacks "_id"/"text"; and for a missing or empty file.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise IngestError(f"{path}: file not found") from None
    except OSError as e:
        raise IngestError(f"{path}: cannot read file ({e.strerror or e})") from None
    with fh:
        any_bytes = False
        for lineno, raw in enumerate(fh, 1):
            any_bytes = True
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            if not raw.strip():
                continue
            where = f"{path.name} line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise IngestError(
                    f"{where}: not UTF-8 text: undecodable byte 0x{raw[e.start]:02x} at column {e.start + 1}"
                ) from None
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise IngestError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise IngestError(f"{where}: expected a JSON object with _id, title, text; got {type(obj).__name__}")
            missing = [k for k in ("_id", "text") if k not in obj]
            if missing:
                raise IngestError(f"{where}: missing key(s) {', '.join(missing)} (a BEIR corpus line needs _id and text)")
            doc_id, text, title = obj["_id"], obj["text"], obj.get("title") or ""
            if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
                raise IngestError(f"{where}: _id must be a non-empty string or integer, got {doc_id!r}")
            if not isinstance(text, str) or not isinstance(title, str):
                raise IngestError(f"{where}: title and text must be strings")
            title, text = title.strip(), text.strip()
            body = f"{title}\n{text}" if title else text
            yield LoadedDocument(
                source=f"{path}#{doc_id}", title=title, pages=[Page(1, body, "text")], mime=BEIR_MIME, warnings=[]
            )
        if not any_bytes:
            raise IngestError(f"{path.name}: empty file (0 bytes)")


# ----------------------------------------------------------------------------------------------------
# Bytes and text decoding
# ----------------------------------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise IngestError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise IngestError(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise IngestError(f"{path}: cannot read file (permission denied)") from None
    except OSError as e:
        raise IngestError(f"{path}: cannot read file ({e.strerror or e})") from None


# UTF-32 first: its little-endian BOM starts with the UTF-16 one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _decode_bom(data: bytes, name: str) -> str | None:
    """Decode by byte-order mark; None when there is none."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(enc)
            except UnicodeDecodeError as e:
                raise IngestError(
                    f"{name}: not {enc.upper()} text although it starts with a {enc.upper()} byte-order mark: "
                    f"undecodable bytes at offset {e.start + len(bom)} ({e.reason})"
                ) from None
    return None


def _decode_text(data: bytes, name: str) -> str:
    """bytes -> str with newlines normalised to "\\n". BOM-marked UTF-8/16/32, else strict UTF-8."""
    text = _decode_bom(data, name)
    if text is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise IngestError(
                f"{name}: not UTF-8 text: undecodable byte 0x{data[e.start]:02x} at offset {e.start} "
                f"({e.reason}); re-save the file as UTF-8"
            ) from None
        if "\x00" in text:
            raise IngestError(
                f"{name}: not text: it contains NUL bytes (a binary file, or UTF-16 without a byte-order mark)"
            )
    return text.replace("\r\n", "\n").replace("\r", "\n")


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)


def _decode_html(data: bytes, name: str) -> str:
    """HTML bytes -> str: BOM, else UTF-8, else the charset a <meta> tag declares."""
    text = _decode_bom(data, name)
    if text is not None:
        return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        m = _META_CHARSET.search(data[:8192])
        if m is None:
            raise IngestError(
                f"{name}: not UTF-8 text: undecodable byte 0x{data[e.start]:02x} at offset {e.start} "
                f"({e.reason}) and no <meta charset> declares another encoding"
            ) from None
        charset = m.group(1).decode("ascii", "replace")
        try:
            return data.decode(charset)
        except LookupError:
            raise IngestError(f"{name}: declares an unknown charset {charset!r}") from None
        except UnicodeDecodeError as e2:
            raise IngestError(
                f"{name}: not valid {charset} text (its declared charset): undecodable byte "
                f"0x{data[e2.start]:02x} at offset {e2.start}"
            ) from None


# ----------------------------------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------------------------------

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.{0,20000}?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


def _markdown_to_text(src: str) -> tuple[str, str | None]:
    """Markdown -> (readable text, title). Headings, paragraphs, list items ("- x", "1. x"), code blocks
    (verbatim) and tables ("a | b") are kept; inline markup, link targets and raw HTML tags are dropped.
    Title: the first level-1 heading, else a YAML front-matter `title:`, else None."""
    from markdown_it import MarkdownIt

    fm_title = None
    m = _FRONT_MATTER.match(src)
    if m:
        t = re.search(r"^title:\s*(.+?)\s*$", m.group(1), re.M)
        if t:
            fm_title = t.group(1).strip("'\"") or None
        src = src[m.end():]
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = md.parse(src)
    blocks: list[str] = []  # top-level blocks, joined by blank lines
    lists: list[list] = []  # stack of [ordered, next number]
    item_prefix: str | None = None
    row: list[str] | None = None
    table_rows: list[str] = []
    title = None
    new_list = [False]  # the next list item starts a new top-level list (a block of its own)

    def emit(text: str) -> None:
        nonlocal item_prefix
        if not text.strip():
            return
        if lists:
            indent = "  " * (len(lists) - 1)
            if item_prefix is not None:
                text = indent + item_prefix + text.replace("\n", "\n" + indent + "  ")
                item_prefix = None
            else:
                text = indent + "  " + text.replace("\n", "\n" + indent + "  ")
            if blocks and blocks[-1].startswith("\x00list") and not new_list[0]:
                blocks[-1] += "\n" + text
            else:
                blocks.append("\x00list" + text)
            new_list[0] = False
        else:
            blocks.append(text)

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        kind = tok.type
        if kind == "heading_open":
            text = _md_inline(tokens[i + 1]) if i + 1 < len(tokens) else ""
            if tok.tag == "h1" and title is None and text.strip():
                title = text.strip()
            emit(text)
            i += 3
            continue
        if kind in ("bullet_list_open", "ordered_list_open"):
            start = tok.attrGet("start")
            if not lists:
                new_list[0] = True
            lists.append([kind == "ordered_list_open", int(start) if start else 1])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            if lists:
                lists.pop()
        elif kind == "list_item_open" and lists:
            ordered, n = lists[-1]
            item_prefix = f"{n}. " if ordered else "- "
            lists[-1][1] = n + 1
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close":
            if row is not None and any(c for c in row):
                table_rows.append(" | ".join(row))
            row = None
        elif kind == "table_close":
            emit("\n".join(table_rows))
            table_rows = []
        elif kind == "inline":
            text = _md_inline(tok)
            if row is not None:
                row.append(" ".join(text.split()))
            else:
                emit(text)
        elif kind in ("fence", "code_block"):
            emit(tok.content.rstrip("\n"))
        elif kind == "html_block":
            emit(_html_fragment_text(tok.content))
        i += 1
    out = "\n\n".join(b.removeprefix("\x00list") for b in blocks)
    return out.strip(), title or fm_title


def _md_inline(tok: Any) -> str:
    parts = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)  # alt text
        elif child.type == "html_inline":
            continue
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------------

_DROP_TAGS = ("script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "head")
_BLOCK_TAGS = (
    "address", "article", "aside", "blockquote", "caption", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "ol", "p", "pre", "section", "summary", "table", "tr", "ul",
)


def _html_to_text(src: str) -> tuple[str, str | None]:
    """HTML -> (readable text, title). Drops script/style/nav (and head/noscript/template/svg/iframe);
    block elements become lines, list items "- x", tables rows "a | b". Title: <title>, else first <h1>."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(src, "html.parser")
    title = " ".join(soup.title.get_text(" ").split()) if soup.title else ""
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    if not title:
        h1 = soup.find("h1")
        title = " ".join(h1.get_text(" ").split()) if h1 else ""
    for table in reversed(soup.find_all("table")):  # innermost first
        rows = []
        for tr in table.find_all("tr"):
            cells = [" ".join(c.get_text(" ").split()) for c in tr.find_all(["td", "th"], recursive=False)]
            if any(cells):
                rows.append(" | ".join(cells))
        table.replace_with(NavigableString("\n" + "\n".join(rows) + "\n"))
    for br in soup.find_all("br"):
        br.replace_with(NavigableString("\n"))
    for tag in soup.find_all(_BLOCK_TAGS):
        if tag.name == "li":  # items of a list on consecutive lines
            tag.insert_before(NavigableString("\n- "))
        else:  # other blocks separated by a blank line
            tag.insert_before(NavigableString("\n\n"))
            tag.insert_after(NavigableString("\n\n"))
    text = soup.get_text()
    return _tidy_lines(text), title or None


def _html_fragment_text(fragment: str) -> str:
    return _html_to_text(fragment)[0]


def _tidy_lines(text: str) -> str:
    """Collapse runs of spaces inside lines, strip lines, keep at most one blank line in a row."""
    lines = [re.sub(r"[ \t\f\v\u00a0\u200b]+", " ", ln).strip() for ln in text.splitlines()]
    out: list[str] = []
    for ln in lines:
        if ln or (out and out[-1]):
            out.append(ln)
    return "\n".join(out).strip()


# ----------------------------------------------------------------------------------------------------
# Garbled text-layer detection
# ----------------------------------------------------------------------------------------------------

_CID = re.compile(r"\(cid:\d+\)")
_EDGE_PUNCT = "\"'“”‘’«»()[]{}<>.,;:!?¡¿*†‡§¶•·…–—-_/\\|"
_WORD = re.compile(r"^[^\W\d_]+(?:['’\-.][^\W\d_]+)*\.?$")
_VOWELS = set("aeiouyAEIOUY")


def garbled_reason(text: str) -> str | None:
    """Why a PDF text layer looks garbled (broken font encoding), or None when it looks like text.

    Heuristic, in order (thresholds chosen so that real text, tables full of numbers and short pages do
    not trip it):
    1. `(cid:N)` tokens — glyph codes that pdfminer could not map to Unicode — are >= 2% of the tokens
       (and there are >= 3 of them);
    2. >= 5% of the non-space characters are control, private-use, unassigned or U+FFFD characters
       (needs >= 20 characters);
    3. among tokens that hold no digit (numbers, codes and dates are not judged), fewer than 50% look
       like words (needs >= 20 such tokens). A token looks like a word when, after stripping edge
       punctuation, it is letters with at most internal ' - . characters, at most 25 letters long, with a
       plausible case pattern (at most 2 lower/upper switches), no letter 4 times in a row, and — for
       Latin-script tokens of 4+ letters — at least one vowel. Mapping glyphs to wrong code points yields
       runs like "¼½¾¿À" or mixed-case soup, which fail these tests; non-Latin scripts are not judged
       by the vowel test;
    4. for Latin-script text with >= 200 letters (in digit-free tokens), vowels (aeiouy, accents
       ignored) are under 27% or over 65% of the letters. Running text and tables in English and other
       European languages measure 33-50% (the five bundled example PDFs: 33-41% on every page); a font
       whose glyphs map to shifted letters ("Wkh txlfn eurzq" for "The quick brown") mostly measures
       9-27%.
    """
    tokens = text.split()
    if not tokens:
        return None
    n_cid = len(_CID.findall(text))
    if n_cid >= 3 and n_cid / len(tokens) >= 0.02:
        return f"{n_cid} of {len(tokens)} tokens are unmapped glyph codes (cid:N)"
    chars = [c for c in _CID.sub("", text) if not c.isspace()]
    if len(chars) >= 20:
        bad = sum(1 for c in chars if c == "\ufffd" or unicodedata.category(c) in ("Cc", "Co", "Cn", "Cs"))
        if bad / len(chars) >= 0.05:
            return f"{bad / len(chars):.0%} of the characters are control/private-use/unmapped code points"
    judged = wordlike = 0
    letters: list[str] = []
    for tok in re.split(r"[\s/–—]+", _CID.sub(" ", text)):
        tok = tok.strip(_EDGE_PUNCT)
        if not tok or any(c.isdigit() for c in tok):
            continue
        judged += 1
        wordlike += _looks_like_word(tok)
        letters.extend(c for c in tok if c.isalpha())
    if judged >= 20 and wordlike / judged < 0.5:
        return f"only {wordlike} of {judged} words look like words (implausible characters or letter mix)"
    latin = [c for c in letters if _is_latin(c)]
    if len(latin) >= 200 and len(latin) >= 0.9 * len(letters):
        share = sum(1 for c in latin if unicodedata.normalize("NFD", c)[0] in _VOWELS) / len(latin)
        if not 0.27 <= share <= 0.65:
            return f"vowels are {share:.0%} of the letters (natural text: 33-50%): letters look substituted"
    return None


def _looks_like_word(tok: str) -> bool:
    if not _WORD.match(tok):
        return False
    letters = [c for c in tok if c.isalpha()]
    if not letters or len(letters) > 25:
        return False
    switches = sum(1 for a, b in zip(letters, letters[1:]) if a.isupper() != b.isupper())
    if switches > 2:
        return False
    run = 1
    for a, b in zip(letters, letters[1:]):
        run = run + 1 if a.lower() == b.lower() else 1
        if run >= 4:
            return False
    latin = all(_is_latin(c) for c in letters)
    if latin and len(letters) >= 4:
        base = {unicodedata.normalize("NFD", c)[0] for c in letters}
        if not base & _VOWELS:
            return False
    return True


@functools.lru_cache(maxsize=4096)
def _is_latin(c: str) -> bool:
    return "LATIN" in unicodedata.name(c, "")


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


# ----------------------------------------------------------------------------------------------------
# OCR (pypdfium2 + tesseract)
# ----------------------------------------------------------------------------------------------------


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
        self._doc = None
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


# ----------------------------------------------------------------------------------------------------
# PDF
# ----------------------------------------------------------------------------------------------------

X_TOLERANCE_RATIO = 0.15  # a gap wider than 0.15 em splits words: font-size-relative, so 5 pt tables keep
#                           their spaces (pdfplumber's fixed 3 pt glues "DISTRICTDIRECTOR" together)
MIN_OCR_IMAGE_FRACTION = 0.02  # images smaller than 2% of the page area are not OCR'd
TEXT_COVERED_WORDS = 25  # an image with this many text-layer words on it already has a text layer


@dataclass
class _El:
    """A positioned piece of page text: a word, or a block (table, OCR'd image) kept whole."""

    x0: float
    top: float
    x1: float
    bottom: float
    text: str
    block: bool = False

    @property
    def h(self) -> float:
        return self.bottom - self.top

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.top + self.bottom) / 2


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


def _load_pdf(path: Path, data: bytes) -> LoadedDocument:
    import pdfplumber

    from relayrag.settings import load_settings

    name = path.name
    head = data[:1024]
    if b"%PDF-" not in head:
        what = "it looks like HTML: a saved web page?" if head.lstrip()[:1] == b"<" else "random bytes named .pdf?"
        raise IngestError(f"{name}: not a PDF: file does not start with %PDF- ({what})")
    settings = load_settings()
    warnings: list[str] = []
    pages: list[Page] = []
    with _quiet_pdf_libs():
        _check_encryption(data, name)
        try:
            pdf = pdfplumber.open(io.BytesIO(data))
            n_pages = len(pdf.pages)
        except Exception as e:  # pdfminer wraps everything in PdfminerException
            raise _pdf_open_error(e, data, name) from None
        renderer = _Renderer(data, settings.ocr_dpi)
        try:
            if n_pages == 0:
                raise IngestError(f"{name}: PDF has no pages")
            title = _pdf_meta_title(pdf.metadata)
            for index, page in enumerate(pdf.pages):
                number = index + 1
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


@dataclass
class _View:
    """Maps pdfplumber page space to reading space (origin at the top-left, text running left to right).

    rot 0: as displayed. rot 90: the text runs bottom-to-top, turn the page 90 degrees clockwise to read
    it. rot 270: the text runs top-to-bottom, turn it counter-clockwise. (Landscape tables printed
    sideways on portrait pages, pages whose content is drawn rotated.)"""

    W: float
    H: float
    ox: float = 0.0
    oy: float = 0.0
    rot: int = 0

    @property
    def size(self) -> tuple[float, float]:
        return (self.W, self.H) if self.rot == 0 else (self.H, self.W)

    @property
    def origin(self) -> tuple[float, float]:
        """Reading-space coordinates of the page's top-left corner (the crop box's, as rendered)."""
        return (self.ox, self.oy) if self.rot == 0 else (0.0, 0.0)

    def box(self, x0: float, top: float, x1: float, bottom: float) -> tuple[float, float, float, float]:
        if self.rot == 0:  # reading space is page space
            return (x0, top, x1, bottom)
        x0, x1, top, bottom = x0 - self.ox, x1 - self.ox, top - self.oy, bottom - self.oy
        if self.rot == 90:  # (x, y) -> (H - y, x)
            return (self.H - bottom, x0, self.H - top, x1)
        if self.rot == 270:  # (x, y) -> (y, W - x)
            return (top, self.W - x1, bottom, self.W - x0)
        return (x0, top, x1, bottom)

    def image(self, img: Any) -> Any:
        if self.rot == 90:
            return img.rotate(-90, expand=True)  # PIL turns counter-clockwise for positive angles
        if self.rot == 270:
            return img.rotate(90, expand=True)
        return img


def _text_rotation(chars: list[dict]) -> int:
    """0, or 90/270 when most characters (>= 50%, >= 10 of them) are rotated: 270 when consecutive
    glyphs of the content stream step downwards (top-to-bottom text), else 90."""
    rotated = [c for c in chars if not c.get("upright", True)]
    if len(rotated) < 10 or len(rotated) < 0.5 * len(chars):
        return 0
    votes = 0
    for a, b in zip(rotated, rotated[1:]):
        dy = b["top"] - a["top"]
        if abs(a["x0"] - b["x0"]) < 1.0 and 0 < abs(dy) < 2 * max(a.get("size") or 10.0, 1.0):
            votes += 1 if dy > 0 else -1
    return 270 if votes > 0 else 90


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
        if not _tesseract_available():
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
                    warnings.append(f"page {number}: no text after OCR" + (f" (text layer garbled: {reason})" if reason else "") + "; skipped")
                    return None
                return Page(number, text, "ocr"), heading

    tables = _find_tables(page, words) if not view.rot else []  # pdfplumber's finder works in page space
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


_LIGATURES = {"ﬀ": "ff", "ﬃ": "ffi", "ﬄ": "ffl", "ﬁ": "fi", "ﬂ": "fl", "ﬆ": "st", "ﬅ": "st"}


def _page_words(page: Any) -> list[_El]:
    """The page's words. Upright characters are grouped by `_chars_to_words`; rotated ones (few, once
    `_drop_stray_rotated_chars` ran) by pdfplumber's word extractor. (pdfplumber's `dedupe_chars` is
    not used: it cost ~1.3 s per dense page.)"""
    chars = page.chars
    words = _chars_to_words([c for c in chars if c.get("upright", True)])
    if any(not c.get("upright", True) for c in chars):
        rotated = page.filter(lambda o: o.get("object_type") != "char" or not o.get("upright", True))
        words += [
            _El(w["x0"], w["top"], w["x1"], w["bottom"], w["text"])
            for w in rotated.extract_words(x_tolerance_ratio=X_TOLERANCE_RATIO)
            if w["text"].strip()
        ]
    return words


def _chars_to_words(chars: list[dict]) -> list[_El]:
    """Upright characters -> words.

    Lines: a character joins the line (among those still open) that it overlaps most, by at least half
    the smaller height, measured against the line's first character — so no chaining: pdfplumber's
    top-clustering chains lines through vertically stacked characters (chart axis labels) and then
    interleaves two text lines letter by letter. Words: characters of a line left to right, split at a
    space character or a gap wider than `X_TOLERANCE_RATIO` x the font size; a glyph repeated within
    1 pt (fake bold) is read once."""
    lines: list[list] = []  # [top, bottom, chars]
    active: list[list] = []
    for c in sorted(chars, key=lambda c: (c["top"], c["x0"])):
        if not c["text"]:
            continue
        top, bottom = c["top"], c["bottom"]
        h = max(bottom - top, 0.1)
        active = [ln for ln in active if ln[1] > top]
        best, best_ov = None, 0.0
        for ln in active:
            ov = min(ln[1], bottom) - max(ln[0], top)
            if ov >= 0.5 * min(h, ln[1] - ln[0]) and ov > best_ov:
                best, best_ov = ln, ov
        if best is None:
            best = [top, max(bottom, top + 0.1), []]
            lines.append(best)
            active.append(best)
        best[2].append(c)
    words: list[_El] = []
    for _, _, lc in lines:
        lc.sort(key=lambda c: c["x0"])
        cur: list[dict] = []
        prev = None
        for c in lc:
            if prev is not None and c["text"] == prev["text"] and abs(c["x0"] - prev["x0"]) < 1 and abs(c["top"] - prev["top"]) < 1:
                continue  # fake bold: the same glyph printed twice at (almost) the same place
            prev = c
            if c["text"].isspace():
                if cur:
                    words.append(_word(cur))
                cur = []
                continue
            if cur and c["x0"] - cur[-1]["x1"] > X_TOLERANCE_RATIO * (cur[-1].get("size") or 10.0):
                words.append(_word(cur))
                cur = []
            cur.append(c)
        if cur:
            words.append(_word(cur))
    return words


def _word(chars: list[dict]) -> _El:
    text = "".join(_LIGATURES.get(c["text"], c["text"]) for c in chars)
    return _El(
        min(c["x0"] for c in chars), min(c["top"] for c in chars),
        max(c["x1"] for c in chars), max(c["bottom"] for c in chars), text,
    )


def _drop_stray_rotated_chars(page: Any) -> Any:
    """Drop rotated (non-upright) characters that are margin noise: all of them when they are under 10%
    of the page's characters, else those lying outside the box of the upright text (margin stamps,
    rotated page labels, which would read as reversed noise like "SLASOPORP htiw"). Pages that are mostly
    rotated text keep everything."""
    chars = page.chars
    rotated = [c for c in chars if not c.get("upright", True)]
    if not rotated or len(rotated) >= 0.5 * len(chars):
        return page
    if len(rotated) < 0.1 * len(chars):
        return page.filter(lambda o: o.get("object_type") != "char" or o.get("upright", True))
    up = [c for c in chars if c.get("upright", True)]
    ux0, ux1 = min(c["x0"] for c in up), max(c["x1"] for c in up)
    utop, ubot = min(c["top"] for c in up), max(c["bottom"] for c in up)

    def keep(o: dict) -> bool:
        if o.get("object_type") != "char" or o.get("upright", True):
            return True
        cx, cy = (o["x0"] + o["x1"]) / 2, (o["top"] + o["bottom"]) / 2
        return ux0 <= cx <= ux1 and utop <= cy <= ubot

    return page.filter(keep)


def _first_heading(words: list[_El]) -> str:
    """Text of the top-most line set in a font >= 1.3x the page's median word height, joined with the
    following lines of the same size (a wrapped title); "" when there is none."""
    if len(words) < 5:
        return ""
    med = statistics.median(w.h for w in words)
    big = [w for w in words if w.h >= 1.3 * med]
    if not big:
        return ""
    lines = _group_lines(sorted(big, key=lambda w: (w.top, w.x0)))
    first = lines[0]
    size = statistics.median(w.h for w in first)
    parts = [first]
    for ln in lines[1:]:
        if abs(statistics.median(w.h for w in ln) - size) <= 0.1 * size and ln[0].top - parts[-1][0].bottom < size:
            parts.append(ln)
        else:
            break
    title = " ".join(" ".join(w.text for w in ln) for ln in parts)
    return title[:200] if sum(c.isalpha() for c in title) >= 3 else ""


def _inside(el: _El, bbox: Sequence[float], tol: float = 1.0) -> bool:
    x0, top, x1, bottom = bbox
    return x0 - tol <= el.cx <= x1 + tol and top - tol <= el.cy <= bottom + tol


# --- OCR of images --------------------------------------------------------------------------------


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
            min(image.width, int(math.ceil((x1 - ox + pad) * scale))), min(image.height, int(math.ceil((bottom - oy + pad) * scale))),
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


# --- Tables -----------------------------------------------------------------------------------------


@dataclass
class _Table:
    bbox: tuple[float, float, float, float]
    rows: list[str]


def _find_tables(page: Any, words: list[_El]) -> list[_Table]:
    """Ruled tables on the page, rendered as rows.

    pdfplumber's lines-strategy finder locates tables; each one's region is then grown along its own
    rulings (a rule at the table's top/bottom that runs further sideways, a column rule that runs on
    below the last horizontal rule — open-bottomed or edge-less tables such as the Federal Register's),
    regions inside another are dropped, and the words in the region are laid out as rows by `_table_rows`.
    Regions whose panels do not line up are split (`_split_misaligned`). A region counts as a table when
    at least two rows, and at least 30% of its rows, have two or more non-empty cells (chart panels with
    scattered tick labels do not); the words of regions that do not count flow as ordinary text."""
    try:
        found = page.find_tables()
    except Exception:
        return []
    if not found:
        return []
    from pdfplumber.utils import line_to_edge

    hedges, vedges = [], []
    for e in list(page.rect_edges) + [line_to_edge(ln) for ln in page.lines]:
        if e["orientation"] == "h" and e["x1"] - e["x0"] >= 2:
            hedges.append((e["x0"], e["top"], e["x1"]))
        elif e["orientation"] == "v" and e["bottom"] - e["top"] >= 2:
            vedges.append((e["x0"], e["top"], e["bottom"]))
    regions: list[tuple[float, float, float, float]] = []
    for t in found:
        x0, top, x1, bottom = t.bbox
        if x1 - x0 < 36 or bottom - top < 8:
            continue
        if max((sum(1 for c in r.cells if c is not None) for r in t.rows), default=0) < 2:
            continue
        regions.append(_grow_region(t.bbox, hedges, vedges))
    # Merge overlapping regions; drop duplicates.
    merged: list[list[float]] = []
    for r in sorted(regions, key=lambda b: -(b[2] - b[0]) * (b[3] - b[1])):
        for m in merged:
            if r[0] < m[2] and m[0] < r[2] and r[1] < m[3] and m[1] < r[3]:
                m[:] = [min(m[0], r[0]), min(m[1], r[1]), max(m[2], r[2]), max(m[3], r[3])]
                break
        else:
            merged.append(list(r))
    tables = []
    subregions = [sub for bbox in merged for sub in _split_misaligned(tuple(bbox), words, vedges)]
    for bbox in subregions:
        rows = _table_rows(tuple(bbox), [w for w in words if _inside(w, bbox)], hedges, vedges)
        multi = sum(1 for r in rows if sum(1 for c in r.split(" | ") if c.strip()) >= 2)
        if multi >= 2 and multi >= 0.3 * len(rows):
            tables.append(_Table(tuple(bbox), rows))
    return tables


def _split_misaligned(bbox, words: list[_El], vedges, depth: int = 0) -> list[tuple[float, float, float, float]]:
    """Split a ruled region at a vertical rule running >= 80% of its height when the text lines on the
    two sides do not line up — each side has >= 5 lines and, on both sides, fewer than 40% of them have
    a partner within 1.5 pt on the other: side-by-side panels in one frame (a data table beside charts:
    27-29% in the ag-energy example), not one table (nics: 89-97%; a small table whose header and
    wrapped cells break the pattern: 40-50%)."""
    x0, top, x1, bottom = bbox
    ws = [w for w in words if _inside(w, bbox)]
    if depth > 8 or len(ws) < 6:
        return [bbox]
    spans: dict[float, list[tuple[float, float]]] = {}
    for vx, vt, vb in vedges:
        if x0 + 5 < vx < x1 - 5 and vb > top and vt < bottom:
            key = next((k for k in spans if abs(k - vx) <= 2.0), vx)
            spans.setdefault(key, []).append((max(vt, top), min(vb, bottom)))
    for vx in sorted(spans):
        covered = sum(b - a for a, b in _merge_intervals(spans[vx]))
        if covered < 0.8 * (bottom - top):
            continue
        left = [w for w in ws if w.x1 <= vx + 0.5]
        right = [w for w in ws if w.x0 >= vx - 0.5]
        if len(left) + len(right) < len(ws) or len(left) < 3 or len(right) < 3:
            continue  # words straddle the rule: it does not separate panels
        ly = [statistics.median(w.cy for w in ln) for ln in _group_lines(sorted(left, key=lambda w: (w.top, w.x0)))]
        ry = [statistics.median(w.cy for w in ln) for ln in _group_lines(sorted(right, key=lambda w: (w.top, w.x0)))]
        share_r = sum(1 for y in ry if any(abs(y - v) <= 1.5 for v in ly)) / len(ry)
        share_l = sum(1 for y in ly if any(abs(y - v) <= 1.5 for v in ry)) / len(ly)
        if len(ly) >= 5 and len(ry) >= 5 and max(share_r, share_l) < 0.4:
            return (_split_misaligned((x0, top, vx, bottom), words, vedges, depth + 1)
                    + _split_misaligned((vx, top, x1, bottom), words, vedges, depth + 1))
    return [bbox]


def _merge_intervals(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1] + 1.0:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _grow_region(bbox, hedges, vedges, tol: float = 1.5):
    x0, top, x1, bottom = bbox
    col_xs = [vx for vx, vt, vb in vedges if x0 - tol <= vx <= x1 + tol and vt < bottom and vb > top]
    for _ in range(6):
        before = (x0, top, x1, bottom)
        for hx0, hy, hx1 in hedges:  # rules along the table's rows that run further sideways
            if top - tol <= hy <= bottom + tol and hx0 < x1 and hx1 > x0:
                x0, x1 = min(x0, hx0), max(x1, hx1)
        for vx, vt, vb in vedges:  # the table's column rules continued above/below
            if any(abs(vx - cx) <= tol for cx in col_xs) and vt <= bottom + tol and vb >= top - tol:
                top, bottom = min(top, vt), max(bottom, vb)
        if (x0, top, x1, bottom) == before:
            break
    return (x0, top, x1, bottom)


_LEADERS = re.compile(r"(?:\s*\.{3,}|\s*…{2,}|(?:(?<=\s)|^)\.\.(?=\s|$))\s*")


def _clean_cell(text: str) -> str:
    """Drop dot leaders ("Action ......" -> "Action") and collapse whitespace."""
    text = _LEADERS.sub(" ", text)
    return " ".join(text.split())


def _table_rows(bbox, words: list[_El], hedges, vedges) -> list[str]:
    """Words inside a table region -> rows "cell | cell | ...".

    The region is cut into bands at horizontal rules spanning >= half its width. In each band, text
    lines are split into cells at the column rules that cross at least half of the band's lines and at
    whitespace gutters (x-ranges no word covers, >= 0.6x the median word height wide; with 8+ lines, up
    to 8% of lines may cross). A line continues the previous row (a wrapped cell) when it has fewer
    filled cells than that row's fullest line and all of them fall in columns the row already fills."""
    if not words:
        return []
    x0, top, x1, bottom = bbox
    width = x1 - x0
    cuts = sorted(
        hy for hx0, hy, hx1 in hedges if top + 1 < hy < bottom - 1 and min(hx1, x1) - max(hx0, x0) >= 0.5 * width
    )
    bands: list[list[_El]] = [[] for _ in range(len(cuts) + 1)]
    for w in words:
        bands[bisect.bisect(cuts, w.cy)].append(w)
    out: list[str] = []
    for band in bands:
        if band:
            out.extend(_band_rows(band, x0, x1, vedges))
    return out


def _band_rows(band: list[_El], x0: float, x1: float, vedges) -> list[str]:
    """Rows of one band of a table (see `_table_rows`)."""
    med_h = statistics.median(w.h for w in band)
    lines = _group_lines(sorted(band, key=lambda w: (w.top, w.x0)))
    ys = [statistics.median(w.cy for w in ln) for ln in lines]
    # Column rules: x -> the y-spans it covers (double rules merged).
    rules: list[tuple[float, list[tuple[float, float]]]] = []
    for vx, vt, vb in sorted(vedges):
        if not x0 + 1 < vx < x1 - 1:
            continue
        if rules and vx - rules[-1][0] <= 2.0:
            rules[-1][1].append((vt, vb))
        else:
            rules.append((vx, [(vt, vb)]))

    def crosses(spans, y):
        return any(vt - 0.5 <= y <= vb + 0.5 for vt, vb in spans)

    rules = [(vx, spans) for vx, spans in rules if sum(crosses(spans, y) for y in ys) >= max(1, 0.5 * len(ys))]
    bounds: list[tuple[float, list | None]] = list(rules)  # (x, rule spans or None for a gutter)
    allowed = int(0.08 * len(lines)) if len(lines) >= 8 else 0
    for g0, g1 in _gutters(lines, max(2.5, 0.6 * med_h), allowed):
        if not any(g0 - 1 <= vx <= g1 + 1 for vx, _ in rules):  # a rule already separates these columns
            bounds.append(((g0 + g1) / 2, None))
    bounds.sort(key=lambda b: b[0])
    xs = [b[0] for b in bounds]
    rows: list[tuple[list[str], set[int], int]] = []  # (cells, filled columns, most cells on one line)
    prev_bottom = None
    for ln, y in zip(lines, ys):
        # A rule that does not reach this line (a spanning header cell) does not split it.
        group = list(range(len(xs) + 1))
        for i, (_, spans) in enumerate(bounds):
            if spans is not None and not crosses(spans, y):
                group[i + 1] = group[i]
        cells: list[list[_El]] = [[] for _ in range(len(xs) + 1)]
        for w in ln:
            cells[group[bisect.bisect(xs, w.cx)]].append(w)
        texts = [_clean_cell(_lines_text(c)) for c in cells]
        filled = {i for i, t in enumerate(texts) if t}
        if not filled:
            continue
        ln_top = min(w.top for w in ln)
        close = prev_bottom is not None and ln_top - prev_bottom <= 1.0 * med_h
        if rows and close and len(filled) < rows[-1][2] and filled <= rows[-1][1]:
            prev_cells = rows[-1][0]
            for i in filled:
                prev_cells[i] = (prev_cells[i] + " " + texts[i]).strip()
        else:
            rows.append((texts, set(filled), len(filled)))
        prev_bottom = max(w.bottom for w in ln)
    out = []
    for cells, _, _ in rows:
        while cells and not cells[-1]:
            cells.pop()
        out.append(" | ".join(cells).replace("|  |", "| |"))
    return out


def _gutters(lines: list[list[_El]], min_gap: float, allowed: int) -> list[tuple[float, float]]:
    """(x-start, x-end) of vertical whitespace gutters between the lines' words: runs of x where at most
    `allowed` lines have a word, >= min_gap wide, with words on both sides."""
    if not lines:
        return []
    lo = min(w.x0 for ln in lines for w in ln)
    hi = max(w.x1 for ln in lines for w in ln)
    step = 0.5
    n = int((hi - lo) / step) + 2
    cover = [0] * n
    for ln in lines:
        mark = bytearray(n)
        for w in ln:
            a, b = int((w.x0 - lo) / step), int(math.ceil((w.x1 - lo) / step))
            mark[a:b + 1] = b"\x01" * (b + 1 - a)
        for i, m in enumerate(mark):
            if m:
                cover[i] += 1
    out = []
    i = 0
    while i < n:
        if cover[i] <= allowed:
            j = i
            while j < n and cover[j] <= allowed:
                j += 1
            if i > 0 and j < n and (j - i) * step >= min_gap:
                out.append((lo + i * step, lo + j * step))
            i = j
        else:
            i += 1
    return out


# --- Reading order ------------------------------------------------------------------------------------


def _group_lines(els: list[_El]) -> list[list[_El]]:
    """Elements sorted by top -> lines: an element joins the current line when it overlaps the line's
    first element vertically by at least half the smaller height."""
    lines: list[list[_El]] = []
    ref: _El | None = None
    for el in els:
        if ref is not None:
            overlap = min(ref.bottom, el.bottom) - max(ref.top, el.top)
            if overlap >= 0.5 * min(ref.h, el.h):
                lines[-1].append(el)
                continue
        lines.append([el])
        ref = el
    return lines


def _lines_text(els: list[_El]) -> str:
    """Elements -> text: lines top to bottom, elements left to right, all joined by spaces."""
    if not els:
        return ""
    lines = _group_lines(sorted(els, key=lambda e: (e.top, e.x0)))
    return " ".join(" ".join(e.text for e in sorted(ln, key=lambda e: e.x0)) for ln in lines)


def _layout_text(elements: list[_El]) -> str:
    """Page elements -> text in reading order by a recursive XY-cut.

    At each level: cut at every vertical whitespace gutter (no element covers it, >= max(6 pt, 1x the
    median word height) wide) and read the parts left to right — columns (unless one part is a single
    line beside a taller region: the start of a footer line is not a column); else cut at the widest
    horizontal gap (>= max(2.5 pt, 0.5x median height)) and read top then bottom — blocks; else emit
    lines top to bottom, words left to right. Tables and OCR'd images are elements kept whole.
    Columns and blocks separated by a gap >= 1.2x the median height are separated by a blank line;
    pieces of one line (a wide gap inside a header line) are joined by a space."""
    if not elements:
        return ""
    words = [e for e in elements if not e.block] or elements
    med = statistics.median(e.h for e in words)
    text = _xy_cut(elements, max(6.0, 1.0 * med), max(2.5, 0.5 * med), med, 0)
    text = re.sub(r"\.{4,}", " ", text)  # dot leaders outside tables
    return _tidy_lines(text)


def _xy_cut(els: list[_El], gx: float, gy: float, med: float, depth: int) -> str:
    if len(els) > 1 and depth < 60:
        parts = _split(els, gx, vertical=True)
        if parts is not None and max(e.bottom for e in els) - min(e.top for e in els) > 3 * med and any(
            max(e.bottom for e in p) - min(e.top for e in p) <= 1.5 * med and not any(e.block for e in p) for p in parts
        ):
            parts = None  # a one-line sliver beside a tall region is a piece of a line, not a column
        if parts is not None:
            texts = [_xy_cut(p, gx, gy, med, depth + 1) for p in parts]
            one_line = all(not e.block for e in els) and (
                max(e.bottom for e in els) - min(e.top for e in els) <= 1.5 * med
            )
            return (" " if one_line else "\n\n").join(t for t in texts if t)
        parts = _split(els, gy, vertical=False)
        if parts is not None:
            upper, lower = parts
            gap = min(e.top for e in lower) - max(e.bottom for e in upper)
            sep = "\n\n" if gap >= 1.2 * med or any(e.block for e in els) else "\n"
            texts = [_xy_cut(p, gx, gy, med, depth + 1) for p in parts]
            return sep.join(t for t in texts if t)
    lines = _group_lines(sorted(els, key=lambda e: (e.top, e.x0)))
    return "\n".join(" ".join(e.text for e in sorted(ln, key=lambda e: e.x0)) for ln in lines)


def _split(els: list[_El], min_gap: float, vertical: bool) -> list[list[_El]] | None:
    """Vertical: split at every x-gap >= min_gap (columns, left to right). Horizontal: split at the
    widest y-gap >= min_gap (top part, bottom part). None when there is no such gap."""
    key = (lambda e: (e.x0, e.x1)) if vertical else (lambda e: (e.top, e.bottom))
    spans = sorted((key(e) for e in els))
    gaps: list[tuple[float, float]] = []  # (gap width, cut position)
    reach = spans[0][1]
    for a, b in spans[1:]:
        if a - reach >= min_gap:
            gaps.append((a - reach, (a + reach) / 2))
        reach = max(reach, b)
    if not gaps:
        return None
    if vertical:
        cuts = sorted(pos for _, pos in gaps)
    else:
        cuts = [max(gaps)[1]]
    parts: list[list[_El]] = [[] for _ in range(len(cuts) + 1)]
    for e in els:
        parts[bisect.bisect(cuts, key(e)[0])].append(e)
    parts = [p for p in parts if p]
    return parts if len(parts) > 1 else None
