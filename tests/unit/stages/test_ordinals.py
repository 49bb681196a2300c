"""Numbered places and things in Japanese (issue 31, hinoki): a sentence that names others of the question's kind but
not its number (「1番のりば、3番のりば」 for 「2番のりば」) answers nothing about it."""

import pytest

from relayrag.stages.ordinals import names_other_ordinal, ordinals

_PIERS = "汐見港ターミナルでは、フェリーは1番のりば、高速艇あおばは3番のりばから発着します。"


@pytest.mark.parametrize("question, text", [
    ("汐見港ターミナルの2番のりばからは何が発着しますか？", _PIERS),
    ("3号車には何人乗れますか？", "1号車と2号車は指定席です。"),
    ("第5便の出航時刻は何時ですか？", "第1便は7時00分、第2便は9時30分に出航します。"),
    ("２番線の列車はどこ行きですか？", "1番線は上り、3番線は下りです。")])
def test_sentence_naming_only_other_numbers_of_the_kind_does_not_answer(question, text):
    assert names_other_ordinal(question, text)


@pytest.mark.parametrize("question, text", [
    ("汐見港ターミナルの3番のりばからは何が発着しますか？", _PIERS),  # its own number is named
    ("汐見港ターミナルの2番のりばからは何が発着しますか？", "2番のりばは臨時便に使います。"),
    ("汐見港ターミナルの2番のりばからは何が発着しますか？", "臨時便は汐見港から発着します。"),  # names none of the kind
    ("フェリーは何番のりばから出ますか？", _PIERS),  # the question names no number
    ("第5便の出航時刻は何時ですか？", "3号車は指定席です。")])  # another kind
def test_own_number_or_no_number_of_the_kind_is_left_to_the_other_checks(question, text):
    assert not names_other_ordinal(question, text)


def test_ordinals_read_full_width_digits_and_kinds():
    assert ordinals("１番のりば、第３便、12号車") == {"番のりば": {"1"}, "便": {"3"}, "号車": {"12"}}
