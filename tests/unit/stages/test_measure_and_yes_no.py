"""`grounded` means supported and responsive (issue 31): two classes of answers that shared the question's words
but not what it asks.

- Measure questions without a measure: "How tall is the Kestrel Point lighthouse?" / 「灯台の高さは何メートルですか」
  is not answered by the year the lighthouse was built; a question for a dimension (how tall / high / heavy / fast
  / old, the height / weight / speed / capacity of …; 高さは, 重さは, 何メートル) needs a quantity with a unit of
  that dimension (answerability.measure_kind / states_measure).
- Yes/no questions whose verb is not said: "Can members transfer their share to a relative?" is not answered by
  "Members may sell their share to another member." (responsive.yes_no_predicate / unanswered_yes_no).

Small inputs of their own: a lighthouse note, a harbour's equipment list, cooperative rules in English and
Japanese."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.hallucination_check import responsive

LIGHTHOUSE = """# Kestrel Point Lighthouse

The Kestrel Point lighthouse was built in 1872 by the harbour board.
Its lamp was electrified in 1931 and automated in 1988.
"""

LIGHTHOUSE_JA = """# ケストレル岬灯台

ケストレル岬灯台は1872年に港湾委員会によって建設された。
灯台の灯器は1931年に電化され、1988年に自動化された。
"""

TOWER = """
## The tower

The tower is 34 metres tall and its lamp weighs 450 kg.
"""

TOWER_JA = """
## 塔

灯台の高さは34メートルで、灯器の重さは450kgである。
"""


@pytest.mark.parametrize("question", [
    "How tall is the Kestrel Point lighthouse?", "How high is the lighthouse at Kestrel Point?",
    "What is the height of the Kestrel Point lighthouse?", "灯台の高さは何メートルですか？", "灯台の高さは？",
    "どのくらいの高さですか、ケストレル岬灯台は？"])
def test_a_year_does_not_answer_a_height(question):
    ctx = "Kestrel Point Lighthouse"
    sentence = ("ケストレル岬灯台は1872年に港湾委員会によって建設された。" if any(ord(c) > 0x3000 for c in question)
                else "The Kestrel Point lighthouse was built in 1872 by the harbour board.")
    assert not responsive(question, [{"text": sentence, "context": ctx}])


@pytest.mark.parametrize("question, wrong, right", [
    ("How heavy is the lamp of the lighthouse?", "The lamp was electrified in 1931.", "The lamp weighs 450 kg."),
    ("What is the weight of the lighthouse lamp?", "The lamp was electrified in 1931.", "The lamp weighs 450 kg."),
    ("How much does the lighthouse lamp weigh?", "The lamp was electrified in 1931.", "The lamp weighs 450 kg."),
    ("灯器の重さはどのくらいですか？", "灯器は1931年に電化された。", "灯器の重さは450kgである。"),
    ("How fast is the pilot boat?", "The pilot boat carries 12 passengers.", "The pilot boat reaches 28 knots."),
    ("What is the top speed of the pilot boat?", "The pilot boat carries 12 passengers.",
     "The pilot boat reaches 28 knots."),
    ("水先艇の最高速度は？", "水先艇の定員は12人である。", "水先艇の最高速度は時速50キロである。"),
    ("What is the capacity of the water tank?", "The water tank was replaced in 2019.",
     "The water tank holds 5,000 litres."),
    ("タンクの容量は何リットルですか？", "タンクは2019年に交換された。", "タンクの容量は5,000リットルである。"),
    ("How old is the lighthouse?", "The lighthouse lamp weighs 450 kg.", "The lighthouse was built in 1872."),
])
def test_a_measure_needs_a_unit_of_its_kind(question, wrong, right):
    assert not responsive(question, [{"text": wrong, "context": "Harbour equipment"}])
    assert responsive(question, [{"text": right, "context": "Harbour equipment"}])


def test_measure_kinds_of_the_questions():
    from relayrag.stages.answerability import expected_answer_type, states_answer_type
    assert expected_answer_type("How tall is the tower?") == "length"
    assert expected_answer_type("What is the diameter of the pipe?") == "length"
    assert expected_answer_type("重量を教えてください") == "mass"
    assert expected_answer_type("会議室の定員は何人ですか？") == "capacity"
    assert expected_answer_type("How far is the depot from the port?") == "duration"  # a length or a time
    assert expected_answer_type("How high are the fees?") == "money"
    assert expected_answer_type("How high is the interest rate?") == "number"  # a rate, not a dimension
    assert expected_answer_type("重量物を運ぶときは誰に連絡しますか？") is None
    assert states_answer_type("length", "Pier | 120", unit_context="Name | Length (m)")
    assert not states_answer_type("length", "Pier | 1998", unit_context="Name | Built")


def test_measure_questions_end_to_end(ctx, tmp_path):
    d = tmp_path / "lighthouse"
    d.mkdir()
    (d / "lighthouse.md").write_text(LIGHTHOUSE, encoding="utf-8")
    (d / "lighthouse_ja.md").write_text(LIGHTHOUSE_JA, encoding="utf-8")
    assert not ingest(ctx, d, "lh").failed
    for question in ("How tall is the Kestrel Point lighthouse?", "What is the height of the Kestrel Point lighthouse?",
                     "ケストレル岬灯台の高さは何メートルですか？"):
        res = ask(question, "lh", ctx=ctx)
        assert not res["grounded"], (question, res["answer"])
    (d / "lighthouse.md").write_text(LIGHTHOUSE + TOWER, encoding="utf-8")
    (d / "lighthouse_ja.md").write_text(LIGHTHOUSE_JA + TOWER_JA, encoding="utf-8")
    assert not ingest(ctx, d, "lh").failed
    for question, expected in (("How tall is the Kestrel Point lighthouse?", "34 metres"),
                               ("ケストレル岬灯台の高さは何メートルですか？", "34メートル")):
        res = ask(question, "lh", ctx=ctx)
        assert res["grounded"] and expected in res["answer"], (question, res["answer"])


RULES = """# Rules of the Fenwick Housing Cooperative

## Shares

Members may sell their share to another member of the cooperative.
Members can transfer their voting rights to a proxy for one meeting.
"""

RULES_JA = """# フェンウィック住宅協同組合 規約

## 持分

組合員は、その持分を他の組合員に売却することができる。
組合員は、議決権を代理人に委任することができる。
"""


@pytest.mark.parametrize("question, sentence", [
    ("Can members transfer their share to a relative?", "Members may sell their share to another member."),
    ("May a member of the cooperative transfer shares to a relative?", "Members may sell their share to another member."),
    ("Can members transfer their share to a relative?", "Members can transfer their voting rights to a proxy."),
    ("Are members allowed to transfer their share to a relative?", "Members may sell their share to another member."),
    ("Do new members need to pay an entry fee?", "New members receive a welcome pack and an entry card."),
    ("組合員は持分を親族に譲渡できますか？", "組合員は、その持分を他の組合員に売却することができる。"),
    ("持分の譲渡には理事会の承認が必要ですか？", "持分の売却は、総会で報告する。"),
])
def test_yes_no_needs_the_question_verb(question, sentence):
    assert not responsive(question, [{"text": sentence, "context": "Cooperative rules\nShares"}])


@pytest.mark.parametrize("question, sentence", [
    ("Can members transfer their share to a relative?", "A member may transfer the share to a spouse or a child."),
    ("Are members allowed to transfer their share to a relative?",
     "Shares are transferable to relatives with the consent of the board."),
    ("Is the office open on Saturdays?", "The office is open from 9:00 to 12:00 on Saturdays."),
    ("組合員は持分を親族に譲渡できますか？", "組合員は、持分を配偶者又は子に譲渡することができる。"),
    ("有給休暇を翌年に繰り越すことはできますか？", "年次有給休暇は翌年度に限り繰り越すことができる。"),
])
def test_yes_no_with_the_verb_answers(question, sentence):
    assert responsive(question, [{"text": sentence, "context": "Rules"}])


def test_yes_no_end_to_end(ctx, tmp_path):
    d = tmp_path / "coop"
    d.mkdir()
    (d / "rules.md").write_text(RULES, encoding="utf-8")
    (d / "rules_ja.md").write_text(RULES_JA, encoding="utf-8")
    assert not ingest(ctx, d, "co").failed
    for question in ("Can members transfer their share to a relative?", "組合員は持分を親族に譲渡できますか？"):
        res = ask(question, "co", ctx=ctx)
        assert not res["grounded"], (question, res["answer"])
    res = ask("Can members sell their share to another member?", "co", ctx=ctx)
    assert res["grounded"] and "sell their share" in res["answer"], res["answer"]


def test_japanese_verb_in_the_question_line_above():
    # Japanese leaves the verb to the FAQ's question line; the sentence names the thing asked about
    q = "会費をクレジットカードで支払えますか？"
    ctx = "よくある質問\nQ3. 会費の支払方法は？\n会費は口座振替でお支払いいただけます。"
    assert responsive(q, [{"text": "クレジットカードはご利用いただけません。", "context": ctx}])
    # … but not when the line above says another act
    other_act = "よくある質問\nQ3. 会費の返金は？"
    assert not responsive(q, [{"text": "クレジットカードはご利用いただけません。", "context": other_act}])


# An FAQ answer of several sentences: the question line heads all of them. The second sentence answers for its own
# subject; without the question line it says no verb of the question and was dropped, leaving the first sentence,
# which is about other things.
GYM_FAQ_JA = """スポーツセンター利用案内（よくある質問）

Q1. 更衣室にロッカーはありますか。
ロッカーは無料でお使いいただけます。鍵は受付でお渡しします。

Q2. プールで水着以外の服は使えますか。
北館と南館のプールではラッシュガードをご利用いただけます。東館のプールではTシャツの着用はできません。
"""



@pytest.mark.parametrize("line, heads", [
    ("Q2. プールで水着以外の服は使えますか。", True), ("Q: Can I pay for a session in cash?", True),
    ("問3 申請は必要ですか？", True), ("Ｑ１．支払いは？", True),
    ("Queen Street is closed?", False), ("Q3 revenue was up?", False), ("Is it open?", False)])
def test_faq_question_lines(line, heads):
    from relayrag.stages.local_context import is_faq_question_line, section_heading
    assert is_faq_question_line(line) is heads
    text = f"{line}\nThe first sentence. The second sentence."
    assert (section_heading(text, text.index("The second")) == line) is heads


def test_a_yes_no_answer_in_the_second_sentence_of_an_faq_answer(ctx, tmp_path):
    d = tmp_path / "gym"
    d.mkdir()
    (d / "faq_ja.txt").write_text(GYM_FAQ_JA, encoding="utf-8")
    assert not ingest(ctx, d, "gym").failed
    res = ask("東館のプールでTシャツは使えますか？", "gym", ctx=ctx)
    assert res["grounded"] and "東館のプールではTシャツの着用はできません" in res["answer"], res["answer"]
    res = ask("北館のプールでラッシュガードは使えますか？", "gym", ctx=ctx)  # the first sentence, as before
    assert res["grounded"] and "ラッシュガードをご利用いただけます" in res["answer"], res["answer"]
