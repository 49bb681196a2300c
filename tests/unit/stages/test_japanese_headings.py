"""Japanese headings have no capitals (issue 31, hinoki): a Markdown heading, a ■ / ◆ line or a 【…】 line is a heading,
so the sentences under it read it as their section (an FAQ's 「## 乗船するのに予約は必要ですか？」 heads its answer; an item
under 「## 継続審議・未決定事項」 is an open item)."""

import pytest

from relayrag.stages.local_context import is_heading, section_heading
from relayrag.stages.undecided import undecided_answer


@pytest.mark.parametrize("line", [
    "## 決定事項", "## 乗船するのに予約は必要ですか？", "### 議題6 人事について", "■ 第1部 受付（出航60分前〜20分前）",
    "◆ お問い合わせ先", "【注意事項】"])
def test_marked_japanese_lines_are_headings(line):
    assert is_heading(line)


@pytest.mark.parametrize("line", [
    "旅客のみでご乗船の場合、予約は不要です。", "- 車両航送運賃の改定幅（議題1）", "1. 令和8年4月1日から旅客運賃を改定する。",
    "| 区分 | 運賃 |", "【注意】乗船券は出航の60分前から発売します。", "#5番のりば"])
def test_japanese_sentences_items_and_rows_are_not_headings(line):
    assert not is_heading(line)


def test_sentence_reads_its_japanese_section_heading():
    text = "## 継続審議・未決定事項\n\n- 高速艇あおばの冬季減便（議題3）\n- 後任の海務監督（議題6）\n"
    start = text.index("- 高速艇")
    assert section_heading(text, start) == "## 継続審議・未決定事項"
    assert undecided_answer("高速艇あおばの冬季減便はいつから実施されますか？", text[start:text.index("\n", start)],
                            section_heading(text, start))
    faq = "## 乗船するのに予約は必要ですか？\n\n旅客のみでご乗船の場合、予約は不要です。"
    assert section_heading(faq, faq.index("旅客")) == "## 乗船するのに予約は必要ですか？"
