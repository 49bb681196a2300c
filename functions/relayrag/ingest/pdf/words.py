"""Characters to words (font-size-relative gaps), sideways text (`_View`), stray rotated glyphs, the first heading."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from relayrag.ingest.pdf.layout import _El, _group_lines

X_TOLERANCE_RATIO = 0.15  # a gap wider than 0.15 em splits words: font-size-relative, so 5 pt tables keep
#                           their spaces (pdfplumber's fixed 3 pt glues "DISTRICTDIRECTOR" together)


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
            if (prev is not None and c["text"] == prev["text"] and abs(c["x0"] - prev["x0"]) < 1
                    and abs(c["top"] - prev["top"]) < 1):
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
