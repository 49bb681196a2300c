"""Ruled tables on a PDF page, rendered as rows ("cell | cell | cell")."""

from __future__ import annotations

import bisect
import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from relayrag.ingest.pdf.layout import _El, _group_lines, _inside, _lines_text


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


# --- tables without rulings -------------------------------------------------------------------------------

UNRULED_MIN_ROWS = 3        # lines (column-name row included) of an unruled table
UNRULED_GAP_EM = 1.8        # a column gap is at least this many median word heights wide (a space is ~0.3)
UNRULED_MAX_CELL_WORDS = 4  # median words per cell: table cells are short, a column of prose is not
UNRULED_MAX_CELL_CHARS = 20  # median characters per cell (three columns of prose have 25-35)
UNRULED_ALIGN_PT = 4.0      # cells of one column start within this many points of each other


def _segments(line: list[_El], gap: float) -> list[list[_El]]:
    """A text line split at horizontal gaps wider than `gap` (its cells, when it is a table row)."""
    ws = sorted(line, key=lambda w: w.x0)
    out = [[ws[0]]]
    for w in ws[1:]:
        if w.x0 - out[-1][-1].x1 >= gap:
            out.append([w])
        else:
            out[-1].append(w)
    return out


def find_unruled_tables(words: list[_El], taken: list[tuple[float, float, float, float]] = ()) -> list[_Table]:
    """Tables drawn without any rule (text placed in columns), rendered as rows "cell | cell".

    Words outside the ruled tables (`taken`) are grouped into lines; a line is a candidate row when gaps of
    at least UNRULED_GAP_EM median word heights split it into two or more cells. A run of at least
    UNRULED_MIN_ROWS consecutive candidate rows (no more than two line heights apart) whose cells start at the
    same x positions (within UNRULED_ALIGN_PT) in every row, with short cells (median at most
    UNRULED_MAX_CELL_WORDS words and UNRULED_MAX_CELL_CHARS characters: columns of prose have long ones; on
    /work/shared/bench/pdfs only the Federal Register's three-column page had aligned lines, at 25-35
    characters a cell) is a table; its region's rows come from
    the ruled tables' row builder (`_table_rows` with no rules: cells split at whitespace gutters)."""
    free = [w for w in words if not any(_inside(w, t) for t in taken)]
    if len(free) < 2 * UNRULED_MIN_ROWS:
        return []
    med_h = statistics.median(w.h for w in free)
    gap = UNRULED_GAP_EM * med_h
    lines = _group_lines(sorted(free, key=lambda w: (w.top, w.x0)))
    segs = [_segments(ln, gap) for ln in lines]
    tables: list[_Table] = []
    k = 0
    while k < len(lines):
        if len(segs[k]) < 2:
            k += 1
            continue
        starts = [s[0].x0 for s in segs[k]]
        run = [k]
        j = k + 1
        while j < len(lines) and len(segs[j]) == len(starts):
            prev_bottom = max(w.bottom for w in lines[run[-1]])
            if min(w.top for w in lines[j]) - prev_bottom > 2.0 * med_h:
                break
            if not all(abs(s[0].x0 - x) <= UNRULED_ALIGN_PT or abs(s[-1].x1 - e) <= UNRULED_ALIGN_PT
                       for s, x, e in zip(segs[j], starts, [sg[-1].x1 for sg in segs[k]])):
                break
            run.append(j)
            j += 1
        cell_words = [len(s) for i in run for s in segs[i]]
        cell_chars = [sum(len(w.text) + 1 for w in s) - 1 for i in run for s in segs[i]]
        if (len(run) >= UNRULED_MIN_ROWS and statistics.median(cell_words) <= UNRULED_MAX_CELL_WORDS
                and statistics.median(cell_chars) <= UNRULED_MAX_CELL_CHARS):
            ws = [w for i in run for w in lines[i]]
            bbox = (min(w.x0 for w in ws), min(w.top for w in ws), max(w.x1 for w in ws), max(w.bottom for w in ws))
            rows = _table_rows(bbox, ws, [], [])
            if sum(1 for r in rows if sum(1 for c in r.split(" | ") if c.strip()) >= 2) >= UNRULED_MIN_ROWS:
                tables.append(_Table(bbox, rows))
            k = j
        else:
            k += 1
    return tables
