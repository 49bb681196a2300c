"""Text utilities shared by ingestion and stages: normalisation, sentence splitting, script detection."""

from __future__ import annotations

import re
import unicodedata

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af]")
# sentence end: . ! ? followed by space+capital/digit/quote, or CJK full stops, or a line break
_SENT_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|(?<=[。！？])|\n+")
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|Fig|Figs|No|Nos|Dr|Mr|Mrs|Ms|St|al|approx|U\.S|Inc|Co|Corp|Ltd|Jr|Sr|Vol|pp|ca)\.)$")


def normalize(text: str) -> str:
    """NFKC (full-width → ASCII, ligatures split) and collapsed horizontal whitespace."""
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"[ \t\u00a0]+", " ", text)


def has_cjk(text: str, min_share: float = 0.1) -> bool:
    """True if at least `min_share` of the non-space characters are CJK/kana/hangul."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return False
    return sum(1 for c in chars if _CJK.match(c)) / len(chars) >= min_share


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans [(start, end)] in character offsets of `text`; table rows and lines count as sentences.

    Rule-based (punctuation + capital, CJK full stops, line breaks) with a small abbreviation list; empty
    spans are dropped. Offsets make quotes exact substrings of the chunk."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        end = m.start()
        if m.group(0).strip() == "" and "\n" not in m.group(0) and _ABBREV.search(text[start:end]):
            continue  # "e.g. X" is not a sentence end
        spans.append((start, end))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s >= 2:
            out.append((s, e))
    return out


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]
