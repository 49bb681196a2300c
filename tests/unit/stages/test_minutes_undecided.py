"""Minutes and notices nobody tuned for (issue 31, hinoki): topic headings, undecided items and Japanese times.

Three classes of grounded-wrong answers over Japanese business documents: a topic heading ("議題3 高速艇の冬季減便に
ついて") quoted as the answer, a sentence saying the value asked is not decided ("後任については人選中であり、決定しな
かった") quoted as the answer to "who / when / what", and a "when" (いつ) question answered by a count or a reference
number (議題3, 321,510人) or by the question's own year (令和6年度)."""

import pytest

from relayrag.stages.answer_shape import cjk_heading, not_an_answer, states_wh_type
from relayrag.stages.undecided import says_undecided, undecided_answer


@pytest.mark.parametrize("line", [
    "議題3 高速艇あおばの冬季減便について", "運賃改定について", "3. 個人情報の取扱いについて", "新造船の件",
    "安全管理体制に関する事項", "議題5 代理店契約の更新について（報告）"])
def test_japanese_topic_heading_is_a_heading(line):
    assert cjk_heading(line)
    assert not_an_answer("冬季減便はいつから実施されますか？", line) == "heading"


@pytest.mark.parametrize("line", [
    "車両航送運賃の改定幅については、本日は決定しなかった。", "詳しくは窓口にお問い合わせください。",
    "払い戻しについては窓口で受け付けます", "第8条（海外出張）の規定を準用する。", "事故の件数は3件である。"])
def test_sentence_about_a_topic_is_not_a_heading(line):
    assert not cjk_heading(line)


@pytest.mark.parametrize("text", [
    "後任の海務監督（運航管理者）については、現在人選中であり、本日は決定しなかった。",
    "船名、建造造船所及び就航時期はいずれも未定である。",
    "フェリーしらさぎの次回定期検査の時期については、本日は議論しなかった。",
    "意見が分かれたため結論は出さず、次回会議で継続審議とする。", "The opening date has not yet been decided.",
    "Venue: TBC", "The new fee is still to be confirmed by the board."])
def test_undecided_statements(text):
    assert says_undecided(text)


@pytest.mark.parametrize("text", [
    "審議の結果、導入を承認した。", "The board decided to keep the fee at 8%.", "後任には石田 浩二が就任した。",
    "検査は令和8年6月8日から行う。", "The date was confirmed on 3 March."])
def test_decided_statements(text):
    assert not says_undecided(text)


@pytest.mark.parametrize("question", [
    "宮下 剛さんの後任の海務監督は誰ですか？", "フェリーしらさぎの次回の定期検査はいつですか？", "新造船の船名は何ですか？",
    "Who will replace the harbour master?", "When does the new route open?"])
def test_undecided_sentence_does_not_answer_a_value_question(question):
    assert undecided_answer(question, "後任については現在人選中であり、時期も名前も未定である。")
    assert undecided_answer(question, "This has not yet been decided.")


@pytest.mark.parametrize("question", [
    "高速艇あおばの冬季減便は決まりましたか？", "キャッシュレス決済は使えますか？", "Has the new route been decided?",
    "新造船の船名は決まっていますか？", "Can I pay by card?"])
def test_undecided_sentence_answers_a_yes_no_question(question):
    assert not undecided_answer(question, "意見が分かれたため結論は出さず、次回会議で継続審議とする。")
    assert not undecided_answer(question, "Card payment is under consideration.")


@pytest.mark.parametrize("question", [
    "令和6年度の安全報告書はいつ公表されましたか？", "冬季減便はいつから実施されますか？", "新造船はいつ就航しますか？"])
def test_when_in_japanese_needs_a_time_not_a_count_or_reference(question):
    own_year = "令和6年度" in question  # the question's own year is no answer; another question's may be one
    for text in ("旅客輸送人員: 321,510人; 車両航送台数: 41,330台", "高速艇あおばの冬季減便（議題3）",
                 "救命いかだを各20台搭載する。",
                 *(("令和6年度 — 旅客輸送人員: 321,510人; 車両航送台数: 41,330台",) if own_year else ())):
        assert not states_wh_type("when", text, cjk=True, question=question), text
    for text in ("令和7年6月30日に公表した。", "12月から実施する。", "毎朝6時30分にお知らせします。", "出航の10分前まで",
                 "令和6年度の報告書は令和7年6月30日に公表した。"):
        assert states_wh_type("when", text, cjk=True, question=question), text


@pytest.mark.parametrize("text", [
    "Seats in the allocation that have not been confirmed by the Agent by 17:00 shall be released to general sale.",
    "Bookings not confirmed within 24 hours are cancelled.", "Documents under review are kept in the folder.",
    "Claims that were not determined by the deadline lapse."])
def test_a_condition_in_english_is_not_undecided(text):
    """"Seats … that have not been confirmed … are released" states when they are released: a condition, not a value
    left open."""
    assert not says_undecided(text)
    assert not undecided_answer("When are unconfirmed seats released to general sale?", text)


@pytest.mark.parametrize("question", [
    "高速艇あおばの冬季減便はいつから実施されますか？", "新造船の船名は何に決まりましたか？", "後任の海務監督は誰ですか？"])
def test_item_under_an_undecided_heading_does_not_answer_a_value_question(question):
    item = "- 車両航送運賃の改定幅（議題1） - 高速艇あおばの冬季減便（議題3） - 新造船の船名・就航時期（議題7）"
    assert undecided_answer(question, item, "## 継続審議・未決定事項")
    assert undecided_answer(question, "Name of the new vessel", "Open items: to be decided at the next meeting")
    assert not undecided_answer(question, item, "## 決定事項")
    assert not undecided_answer("高速艇あおばの冬季減便は決まりましたか？", item, "## 継続審議・未決定事項")


def test_successor_and_name_are_no_time():
    """後任 (successor) and 名前 (name) carry 後 and 前 but say no time."""
    q = "新造船はいつ就航しますか？"
    assert not states_wh_type("when", "後任の海務監督（議題6）", cjk=True, question=q)
    assert not states_wh_type("when", "新造船の名前（議題7）", cjk=True, question=q)
    assert states_wh_type("when", "乗船前に窓口でお申し出ください。", cjk=True, question=q)
    assert states_wh_type("when", "入港後に行う。", cjk=True, question=q)


@pytest.mark.parametrize("era, western", [
    ("令和7年5月の会議", "2025年5月の会議"), ("平成21年4月1日施行", "2009年4月1日施行"), ("平成元年", "1989年"),
    ("令和６年度", "2024年度"), ("昭和50年", "1975年")])
def test_era_years_read_as_calendar_years(era, western):
    from relayrag.stages.date_bounds import western_dates
    assert western_dates(era) == western


def test_era_year_of_the_question_is_the_period_of_the_answer():
    """「令和7年5月の経営会議で決まったこと」 is not answered by the minutes of another year (令和9年 in the sentence, the
    meeting of 令和8年); an era year and a calendar year are the same year."""
    from relayrag.stages.responsive import missing_period
    text = "4. 代理店契約を、販売手数料率8%のまま令和9年3月31日まで延長する（議題5）。"
    assert missing_period("令和7年5月の経営会議で決まったことは何ですか？", text, "経営会議 議事録 令和8年2月")
    assert missing_period("What was decided in 2025?", text, "")
    assert not missing_period("令和9年の手数料率は何%ですか？", text, "")
    assert not missing_period("2027年の手数料率は何%ですか？", text, "")
    assert not missing_period("販売手数料率は何%ですか？", text, "")  # the question names no period
    assert not missing_period("令和7年の手数料率は何%ですか？", "販売手数料率は8%とする。", "")  # no year said: any year


def test_era_date_bound():
    """「令和9年4月以降の手数料率」 is not answered by the rate agreed until 令和9年3月31日."""
    from relayrag.stages.date_bounds import misses_date_bound
    text = "販売手数料率を8%のまま令和9年3月31日まで延長する。"
    assert misses_date_bound("令和9年4月以降の販売手数料率は何%ですか？", text)
    assert misses_date_bound("2027年4月以降の販売手数料率は何%ですか？", text)
    assert not misses_date_bound("令和9年3月以前の販売手数料率は何%ですか？", text)
    assert not misses_date_bound("令和8年4月以降の販売手数料率は何%ですか？", text)
