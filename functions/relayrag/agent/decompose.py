"""The deterministic supervisor's language side (no LLM): split a question into its parts, find a part that
refers back to an earlier one, carry the earlier part's table rows into it, and turn a document part into the
keyword query relayrag's no-LLM answer stage can match.

- `split_parts`: clause boundaries in English (`?` or `;` followed by more text, and `, and` / `and` / `also`
  / `then` before a question word or auxiliary: "Which countries have the most customers, and what does our
  refund policy say about them?") and Japanese (`。？！` followed by more text, and `、` after an embedded
  question's `か`, before また / そして / それから / さらに / あと, or after a question word + で (どこで、)
  when a later clause refers back (それら, その …); the first clause then asks どこ？). Fragments under two words (one CJK
  character run under four characters) stay with their neighbour.
- `reference`: the first pronoun or deictic word of a part that points back (them, they, their, those, these,
  it, its, that, he, she, …; 彼ら, それら, これら, その, 上記, 該当, …), or None.
- `row_entities`: what a table result names: per row (best first, at most ENTITIES_MAX) its text cells joined
  ("USA"; "Hugh O'Reilly"), numbers and dates left out — the things a later part can ask about.
- `resolve`: the part with its reference replaced by one entity (possessives get "'s"; a Japanese
  demonstrative keeps its noun: それらの国 → ブラジル).
- `keyword_query`: an English part without question words, auxiliaries, pronouns and verbs of saying
  ("what does our refund policy say about Canada?" → "refund policy Canada"); relayrag's extractive answer
  stage (stages/answerability.py) weighs every word the collection never uses heavily, so "our" or "say"
  alone would turn a good passage into a refusal. CJK text is returned unchanged.
"""

from __future__ import annotations

import re
from typing import Any

ENTITIES_MAX = 3  # rows of a table result carried into a later part (one document question each)

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_QWORD = (r"what|which|who|whom|whose|where|when|why|how|does|do|did|is|are|was|were|can|could|should|would|"
          r"will|has|have|had|list|show|tell|give|find|summari[sz]e|explain|describe")
_EN_SPLIT = re.compile(
    rf"(?<=[?;])\s+(?=\S)|,?\s+(?:and|also|then|and then|and also)\s+(?=(?:{_QWORD})\b)|;\s*", re.I)
_JA_WH = ("どこ", "どれ", "どちら", "何", "誰", "いつ", "いくつ", "いくら")
# "…はどこで、それらについて…": a question word + で ends a clause when a later clause refers back to it
_JA_SPLIT = re.compile(r"(?<=[。？！?!])\s*(?=\S)|(?<=か)、|、(?=(?:また|そして|それから|さらに|あと|それと))|"
                       r"(?:" + "|".join(f"(?<={w}で)" for w in _JA_WH) + r")、"
                       r"(?=.*(?:それら|これら|あれら|その|この|彼ら|彼女ら|上記|該当))")
_JA_WH_DE = re.compile(r"(" + "|".join(_JA_WH) + r")で$")
_JA_LEAD = re.compile(r"^(?:また|そして|それから|さらに|あと|それと)、?")
_EN_LEAD = re.compile(r"^(?:and then|and also|and|also|then)\b[\s,]*", re.I)

_REF_EN = re.compile(r"\b(them|they|their|theirs|those|these|it|its|that one|he|she|him|his|her|hers)\b", re.I)
_POSSESSIVE = {"their", "theirs", "its", "his", "her", "hers"}
# a demonstrative with its noun (それらの国) keeps the noun out: the entity replaces both
_REF_JA = re.compile(r"(?:それらの|これらの|あれらの|その|この|上記の|該当の|該当する)[\u3400-\u9fff\u30a0-\u30ff]+|"
                     r"彼女ら|彼ら|それら|これら|あれら|彼女|彼|上記|該当")

_DROP_EN = frozenset("""a an the what which who whom whose where when why how does do did is are was were be been
being can could should would will shall may might must has have had our ours we us my me i you your yours
this that these those them they their theirs it its he she him his her hers about of for to in on at by with
from say says said tell tells mention mentions state states stated there any some please also and or then
anything something""".split())
FUNCTION_WORDS_EN = _DROP_EN  # the words keyword_query drops (question words, pronouns, verbs of saying)


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def _words(text: str) -> int:
    return len(_CJK.findall(text)) // 4 if is_cjk(text) else len(text.split())


def split_parts(question: str) -> list[str]:
    """The clauses of `question` in order (one item when it has no clause boundary)."""
    text = " ".join(question.split())
    pieces = _JA_SPLIT.split(text) if is_cjk(text) else _EN_SPLIT.split(text)
    parts: list[str] = []
    for i, p in enumerate(pieces):
        p = (p or "").strip(" ,、")
        if is_cjk(p):  # the clause cut at "どこで、" asks "どこ？"
            p = _JA_WH_DE.sub(r"\1？", p)
        if i:
            p = _JA_LEAD.sub("", p) if is_cjk(p) else _EN_LEAD.sub("", p)
        if not p:
            continue
        if parts and _words(p) < 2:
            parts[-1] = f"{parts[-1]} {p}"
        elif parts and _words(parts[-1]) < 2:
            parts[-1] = f"{parts[-1]} {p}"
        else:
            parts.append(p)
    return parts or [question.strip()]


def reference(part: str) -> str | None:
    """The word (or Japanese demonstrative phrase) by which `part` refers to an earlier part, or None."""
    m = _REF_JA.search(part) if is_cjk(part) else _REF_EN.search(part)
    return m.group(0) if m else None


def _is_value(v: Any) -> bool:
    """A cell that names something (text), not a number, date or empty value."""
    if v is None or isinstance(v, (int, float, bool)):
        return False
    s = str(v).strip()
    return bool(s) and not re.fullmatch(r"[-+\d.,:/ T%$€¥]+", s)


def row_entities(rows: list[list], limit: int = ENTITIES_MAX) -> list[str]:
    """The text cells of the first `limit` rows, each row's joined by a space (rows without text skipped)."""
    out: list[str] = []
    for row in rows or []:
        name = " ".join(str(v).strip() for v in row if _is_value(v))
        if name and name not in out:
            out.append(name)
        if len(out) >= limit:
            break
    return out


def resolve(part: str, ref: str, entity: str) -> str:
    """`part` with `ref` (from `reference`) replaced by `entity`."""
    if is_cjk(part):
        return part.replace(ref, entity, 1)
    repl = f"{entity}'s" if ref.lower() in _POSSESSIVE else entity
    return re.sub(rf"\b{re.escape(ref)}\b", repl, part, count=1)


def keyword_query(part: str) -> str:
    """`part` without function words (see the module docstring); the part itself when nothing would be left
    or it is CJK."""
    if is_cjk(part):
        return part
    kept = [w for w in re.findall(r"[\w'’.-]+", part) if w.lower().strip("'’.") not in _DROP_EN]
    kept = [w.rstrip(".") for w in kept if w.rstrip(".")]
    return " ".join(kept) if kept else part
