"""No-LLM plan step for Text-to-SQL: which SQL *shape* a question needs, said to the model in the
question's language.

`plan_question(question)` looks for the wording that marks the hard shapes a small model gets wrong
(measured failures of Qwen2.5-Coder-1.5B on Chinook, benchmarks/RESULTS.md): grouping ("per", "each",
"for every", "by", ごと/毎/各/別), top-N ("top 5", "5 most", "the biggest", 最も/上位; "at least / at most"
is a bound, not a rank), ties ("include ties", "tied", 同率/同点), comparison with an aggregate ("more than
the average", "compared with"; 平均より), period bucketing ("per year", "monthly", "quarterly", "weekly";
年ごと/月別/四半期ごと/週ごと), shares ("percentage", "share"; 割合/比率), absence ("never", "without";
一度も…ない), and the columns a question asks to be shown ("show name and company").
It is a handful of regular expressions over the question, in English and Japanese, not a per-question
rule: each pattern maps to a generic SQL shape (GROUP BY, ORDER BY … LIMIT N, RANK() in a CTE, a CTE with
the aggregate, FORMAT_TIMESTAMP buckets, SUM(CASE …) / SUM(…), NOT EXISTS).

Returns a `Plan`: `shapes` (names such as "group", "top_n", "top_per_group", "ties", "compare_aggregate",
"period", "share", "absence", "min_ties"), `hints` (one sentence each, in Japanese for a Japanese
question, else English), and `outputs` (the requested result items, when the question lists them).
`Plan.text()` is what goes into the prompt ('' when nothing was detected).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from relayrag.text import language_code, normalize

_CJK_NAMES = {"ja": "Japanese", "ko": "Korean", "zh": "Chinese"}


def question_language(text: str) -> str | None:
    """'Japanese' (any kana), 'Korean' (hangul), 'Chinese' (han without kana) for CJK text, else None
    (Latin-script languages are left to the LLM's own reading of the question); relayrag.text.language_code."""
    return _CJK_NAMES.get(language_code(text))

_NUM_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
              "nine": 9, "ten": 10, "twenty": 20}
_N = r"(\d+|" + "|".join(_NUM_WORDS) + r")"

_I = re.IGNORECASE
EN = {
    "group": re.compile(r"\b(per|each|every|for all)\s+\w+|\bby\s+(?!the\s+way)(?:\w+\s+)?"
                        r"(genre|country|city|artist|album|year|month|quarter|type|category|customer|employee|"
                        r"rep|state|media|playlist|region|product|day|week)s?\b", _I),
    "top_n": re.compile(r"\b(top|first|bottom)\s+" + _N + r"\b|\b" + _N + r"\s+(most|least|biggest|largest|"
                        r"highest|lowest|best|worst|top)\b|(?<!\bat\s)\b(the\s+)?(most|least|fewest|biggest|largest|highest|"
                        r"lowest|best[- ]selling|worst[- ]selling|longest|shortest|single\s+biggest|top)\b", _I),
    "ties": re.compile(r"\b(ties?|tied|tying|all\s+tied|everyone\s+tied)\b", _I),
    "compare_aggregate": re.compile(r"\b(than|above|below|over|under)\s+(the\s+)?(average|mean|median|overall)\b|"
                                    r"\bcompared\s+(with|to)\b|\bversus\b|\bvs\.?\s", _I),
    "period": re.compile(r"\b(per|each|every|by)\s+(year|month|quarter|week|day)\b|\b(yearly|monthly|quarterly|"
                         r"weekly|daily|annual(ly)?|(year|quarter|month|week)[- ](over|by)[- ](year|quarter|month|week)|"
                         r"over\s+the\s+years)\b", _I),
    "share": re.compile(r"\b(percent(age)?|share|proportion|ratio|fraction)\b|%", _I),
    "absence": re.compile(r"\b(never|not\s+(yet\s+)?(been\s+)?(sold|bought|purchased|used|ordered)|without\s+any|"
                          r"with\s+no|have\s+no|has\s+no|no\s+\w+\s+at\s+all)\b", _I),
    "min": re.compile(r"(?<!\bat\s)\b(fewest|least|lowest|smallest|minimum|shortest|cheapest)\b", _I),
    # "for each employee, who ..." lists rows; grouping needs something to aggregate
    "aggregate": re.compile(r"\b(how\s+many|number\s+of|count|total|sum|average|avg|mean|revenue|sales|spend|"
                            r"spent|units|most|least|fewest|longest|shortest|biggest|highest|lowest|best|worst)\b", _I),
}
JA = {
    "group": re.compile(r"ごと|毎|各|別に|別の|それぞれ"),
    "top_n": re.compile(r"最も|一番|いちばん|上位|トップ|最大|最高|最多|最長|最小|最少|最短|最低"),
    "ties": re.compile(r"同率|同点|同順位|同数|タイ"),
    "compare_aggregate": re.compile(r"平均(より|以上|以下|を上回|を下回)|と比べ|比較"),
    "period": re.compile(r"各(年|月|四半期|週)|毎(年|月|週)|(年|月|四半期|年度|週)(ごと|別|毎|次)|(?<!曜)日(ごと|別)"),
    "share": re.compile(r"割合|比率|パーセント|％|%|シェア"),
    "absence": re.compile(r"一度も|ない(曲|顧客|トラック|もの)|されていない|ありません"),
    "min": re.compile(r"最も少な|一番少な|最小|最少|最短|最低"),
    "aggregate": re.compile(r"数|合計|平均|売上|売り上げ|件数|最も|一番|最大|最小|金額"),
}
_OUTPUTS = re.compile(r"\b(?:show|give|list|return|include|display|with)\s+(?:me\s+)?(?:the\s+|their\s+|its\s+)?"
                      r"([a-z][a-z '\-]*?(?:,\s*[a-z][a-z '\-]*?)*(?:,?\s+and\s+[a-z][a-z '\-]*?)?)\s*(?:[.?!;(]|$)", _I)
_STOP_OUTPUTS = {"ties", "everyone", "all", "them", "it", "anyone"}
_NOT_OUTPUT = re.compile(r"\b(first|last|order|descending|ascending|tied|ties|everyone)$", _I)

HINTS = {
    "English": {
        "group": "One result row per group the question names (per/each/by): GROUP BY that group's key and "
                 "name columns, and SELECT them.",
        "top_n": "Rank with ORDER BY the measure (DESC for most/highest, ASC for least/lowest) and LIMIT to the "
                 "number asked (1 for 'the most'); when ranking entities by a count or sum, GROUP BY the entity first.",
        "top_per_group": "Best row within each group: compute the measure per row in a CTE with RANK() OVER "
                         "(PARTITION BY the group ORDER BY the measure DESC) AS rnk, then keep rnk = 1 "
                         "(or <= N). Do not use LIMIT.",
        "ties": "Keep every tied row: compare with the MAX/MIN computed in a subquery or CTE (or RANK() = 1); "
                "never LIMIT 1.",
        "min_ties": "Keep every row tied at the minimum: HAVING the count = (SELECT MIN(...) FROM (per-group "
                    "counts)); never LIMIT 1.",
        "compare_aggregate": "Compute the value to compare with first (e.g. the average of per-entity totals "
                             "in a CTE: WITH t AS (SELECT id, SUM(x) AS total ... GROUP BY id)), then compare "
                             "each entity's total with (SELECT AVG(total) FROM t).",
        "period": "Bucket dates at the period asked: FORMAT_TIMESTAMP('%Y', date_col) AS year ('%Y-%m' for "
                  "months), EXTRACT(QUARTER FROM date_col) next to the year for quarters, DATE_TRUNC(DATE(date_col), "
                  "WEEK(MONDAY)) for weeks, DATE(date_col) for days; GROUP BY and ORDER BY that bucket.",
        "share": "A percentage is 100.0 * part / whole in one query, e.g. ROUND(100.0 * SUM(CASE WHEN cond THEN "
                 "x ELSE 0 END) / SUM(x), 2).",
        "absence": "Rows with no match in another table: WHERE NOT EXISTS (SELECT 1 FROM other WHERE "
                   "other.key = this.key).",
        "outputs": "The result must show exactly these items, in this order: {items}.",
    },
    "Japanese": {
        "group": "質問が示すグループ（ごと・各・別）ごとに1行: そのグループのキーと名前の列で GROUP BY し、"
                 "それらを SELECT する。",
        "top_n": "指標で ORDER BY（最も多い・高いは DESC、少ない・低いは ASC）し、求められた件数で LIMIT する"
                 "（「最も」は 1）。",
        "top_per_group": "各グループの中の最上位: CTE で RANK() OVER (PARTITION BY グループ ORDER BY 指標 DESC) "
                         "AS rnk を計算し、rnk = 1 の行だけを残す。LIMIT は使わない。",
        "ties": "同率の行はすべて残す: サブクエリか CTE で求めた MAX/MIN と比較する（または RANK() = 1）。"
                "LIMIT 1 は使わない。",
        "min_ties": "最小値に並ぶ行をすべて残す: HAVING 件数 = (SELECT MIN(...) FROM グループごとの件数)。"
                    "LIMIT 1 は使わない。",
        "compare_aggregate": "比較の基準値を先に計算する（例: CTE でエンティティごとの合計を出し、その AVG と"
                             "比較する）。",
        "period": "日付は求められた期間で区切る: 年は FORMAT_TIMESTAMP('%Y', 日付列) AS year、月は '%Y-%m'、"
                  "四半期は年と EXTRACT(QUARTER FROM 日付列)、週は DATE_TRUNC(DATE(日付列), WEEK(MONDAY))、日は "
                  "DATE(日付列)。その区切りで GROUP BY と ORDER BY をする。",
        "share": "割合は 1つのクエリで 100.0 * 部分 / 全体、例: ROUND(100.0 * SUM(CASE WHEN 条件 THEN x ELSE 0 "
                 "END) / SUM(x), 2)。",
        "absence": "他のテーブルに対応する行がないもの: WHERE NOT EXISTS (SELECT 1 FROM 他 WHERE 他.キー = "
                   "この.キー)。",
        "outputs": "結果にはこれらの項目をこの順で出す: {items}。",
    },
}


@dataclass
class Plan:
    language: str
    shapes: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The plan as prompt text: a heading and one '- hint' line per shape ('' when nothing detected)."""
        if not self.hints:
            return ""
        head = "SQLの形（計画）:" if self.language == "Japanese" else "SQL shape (plan):"
        return head + "\n" + "\n".join(f"- {h}" for h in self.hints)

    def to_dict(self) -> dict:
        return {"language": self.language, "shapes": list(self.shapes), "outputs": list(self.outputs)}


def _outputs(q: str) -> list[str]:
    m = None
    for m in _OUTPUTS.finditer(q):
        pass  # the last listing wins ("Which customers ...? Show name and company.")
    if m is None:
        return []
    parts = [p.strip(" '") for p in re.split(r",\s*|\s+and\s+", m.group(1))]
    items = [re.sub(r"^(the|their|its|a|an)\s+", "", p, flags=_I) for p in parts if p]
    items = [i for i in items if i.lower() not in _STOP_OUTPUTS and len(i.split()) <= 4 and not _NOT_OUTPUT.search(i)]
    return items if len(items) >= 2 else []


def plan_question(question: str) -> Plan:
    """Detect the SQL shapes `question` asks for (see the module docstring). Never raises; an empty Plan
    (no shapes, no hints) when nothing is detected."""
    q = normalize(question)
    lang = question_language(q) or "English"
    pats = JA if lang == "Japanese" else EN
    found = {name for name, pat in pats.items() if pat.search(q)}
    shapes: list[str] = []
    period = "period" in found
    group = ("group" in found and "aggregate" in found) or period
    top, ties, least = "top_n" in found, "ties" in found, "min" in found
    if period:
        shapes.append("period")  # implies the grouping
    if top and group:
        shapes.append("top_per_group")  # "the longest track in each genre", "各年で最も売上が多かった国"
    elif group and not period:
        shapes.append("group")
    elif top and ties:
        shapes.append("min_ties" if least else "ties")
    elif top:
        shapes.append("top_n")
    for extra in ("compare_aggregate", "share", "absence"):
        if extra in found:
            shapes.append(extra)
    if ties and not {"top_per_group", "ties", "min_ties"} & set(shapes):
        shapes.append("ties")
    outputs = _outputs(q) if lang == "English" else []
    hints_lang = HINTS.get(lang, HINTS["English"])
    hints = [hints_lang[s] for s in shapes]
    if outputs:
        hints.append(hints_lang["outputs"].format(items=", ".join(outputs)))
    return Plan(lang, shapes, hints, outputs)
