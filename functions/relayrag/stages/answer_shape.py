"""What an answer must look like besides sharing the question's words, checked without an LLM.

- A question-shaped sentence ("How do I reset my password?", an FAQ's heading; "…ですか？") is never an answer:
  it asks, it states nothing (`is_question_sentence`).
- A sentence or heading that restates the question ("Resetting your password" for "How do I reset my
  password?") names what the section under it is about; it is never the answer (`restates_question`: it adds no
  content word and no number of its own to the question's).
- Answer types for the question words the number-type check (answerability.expected_answer_type) leaves out:
  who → a person or a role, where → a place, when → a date or time, which year → a year, how often → a
  frequency; 誰/どなた, どこ, いつ, 何回/何度 in Japanese (`wh_answer_type`, `states_wh_type`).
- A document's title or metadata line answers only a question about titles (`asks_about_title`).
- Identifiers ("K1", "RX-7", "1234", "B-200"): tokens with a digit, or of one or two capitals, that name one
  record among similar ones; two sentences that differ in them are about different things
  (`identifiers`, in stages/identifiers.py and re-exported here), however close their wording.
"""

from __future__ import annotations


import re

from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.entity_scope import names_another  # noqa: F401 (moved there; re-exported)
from relayrag.stages.contact_details import contact_kinds, states_contact
from relayrag.stages.bands import (  # noqa: F401 (split into bands.py; re-exported)
    band, band_holds, measured_things, quantities, signed_band)
from relayrag.stages.question_clauses import LETTERS_Q_JA
from relayrag.stages.identifiers import (  # noqa: F401 (split out there; re-exported)
    identifiers, names_codes, names_identifiers, names_other_code, record_codes)
from relayrag.text import LATIN_LETTER, LATIN_LOWER, LATIN_UPPER, has_cjk, normalize, typed_clause

_QUESTION_END = re.compile(r"[?？]\s*[\"'”’)）」]*\s*$")
_JA_QUESTION_END = re.compile(r"(?:ですか|ますか|でしょうか|のか|か)[。．]?\s*$")
_EN_WH_START = re.compile(r"^\s*(?:what|which|who|whom|whose|when|where|why|how|can|could|do|does|did|is|are|"
                          r"was|were|should|shall|will|would|may|must|have|has)\b", re.I)


def is_question_sentence(text: str) -> bool:
    """Does `text` ask rather than state: it ends with a question mark (？ too), or in Japanese with the
    question particle か (…ですか。)? An FAQ's question heading is one; its answer is the paragraph under it."""
    t = " ".join(text.split())
    if not t:
        return False
    if _QUESTION_END.search(t):
        return True
    return has_cjk(t) and bool(_JA_QUESTION_END.search(t)) and len(t) <= 80


_NUMBER = re.compile(r"[0-9０-９]+")
_QUESTION_STOP = frozenset(tokenize(
    "what which who whom whose when where why how do does did can could should shall will would may might must is "
    "are was were be been have has had i you we my our your me us there this that these those about tell please"))


def restates_question(question: str, text: str, title: str = "") -> bool:
    """Does `text` (a sentence or heading; the document's `title`, glued in front of a heading by some
    extractors, is set aside) say nothing but what the question says? True when all its content tokens (CJK:
    but kana-only bigrams) are the question's, it has at least two of them, and it states no number the
    question does not. "Resetting your password" / "How do I reset my password?"
    → True; "Reset your password from the sign-in page within 24 hours." → False."""
    body = " ".join(text.split())
    if title:
        t = " ".join(title.split())
        if t and body.lower().startswith(t.lower()) and len(body) > len(t):
            body = body[len(t):].strip(" :-—–|")
    q_toks = set(tokenize(question)) - _QUESTION_STOP
    s_toks = [t for t in dict.fromkeys(tokenize(body)) if t not in _QUESTION_STOP]
    # in CJK one content bigram is enough: 「通称、 。」 (a sentence whose name fell out of the text) says only the
    # question's 通称 (issue 31: it was quoted as the answer to 「…は通称何と呼ばれるか」)
    if len(s_toks) < (1 if has_cjk(body) else 2) or not q_toks:
        return False
    if set(_NUMBER.findall(normalize(body))) - set(_NUMBER.findall(normalize(question))):
        return False
    # one new word can be the whole answer ("The Speed Trim function and MCAS function are inoperative."); in
    # CJK character bigrams, a restatement may differ in its particles (kana-only bigrams) only
    from relayrag.stages.answerability import is_function_bigram
    return not [t for t in s_toks if t not in q_toks and not is_function_bigram(t)]


_TITLE_Q = re.compile(r"\b(?:title|titled|called|named|name of (?:the|this) (?:document|policy|manual|report|file))\b"
                      r"|表題|題名|タイトル|件名|名称", re.I)


def asks_about_title(question: str) -> bool:
    """Does the question ask for a title or name ("What is the title of …", "What is this policy called",
    タイトル, 表題)? Only such a question is answered by a title or metadata line."""
    return bool(_TITLE_Q.search(normalize(question)))


# --- answer types of the question words -------------------------------------------------------------------

_WHO_EN = re.compile(r"^\s*(?:(?:to|by|from|for|with) )?(?:who|whom|whose)\b|\bwho(?:m)? (?:is|are|was|were|must|"
                     r"should|can|will|do|does|did)\b", re.I)
_WHERE_EN = re.compile(r"^\s*(?:from |to )?where\b|\bwhere (?:is|are|can|do|does|should|must|will|was|were)\b", re.I)
_WHEN_EN = re.compile(r"^\s*(?:since |until |by )?when\b"  # "what time": a time of day, not any number (issue 31)
                      r"|^\s*(?:at |by |from |until |till )?what time\b(?! (?:limit|frame|period|span)\b)", re.I)
_YEAR_EN = re.compile(r"^\s*(?:in |since |until |by |from )?(?:which|what) year\b", re.I)
_OFTEN_EN = re.compile(r"^\s*how (?:often|frequently)\b|^\s*how many times\b", re.I)
_WHO_JA = re.compile(r"誰|だれ|どなた|どの(?:部署|部門|担当|人)|担当者(?:は|を教えて)\s*[？?]?\s*$")
_WHERE_JA = re.compile(r"どこ|どちら|どの(?:場所|窓口|建物|フロア|階)")
# 何時 read いつ (何時に遡る, 何時頃): when, which an era (新石器時代) or a date answers; 何時間 asks a duration
_WHEN_JA = re.compile(r"いつ(?!も)|何時(?!間|も)")
# 「何か月ごとに」: an interval, which a number with a time unit says (2か月に1回, 毎月, 四半期ごと), not 地区ごとに
_INTERVAL_Q_JA = re.compile(r"何(?:か|ヶ|カ|ケ|箇)?(?:月|年|週間?|日)(?:ごと|おき|毎|に\s*[1１一]\s*回)")
_OFTEN_JA = re.compile(r"何回(?!も)|何度(?!も)|どのくらいの頻度|頻度|" + _INTERVAL_Q_JA.pattern)  # 何度も: again and again
_INTERVAL_JA = re.compile(r"[0-9０-９一二三四五六七八九十]+\s*(?:か|ヶ|カ|ケ|箇)?(?:月|年|週間?|日|時間)"
                          r"(?:ごと|毎|おき|に\s*[1１一]\s*(?:回|度))|毎(?:月|年|週|日|朝|晩)|隔(?:月|週|年)|四半期|半期|半年"
                          r"|(?:年|月|週)\s*[0-9０-９一二三四五六七八九十]+\s*回")
# "What is the reference number of …", "What extension do I call", "What number do I call": a code, not a count
_IDENT_Q_EN = re.compile(
    r"^\s*(?:what|which)(?:'s|\s+is|\s+are|\s+was)?\s+(?:the\s+|its\s+|their\s+|our\s+|my\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?:(?:reference|document|serial|phone|telephone|extension|account|order|part|model|policy|ticket|room|version|"
    r"registration|case|invoice|tracking|form|procedure|contract|asset|badge|employee|project|article)\s+(?:number|no\.?|code|id)"
    r"|extension|code|id|identifier|number (?:do|should|must|can|to)\b)", re.I)
_IDENT_Q_JA = re.compile(r"番号|内線|コード|ID")
# "In which system …", "Which building …": a thing with a name; the answer names it
_NAMED_Q_EN = re.compile(
    r"^\s*(?:(?:in|at|on|from|to|with|by|for|of|through|via)\s+)?(?:which|what)\s+(?:[\w-]+\s+)?"
    r"(system|tool|app|application|software|platform|portal|building|room|floor|site|city|country|company|"
    r"carrier|courier|supplier|vendor|bank|airline|model|product|brand|website|plant|machine|entrance|gate|car park|"
    r"hotel|firm|provider|server|database|channel)s?\b", re.I)


def wh_answer_type(question: str) -> str | None:
    """"person" (who, whom, whose, 誰, どなた, どの部署), "place" (where, どこ), "year" (which / what year),
    "frequency" (how often, how many times, 何回, 何度, 頻度), "when" (when, いつ, 何時), "letters" (アルファベット3文字で表すと:
    a word in capitals), or None: the types that
    answerability.expected_answer_type does not give (money, duration, count, date, number). Read in the
    question's asking clause without a leading phrase of circumstances (text.typed_clause)."""
    q = typed_clause(question)
    if contact_kinds(q):
        return "contact"
    if has_cjk(q):
        for kind, rx in (("letters", LETTERS_Q_JA), ("frequency", _OFTEN_JA), ("person", _WHO_JA),
                         ("place", _WHERE_JA), ("when", _WHEN_JA),
                         ("identifier", _IDENT_Q_JA)):
            if rx.search(q):
                return kind
        return None
    for kind, rx in (("year", _YEAR_EN), ("frequency", _OFTEN_EN), ("person", _WHO_EN), ("place", _WHERE_EN),
                     ("when", _WHEN_EN), ("identifier", _IDENT_Q_EN), ("named", _NAMED_Q_EN)):
        if rx.search(q):
            return kind
    return None


_ROLE_EN = re.compile(
    r"\b(?:manager|director|officer|head|chief|chair(?:person|man|woman)?|president|vice[- ]president|ceo|cfo|cto|coo|"
    r"ciso|cio|supervisor|administrator|admin|lead|leader|owner|coordinator|secretary|committee|board|team|"
    r"department|dept|division|unit|office|desk|staff|employee|employees|engineer|technician|inspector|auditor|"
    r"controller|accountant|clerk|agent|representative|specialist|analyst|counsel|lawyer|attorney|nurse|doctor|"
    r"physician|approver|reviewer|author|signatory|hr|it|payroll|finance|legal|procurement|security|operator|"
    r"contractor|vendor|supplier|customer|employer|council|authority|ministry|agency|commission|he|she|they)\b", re.I)
_NAME_EN = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z]\.)?\s+[A-Z][a-z]+")
_ROLE_JA = re.compile(r"部長|課長|係長|室長|所長|社長|会長|役員|取締役|責任者|担当|委員会|委員|部門|部署|部|課|室|"
                      r"氏|さん|様|者|長|チーム|センター|事務局|窓口|"
                      # titles of persons (博士, 教授, 将軍, 大統領 …) and bodies that act (会社, 協会, 政府 …): 「江戸幕府
                      # 将軍は徳川吉宗」, 「株式会社文藝春秋が発行」 say who (issue 31)
                      r"博士|教授|先生|将軍|天皇|皇帝|国王|王妃|大統領|首相|大臣|知事|議員|監督|"
                      r"会社|協会|機構|団体|政府|大学|学会|組合|財団|銀行|省|庁|政党")
# a noun for people ending in a person suffix before a particle or a stop: 観光客を, ポルトガル人が, 研究家の, 選手は
_PERSON_NOUN_JA = re.compile(r"[\u4e00-\u9fff\u30a1-\u30fa\u30fc](?:人|客|員|家|師|士|手|民)(?=[はがをにのやとも、。）」]|$)")
# a name in katakana (ルイ・パスツール, サラザール) or Latin letters (Ivo Wittig) as the subject or one of a list: followed
# by は, が, や, と, も, 氏, ら or an opening bracket of its reading / dates. A katakana word the question has is the
# question's own subject, not the answer
_KATAKANA_NAME_JA = re.compile(r"[\u30a1-\u30fa\u30fc]{2,}(?:[・=＝][\u30a1-\u30fa\u30fc]+)*(?=は|が|や|と|も|氏|ら|（|\()")
_LATIN_NAME_JA = re.compile(r"(?<![A-Za-z])[A-Z][a-z]+(?:\s+[A-Z]\.)?(?:\s+(?:de|van|von|der|da|di|le|la)){0,2}"
                            r"\s+[A-Z][a-z]+")
_PLACE_EN = re.compile(
    r"\b(?:in|at|on|from|via|through|inside|outside|near|under|behind|next to|to)\s+(?:the\s+|a\s+|an\s+|our\s+|your\s+)?"
    r"[\w\"'“(]|https?://|www\.|\S+@\S+|\b(?:room|floor|building|office|desk|portal|site|website|page|folder|drive|"
    r"cabinet|intranet|app|system|street|avenue|road|city|country|warehouse|reception|lobby)\b", re.I)
_PLACE_JA = re.compile(r"階|室|館|棟|所|場|県|市|区|町|村|センター|ポータル|サイト|窓口|フロア|ビル|本社|支社|拠点|"
                       r"部屋|受付|システム|ページ|フォルダ|http|＠|@|で|に|から|"
                       # 「どこが出している」 asks which body acts: a company, association or government names it
                       r"会社|協会|機構|団体|政府|大学|学会|組合|財団|銀行|省|庁|国")
_YEAR = re.compile(r"(?<![0-9])(?:1[5-9]\d\d|2\d\d\d)(?![0-9])|(?:令和|平成|昭和)\s*[0-9０-９元一二三四五六七八九十]+\s*年")
_MONTH_DAY_EN = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|"
    r"Jun|Jul|Aug|Sept?|Oct|Nov|Dec|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|weekday|weekend|"
    r"morning|afternoon|evening|night|noon|midnight|daily|weekly|monthly|quarterly|annually|yearly|"
    r"today|tomorrow|before|after|within|until|during|end of|start of|beginning of|"
    # "by" of a deadline ("by the end of May", "by then", "by 5 pm"), not of an agent or a means ("surrounded by
    # trees", "by bus")
    r"by(?=\s+(?:the\s+)?(?:end|close|start|beginning|deadline|time|noon|midnight|then|now|tomorrow|today|next|this|"
    r"latest|\d|(?:last|first|following|same|final)\s+(?:\w+\s+)?(?:day|week|month|year|quarter|date|shift|weekday)s?\b))|"
    r"immediately|upon|whenever|as soon as)\b", re.I)  # not "year" or "day" alone: "twice a year" is no time
# a number with a unit of time, or a word of time: not a bare count ("321,510人") nor a reference number (議題3)
_WHEN_JA_TEXT = re.compile(r"[0-9０-９一二三四五六七八九十元]\s*(?:年|月|日|時|分|週|か月|ヶ月|カ月|ヵ月|箇月|秒)|"
                           r"\d{1,2}[:：/]\d{1,2}|"
                           r"年|月|日|曜|時|まで|以内|以前|以降|(?<!名)前|後(?!任)|毎|際|とき|時点|直ち|速やか|上旬|中旬|下旬")
# the question's own dates ("令和6年度の報告書はいつ…"): not the date it asks for
_DATE_JA = re.compile(r"(?:令和|平成|昭和)?\s*[0-9０-９元]+\s*(?:年度|年|月|日)(?:\s*[0-9０-９]+\s*(?:月|日))*")
_FREQ_EN = re.compile(
    r"\b(?:daily|weekly|fortnightly|monthly|quarterly|annually|yearly|hourly|biannually|biennially|every|each|per|"
    r"once|twice|thrice|times|always|never|whenever|a (?:day|week|month|year|quarter))\b", re.I)
_FREQ_JA = re.compile(r"[0-9０-９一二三四五六七八九十]+\s*(?:回|度)|毎|ごと|年に|月に|週に|日に|随時|都度|常に")


def states_wh_type(kind: str | None, text: str, cjk: bool = False, question: str = "") -> bool:
    """Does `text` state a value of the `kind` wh_answer_type found? person: a role or body (manager, HR,
    committee, 部長, 担当) or a personal name (two capitalised words inside the sentence); place: a
    preposition of place, an address, URL or e-mail, or a word for a place (room, portal, 階, 窓口); when: a
    number, a month, weekday, time of day or a word of time (before, within, 毎, まで); year: a year (2019,
    令和5年); frequency: a frequency word (weekly, every, twice, 毎月, 3回). None: always True. The question's
    own words do not count as the value (a role named in the question does not say who)."""
    if kind is None:
        return True
    own = set(tokenize(question)) if question else set()
    if kind == "person":
        if cjk:
            return bool(_ROLE_JA.search(text) or _PERSON_NOUN_JA.search(text) or names_person_ja(text, question))
        roles = [m.group(0) for m in _ROLE_EN.finditer(text) if not set(tokenize(m.group(0))) & own]
        names = [m.group(0) for m in _NAME_EN.finditer(text) if not set(tokenize(m.group(0))) <= own]
        return bool(roles or names)
    if kind == "place":  # also a field whose value is a name: "Manufacturing: Brno plant, Czech Republic"
        return bool((_PLACE_JA if cjk else _PLACE_EN).search(text) or (not cjk and _NAMED_FIELD.match(text.strip())))
    if kind == "year":
        return any(m.group(0) not in question for m in _YEAR.finditer(normalize(text)))
    if kind == "frequency":
        if cjk and _INTERVAL_Q_JA.search(normalize(question)):
            return bool(_INTERVAL_JA.search(normalize(text)))
        return bool((_FREQ_JA if cjk else _FREQ_EN).search(text))
    if kind == "when":
        if cjk:
            for own_date in sorted({m.group(0) for m in _DATE_JA.finditer(normalize(question))}, key=len, reverse=True):
                text = normalize(text).replace(own_date, " ")
            return bool(_WHEN_JA_TEXT.search(_TRAVEL_TIME_JA.sub(" ", normalize(text))))  # 徒歩15分: how far
        bare = _REFERENCE_LABEL.sub(" ", _LIST_NUMBER.sub("", text.strip()))  # "1. Scope …" states no time
        bare = _TRAVEL_TIME_EN.sub(" ", bare)  # "15 minutes on foot from the port" says how far, not when
        if _WHAT_TIME_EN.search(question):  # a time of day: "opened in 2011" or "on 18 March" is no time
            return bool(_CLOCK_EN.search(bare))
        return bool(_TIME_NUMBER.search(bare) or _MONTH_DAY_EN.search(bare))  # not "car park P3"
    if kind == "contact":
        return states_contact(text, question)
    if kind == "letters":
        return states_letters(text, question)
    if kind == "identifier":
        found = codes(_LIST_NUMBER.sub("", text.strip()), question)
        noun = _IDENT_NOUN.search(normalize(question))
        if noun and found:  # "the document number": the code next to "Document", not the footer's extension
            stem = tokenize(noun.group(1) or noun.group(2))
            return near(text, stem, found) or (":" in text and bool(set(stem) & set(tokenize(text.split(":")[0]))))
        return bool(found)
    if kind == "named":
        noun = _NAMED_Q_EN.search(normalize(question))
        return names_a_thing(text, question, tokenize(noun.group(1)) if noun else [])
    return True


_KANJI_DIGIT = {c: i for i, c in enumerate("〇一二三四五六七八九十")}


def states_letters(text: str, question: str) -> bool:
    """For a question asking its answer in Latin letters (LETTERS_Q_JA: アルファベット3文字で表すと): does `text` write a
    word in capitals (TNA, LNTV) that the question does not, of the number of letters asked when it says one?"""
    q = normalize(question)
    m = LETTERS_Q_JA.search(q)
    n = None
    if m and m.group(1):
        d = m.group(1)
        n = int(d) if d.isdigit() else _KANJI_DIGIT.get(d)
    for w in re.findall(r"(?<![A-Za-z])[A-Z][A-Za-z0-9]*(?![A-Za-z])", normalize(text)):
        if sum(ch.isupper() for ch in w) >= 2 and w not in q and (n is None or len(w) == n):
            return True
    return False


def names_person_ja(text: str, question: str = "") -> bool:
    """Does Japanese `text` name a person the question does not: a katakana name as the subject or in a list
    (ルイ・パスツールは, サスヌゲソは, フストが, ジル・ヴィセンテや), or a Latin-script full name (Ivo Wittig)?"""
    q = normalize(question)
    if any(m.group(0) not in q for m in _KATAKANA_NAME_JA.finditer(text)):
        return True
    return any(m.group(0) not in q for m in _LATIN_NAME_JA.finditer(text))


_TIME_NUMBER = re.compile(r"(?<![A-Za-z])\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|h|o'clock)\b"
                          r"|\b(?:1[5-9]|20)\d\d\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:January|February|March|April|May|June|"
                          r"July|August|September|October|November|December)|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
                          r"|\b\d+\s*(?:working |business |calendar )?(?:seconds?|minutes?|hours?|days?|weeks?|months?|"
                          r"years?)\b", re.I)
# a journey's length in time ("15 minutes on foot", "a 10-minute walk", "20 minutes by bus from the station", 徒歩15分,
# 車で約10分, 港から徒歩5分): it says how far a place is, not when anything happens
_TRAVEL_TIME_EN = re.compile(
    r"\b(?:about |around |approximately |some |just |only )?(?:\d+|an?|one|two|three|four|five|ten|fifteen|twenty|"
    r"thirty|half an?)(?:\s*-\s*|\s+)(?:minutes?|mins?|hours?|hrs?)(?:['’]s?)?\s+"
    r"(?:on foot|walk(?:ing)?|drive|driving|ride|riding|cycle|cycling|sail(?:ing)?|journey|trip|crossing|away|"
    r"by (?:car|bus|coach|taxi|train|rail|tram|metro|subway|underground|ferry|boat|bike|bicycle|foot|road|sea|air))\b",
    re.I)
_TRAVEL_TIME_JA = re.compile(r"(?:徒歩|歩いて|車で|自動車で|バスで|タクシーで|電車で|自転車で|船で|フェリーで|高速艇で)\s*"
                             r"(?:約|およそ)?\s*[0-9０-９一二三四五六七八九十]+\s*(?:分|時間)")
# "what time …?" asks a time of day: a clock time, noon / midnight, a part of the day, or a time relative to an event
# ("10 minutes before departure"); a year or a date alone does not say it
_WHAT_TIME_EN = re.compile(r"^\s*(?:at |by |from |until |till )?what time\b(?! (?:limit|frame|period|span)\b)", re.I)
_CLOCK_EN = re.compile(r"(?<![A-Za-z\d])\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|h|o'clock)(?!\w)"
                       r"|\b(?:noon|midday|midnight|morning|afternoon|evening|night|opening|closing)\b"
                       r"|\b\d+\s*(?:minutes?|hours?|mins?|hrs?)\s+(?:before|after|ahead|earlier|later|prior)\b", re.I)
_IDENT_NOUN = re.compile(r"\b(reference|document|serial|phone|telephone|extension|account|order|part|model|policy|ticket|"
                         r"room|version|registration|case|invoice|tracking|form|procedure|contract|asset|badge|employee|"
                         r"project|article)\s+(?:number|no\.?|code|id)\b|\b(extension)\b", re.I)


def near(text: str, noun: list[str], found: list[str], gap: int = 6) -> bool:
    """Is one of the codes `found` said after the noun (stemmed tokens) in `text`, within `gap` words of the
    same clause ("the badge number of clerk 12 is B00034"; not "about this document, call extension 4410")?"""
    for clause in re.split(r"[,;]\s|\.\s|:\s", normalize(text)):
        words = re.findall(r"[\w./-]+", clause)
        for k, w in enumerate(words):
            if set(tokenize(w)) & set(noun) and any(f in " ".join(words[k + 1:k + 1 + gap]) for f in found):
                return True
    return False


_NAMED_FIELD = re.compile(r"^[-*•]?\s*[A-Z][\w /&'-]{1,30}:\s*[A-Z][a-z]")
_LIST_NUMBER = re.compile(r"^\(?\d+(?:\.\d+)*[.)]\s+")
_REFERENCE_LABEL = re.compile(r"\b(?:Figures?|Fig\.|Tables?|Pages?|Sections?|Articles?|Chapters?|Step)\s*\d[\w.-]*", re.I)
_CODE = re.compile(r"(?<![A-Za-z0-9_,.-])(?:[A-Za-z]{1,6}[-/]?\d[A-Za-z0-9_/-]*|\d{3,}(?:[-/]\d+)*)"
                   r"(?![A-Za-z0-9_-]|[.,]\d)")
_MEASURE_NEXT = re.compile(r"^\s*-?\s*(?:%|percent|per cent|(?:working |business |calendar )?(?:seconds?|minutes?|hours?|days?|"
                           r"nights?|weeks?|months?|years?)|kg|km|m|mm|cm|g|l|units?|people|euros?|dollars?|yen|円|日|年)\b",
                           re.I)
_CURRENCY_BEFORE = re.compile(r"(?:[$€£¥￥]|\b(?:EUR|USD|GBP|JPY|CHF))\s*$")


def codes(text: str, question: str = "") -> list[str]:
    """The codes `text` states (PR-04, LEG-02, SN-40917, extension 4410, 内線2205): a token of letters and digits,
    or a number of 3+ digits that measures nothing (not "2,000円", "EUR 25,000", "1,340 employees" per a unit,
    "10 years"), and is not one of the question's own."""
    t = normalize(text)
    own = set(_CODE.findall(normalize(question))) if question else set()
    out = []
    for m in _CODE.finditer(t):
        tok = m.group(0)
        if tok in own or _MEASURE_NEXT.match(t[m.end():m.end() + 20]) or _CURRENCY_BEFORE.search(t[:m.start()]):
            continue
        if re.fullmatch(r"(?:1[5-9]|20)\d\d", tok):  # a year is a date, not a code
            continue
        out.append(tok)
    return out


_TITLE_WORD = re.compile(rf"(?<![\w-])(?:[{LATIN_UPPER}][{LATIN_LOWER}]+[{LATIN_LETTER}]*|"  # Zátiší, Müller too
                         rf"[{LATIN_UPPER}][{LATIN_LOWER}]*[{LATIN_UPPER}][\w]*)(?![\w-])")


def names_a_thing(text: str, question: str, kind: list[str] | None = None) -> bool:
    """Does `text` name something the question does not: a capitalised name inside the sentence (SupplyPoint,
    Courier Rapide; not its first word), a code or lone capital ("Building C", "Gate 4"), or a quoted term?
    "The mailroom chooses the carrier by weight" names no carrier. With `kind` (the stemmed noun the question
    asks for: "system", "build"), a prose sentence must say that noun too ("the SupplyPoint system", "Building
    C"); a table row reads with its column names, which say it."""
    own = set(tokenize(question))
    t = " ".join(text.split())
    if kind and not set(kind) & set(tokenize(t)):
        return False
    heading = not re.search(r"[a-z]", t)  # "NOTICE - FIRE EVACUATION DRILL": a heading in capitals names nothing
    for m in ([] if heading else _TITLE_WORD.finditer(t)):
        before = t[:m.start()].rstrip()
        if not before or before.endswith((".", ":", "!", "?", "|", "\n")):
            if " | " not in t:  # a sentence's first word is capitalised anyway; a table cell's is a name
                continue
        if not set(tokenize(m.group(0))) <= own:
            return True
    if any(i not in identifiers(question) for i in identifiers(t) if not i.isdigit()):
        return True
    return bool(re.search(r"[\"“'‘«「][^\"”'’»」]{2,40}[\"”'’»」]", t))


_CJK_ARTICLE = re.compile(r"^第[0-9０-９一二三四五六七八九十百]+[条章節項](?:[（(][^）)]{1,20}[）)])?\s*$")


# a topic heading: a line without a sentence end that names a subject "about X" (議題3 冬季減便について, 新造船の件)
_CJK_TOPIC = re.compile(r"^[^。！？!?]{1,60}(?:について|に関して|に関する件|に関する事項|の件)\s*(?:[（(][^）)]{1,20}[）)])?\s*$")


def cjk_heading(text: str) -> bool:
    """A Japanese article or chapter title ("第8条（海外出張）", "第2章") or topic heading ("議題3 高速艇の冬季減便に
    ついて", "新造船の件"), never an answer: it names what the text under it is about."""
    t = " ".join(text.split())
    return bool(_CJK_ARTICLE.match(t) or _CJK_TOPIC.match(t))


_ARTICLE_EN = re.compile(r"^(?:Article|Art\.|Section|§|Chapter|Clause|Part|Rule)\s*[0-9IVXLC]+[A-Za-z]?[.:]?"
                         r"(?:\s*[(（][^)）]{1,60}[)）]|\s*[-–—:.]\s*[^.!?;]{1,60})?\s*$", re.I)


def article_heading(text: str) -> bool:
    """An article, section or chapter title ("Article 5 (Daily allowance)", "Section 3 - Leave", "第8条（海外出張）",
    "第2章"), never an answer: it names what the text under it is about."""
    t = " ".join(text.split())
    return cjk_heading(t) or bool(_ARTICLE_EN.match(t))


def answer_kinds(question: str, number_kind: str | None) -> tuple[str | None, str | None]:
    """(number type, wh type) an answer to `question` must state, given answerability.expected_answer_type's
    `number_kind`: a wh type (wh_answer_type) replaces a bare "number" ("when" asks a date or time, which
    "before the end of the month" states without a digit; "how often" a frequency, "every week")."""
    wh = wh_answer_type(question)
    if wh == "frequency" and number_kind == "temperature":  # 保管温度は何度: 何度 asks degrees, not how many times
        return number_kind, None
    if wh is not None and number_kind == "number":
        return None, wh
    if wh == "year" and number_kind == "date":
        return None, wh
    return number_kind, wh


_DOC_NOUN = (r"(?:section|document|page|procedure|policy|handbook|schedule|notice|manual|chapter|guide|report|form|"
             r"regulation|rule|standard|plan|agreement|memo|bulletin|faq|article|part|appendix|annex|issue|edition|"
             r"website|site|leaflet|brochure|register|list|table|summary|overview|introduction)")
_ABOUT_THE_DOCUMENT = re.compile(
    rf"^(?:purpose\s*[:：]\s*|scope\s*[:：]\s*)?(?:this|the present|these)\s+(?:\w+\s+){{0,2}}?{_DOC_NOUN}s?\b"
    r"(?:\s+of\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,3})?\s+(?:contains?|explains?|describes?|sets? out|states?|"
    r"covers?|lists?|provides?|outlines?|summari[sz]es?|presents?|gives?|sets? forth|is (?:intended|designed|meant)|"
    r"aims?|informs?|publishes|includes?)\b"
    r"|^(?:purpose|scope|about this \w+)\s*[:：]", re.I)
_ASKS_ABOUT_THE_DOCUMENT = re.compile(r"\b(?:purpose|aim|goal|objective|about\W*$|cover(?:s|ed)?|contains?|describes?|"
                                      r"explains?|scope|intended|overview|summary|summari[sz]e)\b|目的|概要|範囲", re.I)


def about_the_document(text: str) -> bool:
    """Is `text` a sentence about the document itself rather than a fact in it: "This section of the bulletin
    contains notices to the public…", "This procedure sets out how requisitions are raised…", "Purpose: this
    schedule states how long…"? Such a lead answers only a question about the document's purpose or contents."""
    return bool(_ABOUT_THE_DOCUMENT.search(" ".join(text.split())))


def not_an_answer(question: str, text: str, title: str = "") -> str | None:
    """Why the sentence `text` cannot be an answer to `question` whatever it shares with it: "question" (it
    asks), "heading" (an article or section title: "Article 5 (Daily allowance)", 第6条（日当）), "restates" (it
    says only what the question says), "title" (it is the document's title and the
    question does not ask about titles), "about the document" (a lead that says what the document contains,
    for a question that does not ask about the document's purpose or contents); None when it may be one."""
    if is_question_sentence(text):
        return "question"
    if article_heading(text):
        return "heading"
    if restates_question(question, text, title):
        return "restates"
    if title and " ".join(text.split()).strip(" .") == " ".join(title.split()).strip(" .") \
            and not asks_about_title(question) and not asks_document_name(question):
        return "title"
    if about_the_document(text) and not _ASKS_ABOUT_THE_DOCUMENT.search(normalize(question)):
        return "about the document"
    return None


# --- questions that ask for a document's name ---------------------------------------------------------------

# documents a collection holds by name (not "part", "list", "table", "form": things inside a document)
_NAMED_DOC = (r"(?:document|policy|procedure|handbook|manual|regulation|guide|guideline|plan|notice|report|standard|"
              r"agreement|memo|bulletin|leaflet|brochure|rulebook|charter|directive|instruction|specification)")
_DOC_NAME_Q = re.compile(
    rf"^\s*(?:in\s+)?(?:which|what)\s+(?:\w+\s+)?{_NAMED_DOC}\b(?!\s+(?:number|no\.?|code|id|version)\b)"
    rf"|\b(?:title|name)\s+of\s+(?:the|this|that|our)\s+(?:[\w-]+\s+){{0,3}}?{_NAMED_DOC}s?\b"
    rf"|\b(?:what|how)\s+is\s+(?:the|this|that)\s+(?:[\w-]+\s+){{0,3}}?{_NAMED_DOC}\s+(?:called|titled|named)\b", re.I)
_DOC_NAME_Q_JA = re.compile(r"(?:規程|規則|規定|要領|要綱|文書|マニュアル|方針|計画|手順書|資料|通知|規約|基準)"
                            r"[^。？?]{0,8}(?:名称|題名|表題|タイトル|名前)|(?:どの|何という)(?:規程|規則|規定|文書|マニュアル|方針|計画)")


def asks_document_name(question: str) -> bool:
    """Does the question ask which document (by its name or title) says something: "Which document sets the
    response times for leaks?", "What is the title of the safety manual?", 「…を定めた規程の名称は何ですか」?
    Such a question is answered by the document's title, not by a sentence of its body."""
    q = normalize(question)
    return bool(_DOC_NAME_Q.search(q) or _DOC_NAME_Q_JA.search(q))


def says_document_title(text: str, context: str) -> bool:
    """Does the answer sentence `text` say the title of its document — the first line of its local `context`, as
    generate records it — (the title itself, or a sentence that names it)?"""
    title = " ".join(re.findall(r"\w+", normalize((context or "").split("\n", 1)[0]).lower()))
    if not title:
        return False
    if has_cjk(title):  # no spaces between words: the title's characters in a row
        return title.replace(" ", "") in "".join(re.findall(r"\w+", normalize(text).lower()))
    return f" {title} " in " " + " ".join(re.findall(r"\w+", normalize(text).lower())) + " "
