"""Questions about tables: totals and rates (split from stages/answerability.py along its seam).

- asks_for_total / is_total_label: a question for a total is answered by the row that states it ("Totals",
  合計), not by a row it sums;
- rate_units / other_rate: an amount per another unit ("cost per operator") does not answer a question per
  this one ("What does each airplane cost?").
"""

from __future__ import annotations

import re

from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.local_context import _TABLE_SEP
from relayrag.text import has_cjk, normalize


_TOTAL_Q_EN = re.compile(r"\b(?:totals?|overall|altogether|in all|combined|grand total|sum of|all (?:the )?(?:states|"
                         r"countries|regions|rows|items))\b|\bacross all\b", re.I)
_TOTAL_Q_CJK = re.compile(r"合計|総計|総数|全体")
_TOTAL_LABEL = re.compile(r"^(?:grand\s+)?(?:totals?|sum|overall|all(?:\s+\w+)?|combined)\b|^total\b|^(?:合計|総計|計)$",
                          re.I)


def asks_for_total(question: str) -> bool:
    """Does the question ask for a total ("the total …", "overall", "across all states", 合計)? Its answer in a
    table is the row that states the total, not one of the rows it sums."""
    q = normalize(question)
    return bool(_TOTAL_Q_CJK.search(q) if has_cjk(q) else _TOTAL_Q_EN.search(q))


def is_total_label(label: str) -> bool:
    """Is a table row's label (its first cell) a total's ("Totals", "Grand total", "All states", 合計)?"""
    return bool(_TOTAL_LABEL.match(" ".join(label.split()).strip(" *:")))


_RATE_Q = re.compile(r"\b(?:per|each|every)\s+([^\W\d_]+(?:[-\s][^\W\d_]+)?)", re.I)
_RATE_TEXT = re.compile(r"\bper[-\s]+([^\W\d_]+(?:-\s*[^\W\d_]+)?)", re.I)


def rate_units(text: str, question: bool = False) -> list[set[str]]:
    """The units of the rates `text` states ("$7,650 per operator" → [{operat}], "$85 per work-hour" →
    [{work, hour}]); of a question also "each" / "every" ("What does each airplane cost?" → [{airplan}])."""
    return [set(tokenize(m.group(1))) for m in (_RATE_Q if question else _RATE_TEXT).finditer(text)
            if tokenize(m.group(1))]


def other_rate(question: str, text: str) -> bool:
    """Does prose `text` state its amounts per another unit than the question asks for ("cost per operator"
    for "What does each airplane cost?")? True when the question names a unit (per / each X) and every
    rate the sentence states is per something else; False when it states none (a plain amount) or one of
    the question's units. Table rows are not read here: their units sit in the column names."""
    asked = rate_units(question, question=True)
    stated = rate_units(text)
    if not asked or not stated or _TABLE_SEP in text:
        return False
    return not any(u & a for u in stated for a in asked)
