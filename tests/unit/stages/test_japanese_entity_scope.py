"""Japanese entity scope (issue 31, grounded wrong answers on the hinoki blind set): a document laid out in one
numbered section per entity (「1. フェリーひのき」「4. 高速艇あおば」) answers a question about one entity only from
that entity's section, and a kanji compound with another modifier on the question's head (航海速力 for 最高速力)
is another kind of the thing asked. Wordings and documents written for these tests (vessels, branch offices,
reservoirs), not taken from a golden set."""

from __future__ import annotations

import pytest

from relayrag.stages.entity_scope import (CollectionKinds, heading_subject, off_scope, other_kind_ja,
                                          section_sibling_ja, section_subjects)
from relayrag.stages.local_context import is_heading

VESSELS = """保有船舶の概要
1. フェリーみさき（船舶コードMS-01）
フェリーみさきは、平成20年に就航した旅客船である。
旅客定員は400名である。
2. 船舶に共通する安全設備
救命いかだを各10台搭載する。
3. 高速船かもめ（船舶コードKM-02）
高速船かもめは、令和2年に就航した高速船である。
航海速力は30ノット、最高速力は35ノットである。"""

BRANCHES = """# 支店のご案内
## 1. 北支店
北支店は、駅前ビルの3階にある。
窓口の受付時間は9時から15時までである。
## 2. 南支店
南支店は、市役所の隣にある。
駐車場は20台分ある。"""

RESERVOIRS = """■ 東配水池
東配水池は、昭和55年に完成した。
有効容量は12,000立方メートルである。
■ 西配水池
西配水池は、平成9年に完成した。
有効容量は8,500立方メートルである。"""

DOCS = [VESSELS, BRANCHES, RESERVOIRS]


def test_numbered_japanese_section_titles_are_headings_and_list_items_are_not():
    assert is_heading("1. フェリーみさき（船舶コードMS-01）")
    assert is_heading("3．料金のご案内")
    assert not is_heading("1. 大人1人に同伴される幼児は、1人まで無料とする。")
    assert not is_heading("2. 令和3年7月1日改正：第10条を新設し、同日から施行する。")
    assert heading_subject("1. フェリーみさき（船舶コードMS-01）") == "フェリーみさき"
    assert heading_subject("## 2. 南支店") == "南支店"


def test_entities_with_a_section_of_their_own_and_topics_without_one():
    subjects = section_subjects(DOCS)
    assert {"フェリーみさき", "高速船かもめ", "北支店", "南支店", "東配水池", "西配水池"} <= subjects
    assert "船舶に共通する安全設備" not in subjects  # its text never takes it as a topic


@pytest.mark.parametrize("question,text,context,other", [
    ("フェリーみさきの最高速力は何ノットですか？", "航海速力は30ノット、最高速力は35ノットである。",
     "保有船舶の概要\n3. 高速船かもめ（船舶コードKM-02）", "高速船かもめ"),
    ("北支店の駐車場は何台分ありますか？", "駐車場は20台分ある。", "支店のご案内\n## 2. 南支店", "南支店"),
    ("東配水池はいつ完成しましたか？", "平成9年に完成した。", "■ 西配水池", "西配水池"),
    ("南支店の受付時間は？", "北支店の窓口の受付時間は9時から15時までである。", "", "北支店"),
])
def test_a_sentence_in_another_entitys_section_is_off_scope(question, text, context, other):
    subjects = section_subjects(DOCS)
    assert section_sibling_ja(question, text, context, subjects) == other
    assert off_scope(question, text, context, CollectionKinds(question, lambda: DOCS)) is not None


@pytest.mark.parametrize("question,text,context", [
    ("高速船かもめの最高速力は何ノットですか？", "航海速力は30ノット、最高速力は35ノットである。",
     "保有船舶の概要\n3. 高速船かもめ（船舶コードKM-02）"),
    ("フェリーみさきには救命いかだが何台ありますか？", "救命いかだを各10台搭載する。", "2. 船舶に共通する安全設備"),
    ("南支店の駐車場は何台分ありますか？", "駐車場は20台分ある。", "支店のご案内\n## 2. 南支店"),
    ("配水池の有効容量は？", "有効容量は12,000立方メートルである。", "■ 東配水池"),  # names no entity
])
def test_a_sentence_in_the_questions_own_or_a_shared_section_is_kept(question, text, context):
    assert section_sibling_ja(question, text, context, section_subjects(DOCS)) is None


@pytest.mark.parametrize("question,text,other", [
    ("フェリーみさきの最高速力は何ノットですか？", "主機関はディーゼル機関2基で、航海速力は13.5ノットである。", "航海速力"),
    ("小児運賃はいくらですか？", "大人運賃は1,200円です。", "大人運賃"),
    ("窓口の受付時間は何時までですか？", "本庁舎から窓口までの所要時間は5分です。", "所要時間"),
    ("提出期限はいつですか？", "支払期限は毎月末日です。", "支払期限"),
])
def test_another_modifier_on_the_questions_kanji_head_is_another_kind(question, text, other):
    collection = ["航海速力は30ノット、最高速力は35ノット。", "小児運賃は600円。", "受付時間は17時まで。",
                  "申請書の提出期限は3月末。"]
    writes = CollectionKinds(question, lambda: collection).writes
    assert other_kind_ja(question, text, "", writes) == other


@pytest.mark.parametrize("question,text", [
    ("最高速力は何ノットですか？", "航海速力は28ノット、最高速力は32ノットである。"),  # it says both
    ("小児片道運賃はいくらですか？", "片道運賃は、大人1,200円、小児600円です。"),  # a less specific mention
    ("最大速力は何ノットですか？", "航海速力は28ノットである。"),  # the collection never writes 最大速力
])
def test_a_compound_said_or_unknown_to_the_collection_is_no_other_kind(question, text):
    collection = ["航海速力は28ノット、最高速力は32ノット。", "片道運賃は大人1,200円。"]
    writes = CollectionKinds(question, lambda: collection).writes
    assert other_kind_ja(question, text, "", writes) is None
