"""The parts of a question's wording that the answerability checks read apart (issue 31, false refusals).

- asking_clause: the sentence of a question that asks, after sentences of circumstances;
- main_clause: that sentence without its conditional clause (if / when / in case …; 場合、/ とき、/ たら、), whose
  words weigh ASIDE_WEIGHT in coverage (stages/answerability.py);
- bare_word: a word without its contraction ("What's" → what, "don't" → do), so contracted question words are
  read as question words;
- LETTERS_Q_JA: the form a Japanese question asks its answer in, Latin letters (アルファベット3文字で表すと, 英字で,
  ローマ字の略称は), which the answer's letters meet, not its words.
"""

from __future__ import annotations

import re

from relayrag.text import LATIN_LETTER, asking_clause, has_cjk, normalize  # noqa: F401 (asking_clause: re-exported)

_EN_WORD = re.compile(rf"[{LATIN_LETTER}0-9][{LATIN_LETTER}0-9\-/.'’]*")

_CONTRACTION = re.compile(r"^(\w+?)(?:n't|'s|'re|'ve|'d|'ll|'m)$")
_NEGATED = {"wo": "will", "ca": "can", "sha": "shall"}  # won't, can't, shan't


def bare_word(word: str) -> str:
    """A question's word without its contraction: "What's" → what, "where're" → where, "don't" → do, "can't" →
    can, "won't" → will, "isn't" → is, "company's" → company. Question words are read from the bare word: a
    contracted "What's" or "doesn't" is as much a question word as "what" or "does", not a content term that
    no document contains (which would weigh twice its idf, see ABSENT_BOOST)."""
    w = word.lower().replace("’", "'").strip(".'")
    m = _CONTRACTION.match(w)
    if not m:
        return w
    base = m.group(1)
    return _NEGATED.get(base, base) if w.endswith("n't") else base


# a conditional clause inside the asking sentence states the asker's circumstances, not what is asked (issue 31:
# the answer states the rule, the question adds its case): English "… if / when / whenever / once / in case …"
# after the question's first word, up to a comma or the end, or a leading "If …," clause; Japanese a clause ending
# in 場合、/ とき、/ ときは / たら、/ なら、/ れば、 before what is asked
_COND_EN = re.compile(r"(?<=\w)[\s,]+(?:if|when|whenever|once|in case)\s+\w[^,;]*", re.I)
_COND_EN_LEAD = re.compile(r"^\s*(?:if|when|whenever|once|in case)\b[^,?]+,\s*(?=\S)", re.I)
_COND_CJK = re.compile(r"^.+?(?:場合|とき|時|たら|なら|れば)(?:は|には|に|で)?[、,，]\s*(?=\S)")


def main_clause(clause: str) -> str:
    """The asking sentence without its conditional clause ("Who approves my trip if it lasts 6 nights?" → "Who
    approves my trip?"; "If I resign, how much notice must I give?" → "how much notice must I give?"; 6泊する場合、
    誰の承認が必要ですか？ → 誰の承認が必要ですか？). Its words then weigh ASIDE_WEIGHT in coverage, like a sentence
    of circumstances before the question. A "when" that opens the question asks; it is no condition."""
    if has_cjk(clause):
        rest = _COND_CJK.sub("", clause, count=1)
        return rest if len(rest) >= 4 else clause
    rest = _COND_EN_LEAD.sub("", clause, count=1)
    if rest == clause:
        rest = _COND_EN.sub("", clause, count=1)
    return rest if len(_EN_WORD.findall(rest)) >= 3 else clause


# 「アルファベット3文字で表すと」, 「英字4文字で」, 「ローマ字で書くと」: the answer is written in Latin letters (an
# abbreviation such as TNA), so these words are its form, not a thing the answering sentence names (issue 31);
# group 1: the number of letters, when given
LETTERS_Q_JA = re.compile(r"(?:アルファベット|英字|英文字|ローマ字)(?:の?大文字)?\s*(?:([0-9０-９一二三四五六七八九十]+)\s*文字)?"
                          r"(?=\s*(?:で|の|に|を|は))")
