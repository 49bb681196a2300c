"""A sentence that says the value asked for is not decided or not known is no answer to a question for it.

Minutes and notices record what was left open: 「後任の海務監督については、現在人選中であり、本日は決定しなかった。」,
「船名、建造造船所及び就航時期はいずれも未定である。」, "The opening date has not yet been decided.", "Venue: TBC". Such a
sentence shares every word of "Who is the new harbour master?" / 「新造船の船名は何ですか」 and its section, so coverage
alone took it for the answer and the check called it grounded. It answers a yes/no question ("Has the name been
decided?", 「冬季減便は決まりましたか」: no, 継続審議) and nothing else (issue 31, hinoki)."""

from __future__ import annotations

import re

from relayrag.text import normalize

_UNDECIDED_JA = re.compile(
    r"未定|未決定|未確定|決定しなかった|決定していない|決定されていない|決まっていない|決まらなかった|"
    r"議論しなかった|審議しなかった|結論(?:は|を)出さ|結論に至らなかった|継続審議|人選中|調整中|検討中|"
    r"確定していない|確定次第|決まり次第|決定次第|改めて(?:お知らせ|決定|判断)")
# English: "not yet decided", "has not been decided", "to be confirmed", "TBC" — not a condition in a relative clause
# ("seats that have not been confirmed by the agent … are released"), nor "under review" (documents under review)
_UNDECIDED_EN = re.compile(
    r"\b(?:not yet (?:been )?(?:decided|determined|confirmed|agreed|set|fixed|finali[sz]ed|known|announced)|"
    r"(?:has|have|had) not (?:yet )?been (?:decided|determined)|(?:is|are|was|were) (?:still )?undecided|"
    r"(?:yet|still) to be (?:decided|determined|confirmed|agreed|set|fixed|announced)|"
    r"(?:(?:is|are|remains?)\s+|^|[:：(]\s*)to be (?:decided|determined|confirmed|announced)|\btb[acd]\b|"
    r"no decision (?:was|has been|had been) (?:made|taken|reached)|under (?:consideration|discussion))", re.I)


def says_undecided(text: str) -> bool:
    """Does `text` say that something is not decided, not discussed or not known yet (未定, 決定しなかった, 人選中,
    継続審議, 検討中, "not yet decided", "to be confirmed", "TBC", "under consideration")?"""
    t = normalize(text)
    return bool(_UNDECIDED_JA.search(t) or _UNDECIDED_EN.search(t))


def undecided_answer(question: str, text: str, heading: str = "") -> bool:
    """Is `text` no answer to `question` because it says the thing is undecided, or is an item under a heading that
    says so (「継続審議・未決定事項」, "Open items: to be decided")? Only for questions that ask a value (who / when /
    what / how much …): a yes/no question ("Has … been decided?", 「…は決まりましたか」) is answered by it."""
    from relayrag.stages.responsive import yes_no_predicate
    if not says_undecided(text) and not (heading and says_undecided(heading)):
        return False
    if yes_no_predicate(question) is not None:
        return False
    q = normalize(question)
    # "Is the date decided?" / 「…は決まっていますか」 when the yes/no parse did not see it (no question word)
    if re.search(r"何|誰|どこ|いつ|どの|どなた|いくら|どれ|\b(?:who|when|what|which|where|how)\b", q, re.I):
        return True
    return not re.search(r"(?:決ま|決定|確定|未定).{0,8}(?:か|？|\?)\s*$|\b(?:decided|confirmed|determined|agreed|set)"
                         r"\s*(?:yet\s*)?\?\s*$", q)
