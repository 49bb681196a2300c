"""Wording classes of the no-LLM template matcher (relayrag.sql.verified, relayrag.sql.wording, relayrag.sql.slots)
that blind paraphrases of the Chinook verified queries showed (issue 25): each class with English and Japanese
wordings written for these tests that must be answered by the right template with the right values, and near-miss
shapes of the same class that must still be declined. Real MiniLM embedder, the bundled Chinook config and
warehouse."""

from __future__ import annotations

import pytest

from relayrag.sql.config import load_config
from relayrag.sql.verified import match_verified
from relayrag.sql.warehouse import load_warehouse, open_warehouse
from tests.unit.sql.conftest import CHINOOK, CONFIG

# template indexes of examples/chinook/relayrag.sql.yaml
GENRE_COUNT, TOP_COUNTRIES, REVENUE_BY_COUNTRY, REP_CUSTOMERS, BIG_PLAYLISTS, MONTHLY, BUSINESS_AVG, GENRES, \
    BILLED_TO = range(9)


@pytest.fixture(scope="module")
def chinook(tmp_path_factory, embedder):
    home = tmp_path_factory.mktemp("matcher-classes")
    load_warehouse(home, "chinook", [CHINOOK], config=CONFIG)
    wh = open_warehouse(home, "chinook")
    yield load_config(home, "chinook"), wh, embedder
    wh.close()


def _answers(chinook, question, template, params):
    cfg, wh, embedder = chinook
    m, miss = match_verified(question, cfg, embedder, wh)
    assert m is not None, miss.reason
    assert (m.index, m.params) == (template, params)


def _declines(chinook, question):
    cfg, wh, embedder = chinook
    m, miss = match_verified(question, cfg, embedder, wh)
    assert m is None, f"answered by template {m.index} with {m.params}"
    assert miss.reason


def _p(genre=None, country=None, rep=None, n=None):
    return {k: v for k, v in (("genre", genre), ("country", country), ("rep", rep), ("n", n)) if v is not None}


# ---------------------------------------------------------------- fillers: register, scope, restriction, relation

@pytest.mark.parametrize("question,template,params", [
    ("Could you tell me how many songs we have in the Metal genre?", GENRE_COUNT, _p(genre="Metal")),
    ("pls, how many tracks are classified as Blues?", GENRE_COUNT, _p(genre="Blues")),
    ("ジャズの曲は全部で何曲？", GENRE_COUNT, _p(genre="Jazz")),
    ("フランス宛ての請求の合計は？", BILLED_TO, _p(country="France")),
    ("What's the total we billed to Germany? Quick answer pls.", BILLED_TO, _p(country="Germany")),
    ("Which customers are assigned to Margaret Park as support rep?", REP_CUSTOMERS, _p(rep="Margaret Park")),
])
def test_fillers_do_not_count_as_unknown_words(chinook, question, template, params):
    _answers(chinook, question, template, params)


@pytest.mark.parametrize("question", [
    "How many tracks tagged Blues were purchased?",                                   # a term behind the filler
    "Could you tell me how many Metal tracks we have that are longer than 4 minutes?",  # a condition after it
    "ドイツ宛ての請求の平均は？",                                                       # another aggregate
    "What is the average invoice total, audio only?",                                # "only" with another filter
])
def test_fillers_do_not_hide_what_a_question_adds(chinook, question):
    _declines(chinook, question)


# ---------------------------------------------------------------- a count noun in katakana + 数 (トラック数)

@pytest.mark.parametrize("question,template,params", [
    ("ジャンル別のトラック数を多い順に", GENRES, {}),
    ("トラック数が150を超えるプレイリストは？", BIG_PLAYLISTS, _p(n=150)),
    ("Which playlists have a track count over 40?", BIG_PLAYLISTS, _p(n=40)),
])
def test_katakana_noun_and_su_is_a_count(chinook, question, template, params):
    _answers(chinook, question, template, params)


@pytest.mark.parametrize("question", [
    "アルバム数が10より多いアーティストは？",
    "トラック数が20未満のプレイリストは？",
    "Which playlists have fewer than 15 tracks?",
])
def test_katakana_counts_of_other_things_or_conditions_are_declined(chinook, question):
    _declines(chinook, question)
