"""Spelling tolerance for questions: a misspelt word is corrected to the collection's nearest word.

`respell(question, snapshot)` corrects a word of a Latin-script question only when all of these hold:
- it is a plain word of letters (4+ of them), not part of an identifier or a number ("K1", "RX-7", "2,000",
  "AD-2020" and all-capital acronyms stay as typed) and not a stopword;
- the collection does not have it: none of its BM25 tokens (relayrag.retrieval.tokenize) occurs in the
  snapshot's BM25 index (df = 0) — a word the collection holds, however rare, is never changed;
- it is not a word of the English lexicon the embedder was trained with (the whole-word entries of the
  bundled MiniLM word-piece vocabulary, ~20k words): a correct word the collection lacks ("tungsten",
  "Venus") is a question about something else, not a typo, and correcting it would answer another question;
- a word of the collection's own text lies within Damerau-Levenshtein distance 1 (words of 4 letters) or 2
  (longer), length difference included. The nearest one wins; among equally near ones the most frequent in
  the collection (frequency-weighted, as in Norvig's corrector), then the alphabetically first.

The collection's surface words (lower-cased, with their counts over the chunks' text) are counted once per
snapshot object and kept on it; the BM25 index itself holds stems, which are not words to show a person.
Japanese and other non-Latin questions are returned unchanged (no word boundaries to correct on).
"""

from __future__ import annotations

import functools
import json
import re
import weakref
from collections import Counter
from pathlib import Path

from relayrag.retrieval.bandit import query_context
from relayrag.retrieval.tokenize import tokenize

MIN_LEN = 4
# a whitespace-delimited piece of the question; a word inside it is corrected only if the piece is the word
# itself, optionally with surrounding punctuation (so "RX-7", "K1", "v2.0", "e-mail" stay as typed)
_PIECE = re.compile(r"\S+")
_WORD = re.compile(r"^([\"'(\[“‘]*)([A-Za-z]+)([\"')\]”’.,;:!?]*)$")
_TEXT_WORD = re.compile(r"[A-Za-z]+")

_VOCAB: "weakref.WeakKeyDictionary[object, Counter[str]]" = weakref.WeakKeyDictionary()


@functools.lru_cache(maxsize=1)
def lexicon() -> frozenset[str]:
    """Whole English words of the bundled MiniLM word-piece vocabulary (lower case, letters only, 2+ letters);
    empty if the asset is missing."""
    path = Path(__file__).resolve().parents[1] / "assets" / "minilm" / "tokenizer.json"
    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, KeyError, ValueError):
        return frozenset()
    return frozenset(w for w in vocab if len(w) >= 2 and w.isascii() and w.isalpha() and w.islower())


def surface_vocabulary(snapshot) -> Counter[str]:
    """{lower-cased word of letters: count} over the snapshot's chunk texts, counted once per snapshot."""
    try:
        return _VOCAB[snapshot]
    except (KeyError, TypeError):
        pass
    counts: Counter[str] = Counter()
    for ch in snapshot.chunks:
        counts.update(w.lower() for w in _TEXT_WORD.findall(ch.get("text") or "") if len(w) >= 3)
    try:
        _VOCAB[snapshot] = counts
    except TypeError:  # an object without weak references: count again next time
        pass
    return counts


def distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein (optimal string alignment) distance of a and b; limit + 1 once it exceeds limit."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def _in_collection(word: str, bm25_index) -> bool:
    toks = tokenize(word)
    return not toks or all(bm25_index.df(t) > 0 for t in toks)  # no tokens: a stopword, nothing to correct


def nearest(word: str, vocab: Counter[str]) -> str | None:
    """The collection word nearest to `word` (lower case) within the module's distance limits, or None."""
    limit = 1 if len(word) <= MIN_LEN else 2
    best: tuple[int, int, str] | None = None
    for cand, n in vocab.items():
        if abs(len(cand) - len(word)) > limit or cand == word:
            continue
        d = distance(word, cand, limit)
        if d <= limit and (best is None or (d, -n, cand) < best):
            best = (d, -n, cand)
    return best[2] if best else None


def respell(question: str, snapshot) -> tuple[str, list[tuple[str, str]]]:
    """(corrected question, [(word as typed, correction)]): the question unchanged with [] when nothing is
    corrected (see the module docstring for which words may change and to what)."""
    if query_context(question) != "latin" or snapshot is None or not len(snapshot):
        return question, []
    changes: list[tuple[str, str]] = []
    vocab: Counter[str] | None = None
    out: list[str] = []
    pos = 0
    for m in _PIECE.finditer(question):
        out.append(question[pos:m.start()])
        pos = m.end()
        piece = m.group(0)
        w = _WORD.match(piece)
        word = w.group(2) if w else ""
        # the collection's own words first: a df lookup, while the lexicon is read from the tokenizer's JSON
        # (~25 ms) only the first time a word the collection lacks needs it
        if (len(word) < MIN_LEN or (word.isupper() and len(word) > 1) or _in_collection(word, snapshot.bm25)
                or word.lower() in lexicon()):
            out.append(piece)
            continue
        vocab = surface_vocabulary(snapshot) if vocab is None else vocab
        fix = nearest(word.lower(), vocab)
        if fix is None or _in_collection(fix, snapshot.bm25) is False:
            out.append(piece)
            continue
        fixed = fix.capitalize() if word[0].isupper() else fix
        changes.append((word, fixed))
        out.append(w.group(1) + fixed + w.group(3))  # type: ignore[union-attr]
    out.append(question[pos:])
    return ("".join(out), changes) if changes else (question, [])
