"""Verified queries: the no-LLM path of Text-to-SQL. A question worded like one of the SQL config's examples
(`examples:` in relayrag.sql.yaml, question → SQL written and checked by the data team) is answered by running
that example's SQL; nothing is generated. This is the "verified query repository" idea of semantic-layer
products: recurring questions get a reviewed query, and without an LLM only those can be answered.

A question matches the example that `relayrag.sql.context.pick_examples` ranks first (RRF of MiniLM cosine and
BM25) when

- its cosine to the example question is at least VERIFIED_MIN_COSINE (0.8), and
- it names the same parameters: the numbers in both questions (digits and the English number words one to
  twelve) are the same, and every string literal of the SQL that the example question names (a country, a
  genre, a person) appears in the question too — "How many tracks are in the Rock genre?" does not run the
  Jazz example, and "… in 2022?" does not run the 2023 example.

- it asks for nothing the example does not: every content word of the question (relayrag's BM25 tokens:
  stemmed, stopwords removed, CJK character bigrams; negations kept) occurs in the example question, and
  every marker of direction, aggregate or negation in the example (most, least, highest, average, total,
  not, …) occurs in the question — "… bought the least", "… did not buy", "average" against "total" get no
  match. Extra words in the example (an output spec such as "Show the country and the number") are allowed.

Anything else gets no match, and the caller says that Text-to-SQL needs an LLM, listing the closest verified
questions. Nothing is substituted into the SQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VERIFIED_MIN_COSINE = 0.8
CLOSEST_SHOWN = 3

_NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                 "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.I)


@dataclass(frozen=True)
class VerifiedMatch:
    """The example that answers the question: its question, SQL and the cosine of the two questions."""

    question: str
    sql: str
    cosine: float


def numbers(text: str) -> set[str]:
    """Numbers named in `text`, digits and English number words one..twelve, as digit strings."""
    out = set()
    for m in _NUMBER.finditer(text):
        tok = m.group(0).lower()
        out.add(_NUMBER_WORDS.get(tok, tok))
    return out


def string_literals(sql: str) -> list[str]:
    """The string literals of `sql` (BigQuery dialect), [] when it does not parse."""
    import sqlglot
    from sqlglot import exp
    try:
        tree = sqlglot.parse_one(sql, read="bigquery")
    except sqlglot.errors.ParseError:
        return []
    return [lit.this for lit in tree.find_all(exp.Literal) if lit.is_string and lit.this]


def same_parameters(question: str, example_question: str, sql: str) -> bool:
    """Does `question` name the parameters the example's SQL fixes (see the module docstring)?"""
    if numbers(question) != numbers(example_question):
        return False
    q, ex = question.casefold(), example_question.casefold()
    return all(lit.casefold() in q for lit in string_literals(sql) if lit.casefold() in ex)


# words that change which rows answer: direction, extremes, aggregates, negation (stemmed like the tokens)
MARKERS = ("most", "least", "fewest", "fewer", "lowest", "highest", "largest", "smallest", "biggest", "top",
           "bottom", "average", "mean", "median", "total", "sum", "count", "maximum", "minimum", "max", "min",
           "ascending", "descending", "more", "less", "not", "no", "never", "without", "none", "except",
           "最も", "最大", "最小", "平均", "合計", "以外", "ない", "少な", "多い")
_NEGATIONS = re.compile(r"\b(not|no|never|without|none)\b|n't\b", re.I)


def content_words(text: str) -> set[str]:
    """relayrag's BM25 tokens of `text` plus its negations (the stopword list drops "not" and "no")."""
    from relayrag.retrieval.tokenize import tokenize
    words = set(tokenize(text))
    words |= {"not" if m.group(0).lower() == "n't" else m.group(0).lower() for m in _NEGATIONS.finditer(text)}
    return words


def markers(text: str) -> set[str]:
    """The MARKERS present in `text` (Latin ones as whole words, CJK ones as substrings)."""
    low = text.casefold()
    return {m for m in MARKERS if (re.search(rf"\b{m}\b", low) if m.isascii() else m in text)} | \
        ({"not"} if re.search(r"n't\b", low) else set())


def asks_the_same(question: str, example_question: str) -> bool:
    """Does `question` ask for nothing `example_question` does not (see the module docstring)?"""
    return (content_words(question) <= content_words(example_question)
            and markers(example_question) <= markers(question))


def match_verified(question: str, examples: list, embedder, min_cosine: float = VERIFIED_MIN_COSINE,
                   ) -> tuple[VerifiedMatch | None, list[str]]:
    """(the verified example that answers `question` or None, the closest example questions best first).
    `examples`: relayrag.sql.config.Example list; `embedder`: relayrag's embedder (None: never a match)."""
    from relayrag.sql.context import pick_examples
    if not examples or embedder is None:
        return None, []
    picked = pick_examples(question, examples, embedder, k=CLOSEST_SHOWN)
    closest = [p["question"] for p in picked]
    best = max(picked, key=lambda p: p["cosine"] or 0.0)
    if ((best["cosine"] or 0.0) >= min_cosine and same_parameters(question, best["question"], best["sql"])
            and asks_the_same(question, best["question"])):
        return VerifiedMatch(best["question"], best["sql"], float(best["cosine"])), closest
    return None, closest
