"""Follow-up questions made standalone from the thread without an LLM: the deterministic router's "condense
question" step (with a chat model the model rewrites the question instead, graph.condense_with_model).

A turn that leans on the previous one cannot be asked of the documents alone ("And for Brazil?" retrieves
nothing about refunds), and sending it glued to the previous question makes the extractive answer stage
(stages/answerability.py) pick the passage that answered the previous question again: most of the glued
question's terms are the previous question's. `condense` rewrites it into one standalone question instead,
from `previous`, the previous turn's standalone question (not its raw text: a chain of follow-ups keeps its
subject):

- elliptical: a lead ("and", "also", "what about", "how about", "what of", "same for"; では / じゃあ /
  それで …) followed by a fragment, or a bare fragment of at most three words ending in "?" (Japanese: 「Xは？」
  「Xの場合は？」「Xについては？」「Xも？」「Xはどう？」). The fragment replaces the part of `previous` it
  stands in parallel to, tried in this order:
    1. the phrase after the same preposition ("And for Brazil?" after "What is the refund window for EU
       customers?" → "What is the refund window for Brazil?");
    2. the noun phrase with the same head noun ("and handgun checks?" after "How many long gun checks did
       Kentucky have?" → "How many handgun checks did Kentucky have?");
    3. a named entity of `previous` (capitalised words, acronyms, numbers), when the fragment names one too
       ("What about Florida?" after "… in Pennsylvania?" → "… in Florida?"); Japanese: the leading topic
       before its particle when both name something (katakana, Latin letters, digits, or a place suffix:
       「東京タワーの高さは？」 + 「富士山は？」 → 「富士山の高さは？」).
  Otherwise the fragment is a new aspect of the previous subject ("What about the exceptions?" → "What about
  the exceptions for the refund window for EU customers?"; 「例外は？」 → 「EUの顧客の例外は？」).
- ordinal: "the second one", "the first", "the last one", 2つ目, 最初の… stand for the n-th item of the
  thread's latest list (`items`: the entities of the last table result's rows), then as above.
- anaphoric: a pronoun that points back (it, its, they, them, their, those, these, this, that, he, she, …;
  それ, その…, 彼ら, …) is replaced by the previous question's subject (`subject`: "What does the federal
  register notice propose?" → "the federal register notice") when the question is short (FOLLOW_UP_WORDS).

A follow-up in another language than the previous question (a Japanese 「ブラジルは？」 after an English question)
is asked as written: without an LLM there is nothing to translate the previous subject with.

A follow-up of a question of several parts (decompose.split_parts) continues its last part ("And Germany?"
after "Which three countries …, and what does our refund policy say about them?" → "What does our refund
policy say about Germany?": a named fragment takes a pronoun's place when the part names nothing).
Anything else is standalone (None). Everything here is text handling of the user's own words: nothing is
invented, the rewrite uses only words of the two questions (and of the listed items), so the answer stage
never sees a word the user did not say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from relayrag.agent.decompose import is_cjk, split_parts

FOLLOW_UP_WORDS = 15  # a longer question is read as standalone even with a pronoun in it

_PREP = (r"for|in|at|on|of|from|to|about|during|with|under|by|since|after|before|between|among|within|over|"
         r"into|per|like")
_DET = r"the|a|an|this|that|these|those|our|your|their|its|my|his|her"
_QSTART = frozenset("""what which who whom whose where when why how is are was were does do did can could should
would will shall may might has have had list show tell give find explain describe summarize summarise compare
name""".split())
_AUX = r"is|are|was|were|does|do|did|can|could|should|would|will|shall|may|might|has|have|had"
_LEAD_EN = re.compile(r"^(?:(?:and|also|but|so|ok|okay|well|then|now|right)\b[\s,]*)+", re.I)
_ABOUT_EN = re.compile(r"^(?:(?:what|how)\s+about|what\s+of|same\s+(?=(?:for|in|with|about|at|on)\b)|"
                       r"the\s+same\s+(?=(?:for|in|with|about|at|on)\b)|"
                       # "Is that also true for Canada?", "Does it apply to Brazil too?", "Is it the same in 2016?"
                       r"(?:is|does|would|will|do)\s+(?:that|this|it|the\s+same)\s+(?:also\s+)?"
                       r"(?:true|the\s+same|apply|applies|hold|holds|work|count)\s+(?:also\s+)?"
                       r"(?=(?:for|to|in|with|at|on)\b))\b[\s,]*", re.I)
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
             "fifth": 5, "5th": 5, "last": -1}
_ORDINAL_EN = re.compile(r"\b(?:the\s+)?(first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)"
                         r"(?:\s+(?:one|item|row|entry|result))?\b", re.I)
_PRONOUN_EN = re.compile(r"\b(it|its|they|them|their|those|these|he|she|him|his|her)\b|"
                         rf"\b(that|this)\b(?=\s*(?:[?.!,]|$|\s+(?:{_AUX}|mean|means|say|says|apply|applies)\b))",
                         re.I)
_POSSESSIVE = frozenset({"its", "their", "his", "her"})
_ASPECT_EN = re.compile(r"^What about (?P<aspect>.+?) for (?P<subject>.+)\?$")  # the aspect form written below

_LEAD_JA = re.compile(r"^(?:では|じゃあ|じゃ|それでは|それなら|それで|あと|また|そして|で|ちなみに|ところで)[、,\s]*")
_FRAGMENT_JA = re.compile(r"^(?P<x>.+?)(?:の場合|について|に関して|については|では|には|だと)?(?:は|も)"
                          r"(?:どう(?:ですか|でしょうか|なの|なる|なりますか)?)?[？?。]*$")
_ORDINAL_JA = re.compile(r"(最初|一つ目|1つ目|１つ目|二つ目|2つ目|２つ目|三つ目|3つ目|３つ目|最後)(?:の(?:もの|国|項目|行))?")
_ORDINAL_JA_N = {"最初": 1, "一つ目": 1, "1つ目": 1, "１つ目": 1, "二つ目": 2, "2つ目": 2, "２つ目": 2,
                 "三つ目": 3, "3つ目": 3, "３つ目": 3, "最後": -1}
_PRONOUN_JA = re.compile(r"(?:それらの|これらの|その|この|上記の)[\u3400-\u9fff\u30a0-\u30ff]+|彼女ら|彼ら|それら|これら|"
                         r"それ|これ|彼女|彼")
_PARTICLE_JA = re.compile(r"^(?P<topic>.+?)(?:の|は|が|を|に|で|へ|と|から|まで)")
_QWORD_JA = re.compile(r"^(?:何|なに|どの|どこ|どれ|いつ|誰|だれ|いくつ|いくら|なぜ|どう)")
_NAME_JA = re.compile(r"[\u30a0-\u30ffA-Za-z0-9０-９Ａ-Ｚａ-ｚ]|(?:山|川|湖|島|都|道|府|県|市|区|町|村|国|駅|港|"
                      r"大学|省|庁|社|寺|城|タワー)$")


@dataclass(frozen=True)
class Standalone:
    """A follow-up rewritten into a standalone question. `how` says what was done, for the reply's note."""

    question: str
    how: str


def _strip_end(text: str) -> str:
    return text.strip().rstrip("?？.。!！ ").strip()


def _is_entity(fragment: str) -> bool:
    """A fragment that names something: a capitalised word after its first word, an acronym, a number, or a
    capitalised first word (a lead was stripped, so it was not the sentence's first word)."""
    words = [w for w in re.findall(r"[\w'’.-]+", fragment) if w.lower() not in _DET.split("|")]
    return bool(words) and any(w[0].isupper() or w[0].isdigit() for w in words)


def _entity_spans(text: str) -> list[tuple[int, int]]:
    """Spans of named things in `text` (runs of capitalised words after the first word, acronyms, numbers),
    each with a "the " before it included."""
    spans = []
    for m in re.finditer(r"\b(?:[A-Z][\w'’.-]*|\d[\d,.]*)(?:\s+(?:[A-Z][\w'’.-]*|\d[\d,.]*))*", text):
        if m.start() == 0:
            first, *rest = m.group(0).split(" ", 1)
            if first.lower() in _QSTART or not rest:
                if not rest:
                    continue
                start = m.start() + len(first) + 1
                spans.append((start, m.end()))
                continue
        start = m.start()
        before = text[:start]
        if re.search(r"\bthe\s+$", before, re.I):
            start = re.search(r"\bthe\s+$", before, re.I).start()  # type: ignore[union-attr]
        spans.append((start, m.end()))
    return spans


def subject(previous: str) -> str:
    """The noun phrase `previous` asks about (what a later "it" or "they" stands for): "What is the refund
    window for EU customers?" → "the refund window for EU customers"; "What does the federal register notice
    propose?" → "the federal register notice"; "How many handgun checks were there in Texas?" → "handgun
    checks in Texas". The question without its question words when no pattern fits."""
    p = _strip_end(previous)
    q = r"(?:what|which|who|whom|whose|where|when|why|how(?:\s+(?:many|much|long|often|old|far|big|large|tall))?)"
    m = re.match(rf"^{q}\s+(?P<head>(?:[\w'’-]+\s+){{0,3}}?)(?P<aux>{_AUX})\s+(?P<rest>.+)$", p, re.I)
    if m:
        head, aux, rest = m.group("head").strip(), m.group("aux").lower(), m.group("rest").strip()
        if aux in ("is", "are", "was", "were"):
            if re.match(r"^there\b", rest, re.I):
                return " ".join(x for x in (head, rest[5:].strip()) if x) or rest
            return rest if not head else f"{head} {rest}" if re.match(r"^(?:many|much)\b", head) else rest
        words = rest.split()
        prep = next((i for i, w in enumerate(words) if re.fullmatch(_PREP, w, re.I)), None)
        cut = prep - 1 if prep is not None and prep > 1 else len(words) - 1 if len(words) > 1 else len(words)
        return " ".join(words[:cut])
    m = re.match(rf"^{q}\s+(?P<rest>.+)$", p, re.I)
    if m:
        rest = m.group("rest")
        # "Who wrote the handbook" / "How many worker bees live in a colony": the noun phrase after a verb, or
        # the counted noun
        if re.match(r"^(?:how\s+(?:many|much))\b", p, re.I):
            # the counted noun (the words before the verb, the word before the first preposition), with the
            # phrase that names where or what ("customers live in Brazil" → "customers in Brazil")
            words = rest.split()
            verb = next((i for i in range(1, len(words) - 1) if re.fullmatch(_PREP, words[i + 1], re.I)), None)
            noun = " ".join(words[:verb]) if verb else " ".join(words[:2]) if len(words) > 2 else rest
            named = re.search(rf"\b(?:{_PREP})\s+(?:the\s+)?(?:[A-Z][\w'’.-]*|\d[\d,.]*)(?:\s+[A-Z][\w'’.-]*)*",
                              rest)
            return f"{noun} {named.group(0)}" if named and named.group(0) not in noun else noun
        dm = re.search(rf"\b(?:{_DET})\b.*$", rest, re.I)
        return dm.group(0) if dm else rest
    m = re.match(r"^(?:list|show|tell me about|give|find|explain|describe|summari[sz]e|compare)\s+(?P<rest>.+)$",
                 p, re.I)
    return m.group("rest") if m else p


def _parallel(previous: str, fragment: str) -> tuple[str, str] | None:
    """`previous` with the part that `fragment` stands in parallel to replaced by it (rules 1-3 of the module
    docstring), and what was replaced; None when nothing is parallel."""
    p = _strip_end(previous)
    frag = _strip_end(fragment)
    fm = re.match(rf"^({_PREP})\s+(.+)$", frag, re.I)
    if fm:  # 1. the same preposition: replace the phrase after its last use in previous
        prep = fm.group(1).lower()
        uses = list(re.finditer(rf"\b{prep}\s+(?P<phrase>.+?)(?=\s*(?:,|;|\b(?:{_PREP}|and|or)\b|$))", p, re.I))
        if uses:
            u = uses[-1]
            return p[:u.start()] + frag + p[u.end():] + "?", u.group(0)
        frag = fm.group(2)
    words = re.findall(r"[\w'’-]+", frag)
    core = [w for w in words if w.lower() not in _DET.split("|")]
    if core and not _is_entity(frag):  # 2. the same head noun: replace previous's noun phrase ending in it
        head = core[-1].lower().rstrip("s")
        for m in re.finditer(r"[\w'’-]+", p):
            if m.group(0).lower().rstrip("s") == head and m.start() > 0:
                before = p[:m.start()].split()
                start = m.start()
                stop = re.compile(rf"^(?:{_AUX}|{_PREP}|{_DET}|what|which|who|how|many|much|and|or|there)$", re.I)
                while before and not stop.match(before[-1]):
                    start -= len(before.pop()) + 1
                return p[:start] + " ".join(core) + p[m.end():] + "?", p[start:m.end()]
        return None
    if core and _is_entity(frag):  # 3. a named entity of previous, the last one
        spans = _entity_spans(p)
        plain = {w.lower() for w in re.findall(r"[\w'’-]+", p)}
        named = names(frag)
        common = [w for w in core if not any(w in n for n in named)]
        if named and common and all(w.lower() in plain for w in common):
            # "customers in Canada" after "… customers in Brazil …": only the name is new
            frag = " ".join(named)
        number = bool(re.fullmatch(r"[\d,.]+", " ".join(core)))
        spans = [s for s in spans if bool(re.fullmatch(r"(?:the\s+)?[\d,.]+", p[s[0]:s[1]], re.I)) == number] or \
            spans
        if spans:
            s, e = spans[-1]
            return p[:s] + frag + p[e:] + "?", p[s:e]
        pron = _PRONOUN_EN.search(p)
        if pron and pron.group(0).lower() not in _POSSESSIVE:  # "… say about them?" + "And Germany?"
            return p[:pron.start()] + frag + p[pron.end():] + "?", pron.group(0)
    return None


def _nth(items: list[str], n: int) -> str | None:
    if not items:
        return None
    i = len(items) - 1 if n < 0 else n - 1
    return items[i] if 0 <= i < len(items) else None


def condense(question: str, previous: str | None, items: list[str] | None = None) -> Standalone | None:
    """`question` made standalone from `previous` (the thread's previous standalone question) and `items`
    (the thread's latest list), or None when it reads as standalone (see the module docstring)."""
    if not previous or not question.strip():
        return None
    if is_cjk(question):
        return _condense_ja(question.strip(), previous, items or [])
    return _condense_en(question.strip(), previous, items or [])


def _condense_en(question: str, previous: str, items: list[str]) -> Standalone | None:
    parts = split_parts(previous)
    if len(parts) > 1:  # a question of several parts: a follow-up continues its last part
        previous = parts[-1][0].upper() + parts[-1][1:]
    text = " ".join(question.split())
    lead = _LEAD_EN.match(text)
    rest = text[lead.end():] if lead else text
    about = _ABOUT_EN.match(rest)
    rest = rest[about.end():] if about else rest
    led = bool(lead or about)
    if not rest.strip(" ?.!"):
        return None
    rest = re.sub(r"\s+(?:too|as well)(?=\s*[?.!]*$)", "", rest, flags=re.I)
    first = rest.split()[0].lower().strip(",?.!")
    short_bare = len(rest.split()) <= 3 and text.endswith("?")
    # "And for the UK, what is the deadline?": a question after the fragment is no fragment (asked as written)
    asks = re.search(r",\s*(\w+)", rest)
    fragment = (about is not None or (first not in _QSTART and (led or short_bare))) and not (
        asks and asks.group(1).lower() in _QSTART)
    ordinal = _ORDINAL_EN.search(rest)
    item = _nth(items, _ORDINALS[ordinal.group(1).lower()]) if ordinal else None
    if fragment:
        frag = _strip_end(rest)
        if ordinal and item:
            frag = frag[:ordinal.start()] + item + frag[ordinal.end():]
        elif not led and not _is_entity(frag[1:] if frag else frag) and len(frag.split()) > 1:
            return None  # "Refund policy?" unled, two common words: a short standalone question
        parallel = _parallel(previous, frag)
        if parallel:
            new, old = parallel
            return Standalone(new, f"“{frag}” in place of “{old}” in “{previous}”")
        pron = _PRONOUN_EN.search(frag)
        referent = subject(previous)
        if pron and referent:  # "and their refund rights?": the fragment says what about, the pronoun whom
            return Standalone(f"What about {_resolve_en(frag, pron, referent)}?",
                              f"“{pron.group(0)}” as “{referent}”, the subject of “{previous}”")
        own = _ASPECT_EN.match(previous.strip())
        if own:  # the previous turn was itself an aspect follow-up: this fragment takes that aspect's place
            return Standalone(f"What about {frag} for {own.group('subject')}?",
                              f"“{frag}” in place of “{own.group('aspect')}” in “{previous}”")
        about_subject = subject(previous)
        return Standalone(f"What about {frag} for {about_subject}?",
                          f"“{frag}” about “{about_subject}”, the subject of “{previous}”")
    if len(text.split()) > FOLLOW_UP_WORDS:
        return None
    if ordinal and item:
        new = text[:ordinal.start()] + item + text[ordinal.end():]
        return Standalone(_LEAD_EN.sub("", new), f"“{ordinal.group(0)}” as “{item}”, from the previous list")
    pron = _PRONOUN_EN.search(rest)
    if not pron:
        return None
    word = pron.group(0)
    referent = subject(previous)
    if not referent or referent.lower() == word.lower():
        return None
    new = _resolve_en(rest, pron, referent)
    return Standalone(new[0].upper() + new[1:], f"“{word}” as “{referent}”, the subject of “{previous}”")


def _resolve_en(text: str, pron: re.Match, referent: str) -> str:
    """`text` with the pronoun `pron` (a match in it) replaced by `referent`; a possessive with its noun phrase
    becomes "the <noun phrase> of <referent>" ("its exceptions" → "the exceptions of the refund window")."""
    owned = re.match(rf"\s+(?P<np>[\w'’-]+(?:\s+(?!(?:{_PREP}|{_AUX}|and|or)\b)[\w'’-]+)*)", text[pron.end():], re.I)
    if pron.group(0).lower() in _POSSESSIVE and owned:
        return text[:pron.start()] + f"the {owned.group('np')} of {referent}" + text[pron.end() + owned.end():]
    return text[:pron.start()] + referent + text[pron.end():]


def _topic_ja(previous: str) -> str | None:
    """The leading topic of a Japanese question (the words before its first particle), unless it starts with a
    question word."""
    p = previous.strip()
    if _QWORD_JA.match(p):
        return None
    m = _PARTICLE_JA.match(p)
    return m.group("topic") if m else None


def _condense_ja(question: str, previous: str, items: list[str]) -> Standalone | None:
    if not is_cjk(previous):  # another language than the previous question: no translation without an LLM
        return None
    parts = split_parts(previous)
    previous = parts[-1] if len(parts) > 1 else previous  # a follow-up continues the last part
    text = _LEAD_JA.sub("", question.strip())
    led = text != question.strip()
    ordinal = _ORDINAL_JA.search(text)
    item = _nth(items, _ORDINAL_JA_N[ordinal.group(1)]) if ordinal else None
    frag_m = _FRAGMENT_JA.match(text)
    frag = frag_m.group("x") if frag_m else None
    if frag and (len(frag) > 12 or _QWORD_JA.search(frag) or re.search(r"[？?]", frag)):
        frag = None
    if frag and ordinal and item:
        frag = item
    if frag:
        frag = re.sub(r"^(?:それらの|これらの|その|この|上記の)", "", frag) or frag  # 「その理由は？」: the topic's 理由
        topic = _topic_ja(previous)
        if topic and _NAME_JA.search(frag) and _NAME_JA.search(topic):
            new = previous.strip().replace(topic, frag, 1)
            return Standalone(new, f"“{frag}” in place of “{topic}” in “{previous}”")
        base = topic or _strip_end(previous)
        return Standalone(f"{base}の{frag}は？", f"“{frag}” about “{base}”, the subject of “{previous}”")
    if not led and len(text) > 40:
        return None
    if ordinal and item:
        new = text[:ordinal.start()] + item + text[ordinal.end():]
        return Standalone(new, f"“{ordinal.group(0)}” as “{item}”, from the previous list")
    pron = _PRONOUN_JA.search(text)
    topic = _topic_ja(previous) if is_cjk(previous) else None
    if pron and topic:
        new = text[:pron.start()] + topic + text[pron.end():]
        return Standalone(new, f"“{pron.group(0)}” as “{topic}”, the subject of “{previous}”")
    return None


def names(question: str) -> list[str]:
    """The named things of a question (English: capitalised words after the first, acronyms, numbers;
    Japanese: its leading topic and its katakana or Latin words): what a narrower query keeps of a subject."""
    if is_cjk(question):
        out = [t for t in [_topic_ja(question)] if t]
        out += [w for w in re.findall(r"[\u30a0-\u30ff]{2,}|[A-Za-z0-9]+", question) if not any(w in o for o in out)]
        return out
    text = _strip_end(question)
    return [re.sub(r"^the\s+", "", text[s:e], flags=re.I) for s, e in _entity_spans(text)]


_BARE_ORDINAL_EN = re.compile(rf"^(?:the\s+)?(?:{'|'.join(_ORDINALS)})(?:\s+(?:one|item|row|entry|result))?$", re.I)
_BARE_ORDINAL_JA = re.compile(rf"^(?:{_ORDINAL_JA.pattern})(?:は|も)?(?:どう(?:ですか)?)?$")


def unresolved_ordinal(question: str, items: list[str] | None) -> str | None:
    """The honest reply to a message that is only a reference to an item of a list ("and the second one?",
    "the last one?", 「2つ目は？」) when the thread has no such item: no latest list (`items`, the row entities
    of the last table result), or fewer items than the ordinal. None when the message is not a bare ordinal
    reference or the item exists (then `condense` rewrites it). Without an LLM nothing else can say which
    thing the user means, and asking the documents for "the second one" finds nothing related."""
    text = " ".join(question.split())
    if is_cjk(text):
        core = _LEAD_JA.sub("", text).rstrip("？?。!！ ")
        m = _BARE_ORDINAL_JA.match(core)
        if not m:
            return None
        n, core = _ORDINAL_JA_N[m.group(1)], m.group(1)
    else:
        lead = _LEAD_EN.match(text)
        rest = text[lead.end():] if lead else text
        about = _ABOUT_EN.match(rest)
        core = _strip_end(rest[about.end():] if about else rest)
        if not _BARE_ORDINAL_EN.match(core):
            return None
        n = _ORDINALS[_ORDINAL_EN.search(core).group(1).lower()]  # type: ignore[union-attr]
    items = items or []
    if _nth(items, n) is not None:
        return None
    if is_cjk(text):
        if not items:
            return (f"「{core}」が何を指すのか分かりません。直前の回答には選べる一覧（表の行）がありませんでした。"
                    "何についての質問か、名前で聞いてください。")
        return (f"直前の一覧は{len(items)}件だけです（{'、'.join(items)}）。「{core}」に当たるものはありません。")
    if not items:
        return (f"I cannot tell what “{core}” refers to: the previous answer gave no list of rows to pick it from. "
                "Please ask again naming the thing you mean.")
    return (f"The previous list has only {len(items)} item{'s' if len(items) != 1 else ''} "
            f"({'; '.join(items)}), so there is no “{core}”.")
