"""Chunking that keeps document, page and character offsets.

Chunks never cross a page (citations name one page). Within a page, sentences/rows are packed greedily up
to `max_chars` with about `overlap` characters of trailing sentences carried into the next chunk. A
single sentence longer than `max_chars` is cut at whitespace.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass

from relayrag.text import column_header, is_header_row, split_sentences, strip_controls


@dataclass
class Chunk:
    chunk_id: str      # "<source hash 10>:<page>:<ordinal>:<content hash 10>" — source + position + content
    doc: str           # document name shown in citations (file name, or BEIR _id)
    source: str        # the file path / URI the document came from
    title: str
    page: int          # 1-based
    start: int         # char offset in the page text (inclusive)
    end: int           # char offset in the page text (exclusive)
    text: str
    content_hash: str  # sha256 of context + text (embedding cache key)
    context: str = ""  # the table's header row when the chunk starts inside a table (not part of `text`)

    def to_dict(self) -> dict:
        return asdict(self)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _pieces(text: str, max_chars: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for s, e in split_sentences(text):
        while e - s > max_chars:
            cut = text.rfind(" ", s + max_chars // 2, s + max_chars)
            cut = cut if cut > s else s + max_chars
            spans.append((s, cut))
            s = cut
            while s < e and text[s].isspace():
                s += 1
        if e > s:
            spans.append((s, e))
    return spans


def chunk_page(text: str, max_chars: int = 1200, overlap: int = 200) -> list[tuple[int, int]]:
    """Chunk spans [(start, end)] over one page's text; each chunk is text[start:end]."""
    pieces = _pieces(text, max_chars)
    chunks: list[tuple[int, int]] = []
    i = 0
    while i < len(pieces):
        j = i
        while j + 1 < len(pieces) and pieces[j + 1][1] - pieces[i][0] <= max_chars:
            j += 1
        chunks.append((pieces[i][0], pieces[j][1]))
        if j + 1 >= len(pieces):
            break
        # the next chunk starts at the earliest sentence within `overlap` chars of this chunk's end
        k = j + 1
        while k - 1 > i and pieces[j][1] - pieces[k - 1][0] <= overlap:
            k -= 1
        i = k
    return chunks


def table_header(page_text: str, start: int) -> str:
    """The column-name row of the table that `page_text[start:]` continues, or "" if the chunk does not
    start inside a table. Rows are lines containing " | " (how loaders render tables). Of the table's
    leading label rows (no numeric cell), the one with the most filled cells: the column names, not a group
    row ("| | Pre-Pawn | |") above them."""
    line_start = page_text.rfind("\n", 0, start) + 1
    first = page_text[line_start:page_text.find("\n", start) if "\n" in page_text[start:] else len(page_text)]
    if " | " not in first or line_start == 0:
        return ""
    rows, pos = [], line_start
    while pos > 0:
        prev_start = page_text.rfind("\n", 0, pos - 1) + 1
        line = page_text[prev_start:pos - 1]
        if " | " not in line and not line.strip().startswith("|"):
            break
        rows.append(line)
        pos = prev_start
    rows.reverse()
    labels = []
    for r in rows:
        if is_header_row(r):
            labels.append(r)
        elif labels:
            break
    return column_header(labels) if labels else (" ".join(rows[0].split()) if rows else "")


def make_chunks(*, doc: str, source: str, title: str, pages: list[tuple[int, str]],
                max_chars: int = 1200, overlap: int = 200) -> list[Chunk]:
    """pages: [(page_number, page_text)] → chunks in reading order with stable IDs."""
    src_hash = hashlib.sha256(source.encode("utf-8")).hexdigest()[:10]
    out: list[Chunk] = []
    title = strip_controls(title)
    for number, text in pages:
        text = strip_controls(text)  # no terminal escape or other control character reaches the index
        for ordinal, (s, e) in enumerate(chunk_page(text, max_chars, overlap)):
            body = text[s:e]
            context = table_header(text, s)
            h = content_hash(context + "\n" + body if context else body)
            out.append(Chunk(chunk_id=f"{src_hash}:{number}:{ordinal}:{h[:10]}", doc=doc, source=source,
                             title=title, page=number, start=s, end=e, text=body, content_hash=h,
                             context=context))
    return out
