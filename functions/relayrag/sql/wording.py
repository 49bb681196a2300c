"""What a question asks for beyond its nouns: markers of direction, comparison, aggregate, negation and
period grouping, in English and Japanese, and the content words left once everything known is taken out.

Markers (`find_markers`) are grouped in classes; a template answers a question only when the question's
classes are ones the template's SQL or wording can express (relayrag.sql.verified):

| class    | English                                          | Japanese                          |
|----------|--------------------------------------------------|-----------------------------------|
| desc     | most, top, highest, largest, best, most common … | 最も, 最多, 一番, トップ, 上位, 多い     |
| asc      | least, fewest, lowest, smallest, least common …  | 少ない, 最少, 下位, ワースト             |
| order_desc | highest first, most … first, descending, top to bottom, ranked, ranking | 多い順, 降順, 高いほうから, ランキング |
| order_asc | lowest first, ascending, bottom to top, from lowest to highest  | 少ない順, 昇順, 低いほうから      |
| gt / ge  | more than, over N, longer than / at least, or more | より多い, より高い, 超 / 以上         |
| lt / le  | less than, fewer than, under N / at most, up to N | 未満, より少ない, より安い / 以下     |
| compare  | more, fewer, less (without "than")               |                                   |
| sum      | total, sum, overall, altogether, how much        | 合計, 総額, 総計, いくら              |
| avg      | average, mean                                    | 平均, 1件あたり, 1請求あたり           |
| count    | how many, number of, count                       | 何曲, 何件, 何人, いくつ, …数            |
| max/min  | maximum, max / minimum, min                      | 最大, 最長 / 最小, 最短               |
| neg      | not, n't, never, without, none, except, non-, outside | ない, 以外, 除く, なし             |
| cumulative / change | running total / growth, compared to | 累計 / 前年比, 推移 |
| ratio / median | percentage, share / median | 割合 / 中央値 |
| month, quarter, year, week, day | monthly, per month, each month, by month … | 月別, 月ごと, 毎月, 四半期ごと, 年別 … |

`desc` / `asc` pick the top or bottom (a LIMIT); `order_*` only sort. Without a number, a `desc` / `asc` of a
question that asks for every row ("every genre", 全ジャンル) or says the same order elsewhere ("the most songs?
… biggest first") is a sort, and a singular superlative ("Which country has the most …", 最も多い国はどこ) is
a top 1 (relayrag.sql.verified). "Jan first" / "December last" say a calendar order and constrain nothing.
Words of FILLER_WORDS (register, scope, restriction, relation) constrain nothing either. Markers are matched in
priority order
and each claims its characters ("at most" is `le`, not `desc`; "より多い" is `gt`, not `desc`; "少ない" is `asc`,
not `neg`). Comparison words that are also prepositions
(over, above, under, below, up to) count only before a number.

`content_words(text, spans)` is what is left of a question once the mentions, markers and config terms are
taken out (their spans): Latin words as relayrag's BM25 stems (stopwords dropped), with whether each was
capitalised inside a sentence (a name the question gives); Japanese as runs of kanji and of katakana (kana
particles and verb endings dropped). REQUEST_WORDS (show, list, tell, 教えて, 表示 …) ask for an answer and
constrain nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from relayrag.sql.slots import lower_keep

_NUM = (r"(?=\s*(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
        r"fifty|hundred|a\s+hundred|a\s+thousand|N\b))")
# 「1件あたり」「1請求あたり」「請求書1枚当たり」: per one unit, an average (relayrag.sql.slots leaves its 1 alone)
PER_ONE = r"(?:1|一)\s*[^\s\d、。,.?？]{0,4}?(?:あたり|当たり|当り)"
# (class, pattern on the lower-cased text); order matters: earlier patterns claim their characters first
MARKER_RULES: list[tuple[str, str]] = [
    ("request", r"\bbreak\s+(?:it\s+|this\s+|that\s+)?down\b|\bbroken\s+down\b|"  # asks for a breakdown: no constraint
     r"\b(?:jan(?:uary)?\.?\s+first|dec(?:ember)?\.?\s+last)\b"),  # calendar order (relayrag.sql.slots.CALENDAR_ORDER)
    ("cumulative", r"\b(?:cumulative|cumulatively|running\s+(?:total|sum)|year[- ]to[- ]date)\b|累計|累積"),
    ("change", r"\b(?:went|go|goes|gone|going)\s+(?:up|down)\b|"
     r"\b(?:growth|grew|grow|increase[ds]?|decrease[ds]?|decline[ds]?|change[ds]?|difference|"
     r"compared\s+(?:to|with)|versus|vs\.?|trend)\b|前年比|前月比|増加|減少|伸び|推移|比較|変化"),
    ("ratio", r"\b(?:percentage|percent|per\s+cent|proportion|share|ratio|fraction)\b|%|割合|比率|パーセント|シェア"),
    ("median", r"\b(?:median|percentile|quartile)\b|中央値|パーセンタイル"),
    ("le", r"\bat\s+most\b|\bor\s+(?:fewer|less)\b|\bno\s+more\s+than\b|\bnot\s+more\s+than\b|\bup\s+to" + _NUM
     + r"|\bmaximum\s+of\b|以下"),
    ("ge", r"\bat\s+least\b|\bor\s+more\b|\bor\s+greater\b|\bno\s+(?:fewer|less)\s+than\b|\bminimum\s+of\b|以上"),
    ("gt", r"\b(?:more|greater|larger|bigger|higher|longer|older)\s+than\b|\b(?:over|above|exceeding|exceeds|exceed|"
     r"beyond)" + _NUM + r"|より多い|より多く|より長い|より高い|より大きい|を上回る|を超える|を超えた|を超え|超え|超の|超"),
    ("lt", r"\b(?:less|fewer|smaller|lower|shorter|younger|cheaper)\s+than\b|\b(?:under|below)" + _NUM
     + r"|未満|より少ない|より少なく|より短い|より安い|より低い|より小さい|を下回る"),
    ("order_desc", r"\b(?:most|highest|largest|biggest|greatest|best|longest)\b[^.?!,;]{0,40}?\bfirst\b|"
     r"\b(?:in\s+)?descending(?:\s+order)?\b|\b(?:from\s+)?(?:the\s+)?(?:most|highest|largest|biggest|top)\s+to\s+"
     r"(?:the\s+)?(?:least|lowest|fewest|smallest|bottom)\b|多い順|高い順|大きい順|長い順|降順|"
     r"(?:多い|高い|大きい|長い)(?:ほう|方|もの)から|上から順|\b(?:rank|ranked|ranking|rankings)\b|ランキング"),
    ("order_asc", r"\b(?:least|fewest|lowest|smallest|shortest)\b[^.?!,;]{0,40}?\bfirst\b|"
     r"\b(?:in\s+)?ascending(?:\s+order)?\b|\b(?:from\s+)?(?:the\s+)?(?:least|lowest|fewest|smallest|bottom)\s+to\s+"
     r"(?:the\s+)?(?:most|highest|largest|biggest|top)\b|少ない順|低い順|小さい順|短い順|昇順|"
     r"(?:少ない|低い|小さい|短い)(?:ほう|方|もの)から|下から順"),
    ("asc", r"\b(?:least|fewest)\s+(?:common|frequent|frequently)\b|"
     r"\b(?:least|fewest|lowest|smallest|worst|bottom|shortest|cheapest)\b|"
     r"最も少ない|最少|少ない|少なく|低い|下位|ワースト|最低"),
    ("desc", r"\bmost\s+(?:common|frequent|frequently)\b|"
     r"\b(?:most|top|highest|largest|biggest|greatest|best|best-selling|bestselling|leading|longest)\b|"
     r"最も|最多|一番|トップ|上位|ベスト|多い|多く|高い|最高"),
    ("compare", r"\b(?:more|fewer|less)\b"),
    ("max", r"\b(?:maximum|max)\b|最大|最長"),
    ("min", r"\b(?:minimum|min)\b|最小|最短"),
    ("avg", r"\b(?:average|averages|averaged|mean|avg)\b|平均|" + PER_ONE),
    ("count", r"\bhow\s+many\b|\bnumber\s+of\b|\bcounts?\b|\bcounted\b|何曲|何件|何人|何枚|何社|何か国|何カ国|"
     r"いくつ|件数|人数|曲数|(?<=[\u30a1-\u30fa\u30fc\u4e00-\u9fff])数"),
    ("sum", r"\b(?:total|totals|totaled|totalled|sum|summed|overall|altogether|combined)\b|\bin\s+all\b|"
     r"\bhow\s+much\b|合計|総額|総計|総売上|いくら|総"),
    ("neg", r"\b(?:not|never|without|none|neither|nor|except|excluding|exclude|excludes|outside)\b|n't\b|"
     r"\bno\s+(?=[a-z])|\bnon-?(?=[a-z])|\bother\s+than\b|\bapart\s+from\b|以外|除く|除いた|除いて|なし|ない"),
    ("month", r"\bmonthly\b|\b(?:per|each|every|by|a)\s+month\b|\bmonth\s+by\s+month\b|\bmonth-by-month\b|"
     r"月別|月ごと|月毎|毎月|各月|月次|月単位"),
    ("quarter", r"\bquarterly\b|\b(?:per|each|every|by|a)\s+quarter\b|四半期ごと|四半期別|四半期毎|各四半期"),
    ("year", r"\byearly\b|\bannual(?:ly)?\b|\b(?:per|each|every|by|a)\s+year\b|\byear\s+by\s+year\b|"
     r"\byear-over-year\b|年別|年ごと|年毎|毎年|各年|年次|年度別"),
    ("week", r"\bweekly\b|\b(?:per|each|every|by|a)\s+week\b|週別|週ごと|週毎|毎週|各週"),
    ("day", r"\bdaily\b|\b(?:per|each|every|by|a)\s+day\b|日別|日ごと|日毎|毎日|日次"),
]
_COMPILED = [(cls, re.compile(p)) for cls, p in MARKER_RULES]
PERIODS = ("month", "quarter", "year", "week", "day")
COMPARISONS = ("gt", "ge", "lt", "le")
DIRECTIONS = ("desc", "asc", "order_desc", "order_asc")

REQUEST_WORDS = frozenset({
    "show", "list", "give", "tell", "display", "find", "get", "return", "provide", "please", "want", "need",
    "know", "see", "let", "like", "report", "output", "name", "names", "which", "what", "who", "how", "much",
    "many", "there", "exist", "existing", "along", "together", "also", "ones", "one", "respective", "each",
    "per", "every", "order", "first", "shown", "sorted", "sort", "us", "me",
    "breakdown", "split",
    "教", "表示", "見", "示", "出", "一覧", "知", "挙", "列挙", "リスト", "何", "誰", "全", "全て", "調", "答",
    "順", "下", "各", "別", "並", "件", "教え", "一緒", "名", "名前", "氏名", "姓", "名字",
})

# Words that neither ask for nor constrain anything (a question keeps its meaning without them), by class:
# register and politeness ("could you", "pls", "quick", "kindly"), pronouns and auxiliaries ("do we have", "were
# billed"), scope nouns naming the whole store ("in the catalogue", 全部で), restriction words whose restriction
# a term or value names ("corporate customers only") and relation verbs between an entity and the value it is
# matched with ("tracks tagged Reggae", "classified as", "assigned to", "containing", 英国向け, チェコ宛て,
# 会社に所属, ジャンルに入っている).
# The matcher (relayrag.sql.verified) does not count them as words the template does not know; a filler that
# also names a table, a column or a config term is read as that name.
FILLER_WORDS = frozenset({
    "could", "would", "can", "will", "shall", "should", "may", "might", "you", "your", "we", "our", "ours", "i",
    "my", "them", "it", "its", "their", "those", "these", "do", "does", "did", "have", "has", "had", "having",
    "were", "been", "being", "pls", "plz", "kindly",
    "quick", "quickly", "just", "only", "solely", "currently", "actually",
    "catalogue", "catalog", "collection", "library", "store", "shop", "inventory", "database", "whole", "entire",
    "tagged", "tag", "classified", "categorised", "categorized", "labelled", "labeled", "filed", "assigned",
    "belong", "belongs", "belonging", "listed", "marked", "contain", "contains", "containing", "whose", "too",
    "registered", "comprised", "consist", "consists", "consisting",
    "全部", "全体", "全部で", "向", "宛", "所属", "属", "分類", "入", "添", "登録",
})


@dataclass(frozen=True)
class Marker:
    cls: str
    start: int
    end: int
    text: str


def find_markers(text: str, skip: list[tuple[int, int]] | tuple = ()) -> list[Marker]:
    """Markers in `text` (normalised) outside the spans `skip`, by position (see the module docstring)."""
    low = lower_keep(text)
    taken = list(skip)
    out: list[Marker] = []
    for cls, rule in _COMPILED:
        for m in rule.finditer(low):
            if m.end() > m.start() and not any(m.start() < e and s < m.end() for s, e in taken):
                out.append(Marker(cls, m.start(), m.end(), text[m.start():m.end()]))
                taken.append((m.start(), m.end()))
    return sorted(out, key=lambda m: m.start)


@dataclass(frozen=True)
class Word:
    """A content word: `stem` (BM25 stem, or the kanji / katakana run), `text` as written, `capital`: a
    Latin word capitalised inside a sentence (a name), `start` its offset."""

    stem: str
    text: str
    start: int
    capital: bool = False
    cjk: bool = False


_LATIN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'’-]*")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff々〆]+|[\u30a1-\u30fa\u30fc]+")
_SENTENCE_END = re.compile(r"[.!?:;。！？]\s*$")


def content_words(text: str, skip: list[tuple[int, int]] | tuple = ()) -> list[Word]:
    """The content words of `text` (normalised) outside `skip` (see the module docstring)."""
    from relayrag.retrieval.tokenize import tokenize
    chars = list(text)
    for a, b in skip:
        for i in range(max(0, a), min(len(chars), b)):
            chars[i] = " "
    blanked = "".join(chars)
    out: list[Word] = []
    for m in _LATIN.finditer(blanked):
        w = re.sub(r"['’]s$", "", m.group(0).strip("'’-"))
        if len(w) < 2:
            continue
        toks = tokenize(w)
        if not toks:
            continue
        before = text[:m.start()]
        initial = not before.strip() or bool(_SENTENCE_END.search(before))
        capital = w[0].isupper() and not initial and w.lower() not in ("i",)
        for t in toks:
            out.append(Word(t, w, m.start(), capital))
    for m in _CJK_RUN.finditer(blanked):
        out.append(Word(m.group(0), m.group(0), m.start(), cjk=True))
    return sorted(out, key=lambda w: w.start)


def is_request_word(w: Word) -> bool:
    """A word that asks for the answer and constrains nothing (show, list, 教えて, 表示 …)."""
    return w.stem in REQUEST_WORDS or w.text.lower() in REQUEST_WORDS


# Words that name the measured value itself ("the amount", 金額, 請求額): they add nothing to a template that sums
# or averages (relayrag.sql.verified); "the amount of invoices" (a count) is not one.
MEASURE_WORDS = frozenset({"amount", "amounts", "金額", "額"})


def is_measure_word(w: Word, text: str) -> bool:
    """A word of MEASURE_WORDS not followed by "of" (`text`: the normalised question)."""
    return (w.text.lower() in MEASURE_WORDS or w.stem in MEASURE_WORDS) and not re.match(
        r"\s+of\b", text[w.start + len(w.text):])


def is_filler(w: Word) -> bool:
    """A word of FILLER_WORDS (register, scope, restriction or relation: "pls", "in the catalogue", 向け)."""
    return w.text.lower() in FILLER_WORDS or w.stem in FILLER_WORDS


# Words of a sale or a purchase (what the store sold, what a customer bought): they change what a count or a sum
# measures — "tracks sold per genre" counts invoice lines (or sums their quantity), "tracks per genre" counts the
# catalogue; "売れた曲の数" is not "曲の数". English as BM25 stems (sold, sell / sells / selling, sale / sales,
# seller, purchase / purchased, bought, buy / buys / buying); Japanese as pieces of a kanji run (売れた → 売,
# 販売, 購入, 買われた → 買, 注文). "order" is left out: "in order" asks for a sort. The matcher
# (relayrag.sql.verified) answers such a question only by a template whose words say a sale or a purchase too.
SALE_STEMS = frozenset({"sold", "sell", "sale", "seller", "purchas", "purchase", "bought", "buy"})
SALE_CJK = ("売", "販売", "購入", "買", "注文")


def is_sale_word(w: Word) -> bool:
    """A word of a sale or a purchase (SALE_STEMS, SALE_CJK)."""
    if w.cjk:
        return any(p in w.stem for p in SALE_CJK)
    return w.stem in SALE_STEMS or w.text.lower() in SALE_STEMS


def says_sale(vocab: set[str], vocab_cjk: list[str]) -> bool:
    """Does a template's vocabulary (its wordings' words, its tables, columns and expressed config terms) say a
    sale or a purchase ("sales" of revenue, 販売数 of units sold, 購入 of orders)?"""
    return bool(vocab & SALE_STEMS) or any(p in v for v in vocab_cjk for p in SALE_CJK)


# Nouns of a value measured on each row (a price, an amount of money, a duration, a size, a quantity): a question
# that asks for one measures a column, which a template that only counts rows (COUNT(*), no SUM / AVG / MAX / MIN)
# does not — "the price of the tracks per genre", ジャンルごとの曲の金額, ジャズの曲の値段 are not "how many tracks".
# The matcher (relayrag.sql.verified) refuses such a count template for a value noun its words do not say.
VALUE_NOUNS = frozenset({"cost", "costs", "price", "prices", "priced", "money", "worth", "spent", "spend", "earn",
                         "earned", "earnings", "duration", "size", "quantity", "quantities"})
VALUE_NOUNS_CJK = ("価格", "値段", "単価", "料金", "金額", "額", "代金", "費用", "時間", "長さ", "サイズ", "容量",
                   "数量", "値")


def is_value_noun(w: Word) -> bool:
    """A noun of a measured value (VALUE_NOUNS, VALUE_NOUNS_CJK)."""
    if w.cjk:
        return any(n in w.stem for n in VALUE_NOUNS_CJK)
    return w.text.lower() in VALUE_NOUNS or w.stem in VALUE_NOUNS


# A Japanese predicate: a kanji / katakana run followed by a verb ending — passive, past or te-form (ダウンロードされた曲,
# 再生された, 作成した, 使って, 買った). On the counted noun it is a condition or another event, so a template whose
# words do not say it answers another question; one that relates a named value ("ジャズに絞って", a value and a
# particle before it) is a relation, not a condition of its own.
_JA_PREDICATE = re.compile(r"(?:さ?れ|わ?れ|し|っ)(?:た|て|る|ている|ていた|ました|ます)")
# relation verbs (have, contain, hold): like "have" / "contain" in FILLER_WORDS they add no condition
RELATION_VERBS_JA = ("持", "含", "抱", "有")


# An English passive: a participle after a form of be / get ("tracks that were downloaded", "have been rated").
_EN_AUXILIARY = re.compile(r"\b(?:is|are|was|were|be|been|being|get|gets|got|gotten|getting)\s+(?:[a-z]+ly\s+)?$", re.I)
_EN_IRREGULAR = frozenset({"paid", "held", "kept", "sent", "won", "seen", "heard", "played", "run", "done",
                           "given", "taken", "chosen", "written", "shown"})


def predicate_ending(text: str, w: Word) -> str:
    """The predicate `w` makes in `text` (normalised): for a CJK word the verb ending after it when it is one
    (_JA_PREDICATE: ダウンロード → された), for a Latin participle after a form of be / get the auxiliary before it
    ("were"); else "". Relation verbs (持, 含) make none."""
    if w.cjk:
        if w.stem in RELATION_VERBS_JA:
            return ""
        m = _JA_PREDICATE.match(text, w.start + len(w.text))
        return m.group(0) if m else ""
    low = w.text.lower()
    if not (low.endswith(("ed", "en")) or low in _EN_IRREGULAR):
        return ""
    m = _EN_AUXILIARY.search(text[:w.start])
    return m.group(0).strip() if m else ""
