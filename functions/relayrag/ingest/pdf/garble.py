"""Garbled PDF text-layer detection (broken font encodings): `garbled_reason`."""

from __future__ import annotations

import functools
import re
import unicodedata

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
