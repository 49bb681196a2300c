"""Positioned page text (`_El`) and reading order: lines, blocks and a recursive XY-cut into columns.

Coordinates are PDF points in pdfplumber's page space (origin top-left, `top`/`bottom` downwards)."""

from __future__ import annotations

import bisect
import re
import statistics
from dataclasses import dataclass
from typing import Sequence

from relayrag.ingest.decode import _tidy_lines


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


def _inside(el: _El, bbox: Sequence[float], tol: float = 1.0) -> bool:
    x0, top, x1, bottom = bbox
    return x0 - tol <= el.cx <= x1 + tol and top - tol <= el.cy <= bottom + tol


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
