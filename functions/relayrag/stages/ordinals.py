"""Numbered places and things in Japanese (issue 31, hinoki): 「2番のりば」「3号車」「第5便」「1番線」.

A question about one of them is not answered by a sentence that names others of the same kind but not it:
「汐見港ターミナルでは、フェリーは1番のりば、高速艇は3番のりばから発着します」 says nothing of 「2番のりば」. In Japanese
text the number stands between word characters, so answer_shape.identifiers (which reads Latin codes and numbers
between separators) does not see it."""

from __future__ import annotations

import re

from relayrag.text import normalize

_ORDINAL = re.compile(
    r"(第\s*)?(\d+)\s*(番(?:のりば|乗り場|乗場|線|ホーム|窓口|出口|入口|ゲート|桟橋|岸壁|バース|ブース|レーン)|"
    r"号(?:車|機|艇|室|館|棟|線|船|炉|棚)|便|バース|桟橋|岸壁|レーン|ゲート|番目)")


def ordinals(text: str) -> dict[str, set[str]]:
    """{kind: {numbers}} of the numbered things `text` names: 「1番のりば、3番のりば」 → {"番のりば": {"1", "3"}};
    「第5便」 → {"便": {"5"}}."""
    out: dict[str, set[str]] = {}
    for m in _ORDINAL.finditer(normalize(text)):
        out.setdefault(m.group(3), set()).add(str(int(m.group(2))))
    return out


def names_other_ordinal(question: str, text: str) -> bool:
    """Does `text` name numbered things of the question's kind (のりば, 号車, 便 …) but not the question's own
    number? 「1番のりば、3番のりば」 for 「2番のりばから何が発着しますか」. False when the question names none, or the text
    names none of that kind (its other checks decide then)."""
    asked = ordinals(question)
    if not asked:
        return False
    said = ordinals(text)
    return any(kind in said and not (nums & said[kind]) for kind, nums in asked.items())
