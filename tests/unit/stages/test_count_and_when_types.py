"""Two answer types that a number of the wrong kind used to satisfy (issue 31, grounded wrong answers on the
hinoki blind set): a count of things is not answered by clock times or a day of a month ("How many rental
bicycles …?" → "available from 8:00 to 17:00"), and "when" is not answered by how far a place is in time
("When was the shrine built?" → "15 minutes on foot from the port"). Wordings written for these tests."""

from __future__ import annotations

import pytest

from relayrag.stages.answer_shape import states_wh_type, wh_answer_type
from relayrag.stages.answerability import expected_answer_type, states_answer_type


def _states(question: str, text: str) -> bool:
    cjk = any("\u3040" <= ch <= "\u9fff" for ch in question)
    return states_answer_type(expected_answer_type(question), text, cjk, question=question)


@pytest.mark.parametrize("question,text", [
    ("How many rental bicycles are there at the port?", "Rental bicycles: available from 8:00 to 17:00."),
    ("How many lockers does the terminal have?", "Lockers can be used from 6:30 until 21:00 every day."),
    ("How many staff attend the safety drill?", "The safety drill is held at 10 am on 15 March."),
    ("How many buses run on Sundays?", "On Sundays buses run from 7.30 to 19.45."),
    ("レンタサイクルは何台ありますか？", "レンタサイクルは8時から17時まで利用できます。"),
    ("窓口の職員は何名ですか？", "窓口の受付時間は8:30〜17:15です。"),
    ("説明会には何人参加しましたか？", "説明会は令和7年6月8日に開催した。"),
])
def test_a_count_is_not_answered_by_clock_times_or_days(question, text):
    assert not _states(question, text)


@pytest.mark.parametrize("question,text", [
    ("How many rental bicycles are there at the port?", "The port has 12 rental bicycles."),
    ("How many lockers does the terminal have?", "There are 40 lockers, open from 6:30 until 21:00."),
    ("How many passengers may travel free with one adult?", "Up to 2 may travel free with each adult."),
    ("How many staff attend the safety drill?", "On 15 March, 24 staff attended the drill."),
    ("レンタサイクルは何台ありますか？", "レンタサイクルは20台あり、8時から17時まで利用できます。"),
    ("窓口の職員は何名ですか？", "窓口には職員3名を配置する。"),
    ("説明会には何人参加しましたか？", "令和7年6月8日の説明会には45人が参加した。"),
])
def test_a_count_beside_a_time_still_answers(question, text):
    assert _states(question, text)


@pytest.mark.parametrize("question,text", [
    ("When was Hinoki Shrine built?", "Hinoki Shrine: a shrine surrounded by old cypress trees, 15 minutes on foot "
                                      "from the port."),
    ("When did the museum open?", "The museum is a 10-minute walk from the pier."),
    ("When is the market held?", "The market square lies 20 minutes by bus from the station."),
    ("檜島神社はいつ建てられましたか？", "檜島神社は港から徒歩15分です。"),
    ("資料館はいつ開館しましたか？", "資料館は駅から車で約10分の場所にある。"),
    ("朝市はいつ開かれますか？", "朝市の会場はバスで20分ほどの広場です。"),
])
def test_when_is_not_answered_by_a_travel_time(question, text):
    assert wh_answer_type(question) == "when"
    cjk = any("\u3040" <= ch <= "\u9fff" for ch in question)
    assert not states_wh_type("when", text, cjk, question)


@pytest.mark.parametrize("question,text", [
    ("When was Hinoki Shrine built?", "The shrine, 15 minutes on foot from the port, was built in 1712."),
    ("When must I board?", "Board at least 20 minutes before departure."),
    ("When is the form due?", "Return the form by the end of the month."),
    ("When will I get my refund?", "Refunds are paid 14 days after the request."),
    ("檜島神社はいつ建てられましたか？", "港から徒歩15分の檜島神社は1712年に建てられた。"),
    ("いつまでに乗船すればよいですか？", "出港の10分前までに乗船してください。"),
])
def test_when_is_still_answered_beside_a_travel_time(question, text):
    cjk = any("\u3040" <= ch <= "\u9fff" for ch in question)
    assert states_wh_type("when", text, cjk, question)


def test_by_of_an_agent_or_a_means_says_no_time_but_by_of_a_deadline_does():
    q = "When is the permit signed?"
    assert not states_wh_type("when", "The permit is signed by the harbour master.", False, q)
    assert not states_wh_type("when", "Permits are sent by post.", False, q)
    assert states_wh_type("when", "The permit is signed by the close of business.", False, q)
    assert states_wh_type("when", "The permit is signed by then.", False, q)
    assert states_wh_type("when", "Hours are entered by the last working day of each month.", False, q)
    assert states_wh_type("when", "Claims are paid by the following Friday.", False, q)
    assert not states_wh_type("when", "The permit is signed by the first officer.", False, q)


@pytest.mark.parametrize("question,text,ok", [
    ("汐見港の通学定期（3か月）はいくらですか？", "種類 | 1か月 | 3か月 | 6か月", False),  # column names, no price
    ("回数券はいくらですか？", "回数券の有効期間は3か月です。", False),
    ("駐車料金は1日いくら？", "駐車場は8時から20時まで利用できます。", False),
    ("汐見港の通学定期（3か月）はいくらですか？", "通学 | 16,200円 | 46,200円 | 87,500円", True),
    ("回数券はいくらですか？", "回数券は片道運賃の10枚分の額、12,000円で発売します。", True),
    ("2019年のペルーのGDPはいくら？", "IMFによると、2019年のペルーのGDPは2300億ドル。", True),
])
def test_ikura_asks_a_price(question, text, ok):
    assert expected_answer_type(question) == "money"
    assert _states(question, text) is ok


def test_ikura_of_degree_is_no_price_question():
    assert expected_answer_type("いくらか安くなりますか？") != "money"
