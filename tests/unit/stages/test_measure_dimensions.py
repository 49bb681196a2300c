"""Measure questions for temperature, power, pressure and voltage (issue 31, stages/measures.py): "How cold must the
freezer be?", "How powerful are the engines?", 「保管温度は何度ですか」 need a sentence that states a value with a unit of
that dimension (−18 °C, minus 25 degrees, 450 kW, 6 bar, 230 V; マイナス18度, 300馬力, 0.7MPa), not one that shares the
question's words and holds another number (a service date, a count). Small inputs of their own: a cold store, a
workboat's engines, a compressor, a site's power supply, in English and Japanese."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answerability import expected_answer_type, states_answer_type
from relayrag.stages.hallucination_check import responsive
from relayrag.stages.measures import measure_kind, states_measure


def _answers(question: str, sentence: str, context: str = "Site equipment") -> bool:
    return responsive(question, [{"text": sentence, "context": context}])


@pytest.mark.parametrize("question, kind", [
    ("How cold must the freezer be kept?", "temperature"),
    ("What temperature should vaccines be stored at?", "temperature"),
    ("At what temperature is the cold room kept?", "temperature"),
    ("What is the set point of the blast chiller?", "temperature"),
    ("How hot does the oven get?", "temperature"),
    ("How powerful are the engines on the workboat?", "power"),
    ("What is the rated power of the pump motor?", "power"),
    ("How much power does the heater use?", "power"),
    ("What is the operating pressure of the compressor?", "pressure"),
    ("How high is the pressure in the receiver tank?", "pressure"),
    ("At what pressure does the relief valve open?", "pressure"),
    ("What is the supply voltage of the charger?", "voltage"),
    ("冷凍庫の温度は何度ですか？", "temperature"),
    ("ワクチンの保管温度は？", "temperature"),
    ("エンジンの出力はどのくらいですか？", "power"),
    ("この船は何馬力ですか？", "power"),
    ("コンプレッサーの圧力は？", "pressure"),
    ("充電器の電圧は？", "voltage"),
])
def test_kinds_of_the_new_dimensions(question, kind):
    assert measure_kind(question) == kind
    assert expected_answer_type(question) == kind


@pytest.mark.parametrize("question, kind", [
    ("What is the weight of the pressure vessel?", "mass"),       # the dimension asked is the vessel's weight
    ("What power supply does the laptop need?", None),            # a power supply is a thing, not a power
    ("What is the power of attorney?", None),
    ("How high is the interest rate?", "number"),                 # still a rate, not a dimension
    ("点検は年に何度行いますか？", "number"),                     # 何度 here asks how many times
])
def test_words_that_ask_no_new_dimension(question, kind):
    assert expected_answer_type(question) == kind


@pytest.mark.parametrize("kind, text, cjk", [
    ("temperature", "Keep the freezer at −18 °C.", False),
    ("temperature", "Store the samples at minus 25 degrees.", False),
    ("temperature", "Vaccines are stored between 2 and 8 °C.", False),
    ("temperature", "Hold between -25C and -18C.", False),
    ("temperature", "The oven reaches 250 degrees Celsius.", False),
    ("temperature", "The cold room is held at 41°F.", False),
    ("power", "Each engine delivers 450 kW.", False),
    ("power", "Two diesels rated at 600 hp each.", False),
    ("power", "The heater draws 2.2 kilowatts.", False),
    ("pressure", "The compressor runs at 8 bar.", False),
    ("pressure", "Working pressure: 2.5 MPa.", False),
    ("pressure", "Inflate the tyres to 35 psi.", False),
    ("voltage", "The charger needs a 230 V supply.", False),
    ("temperature", "冷凍庫はマイナス18度に保つ。", True),
    ("temperature", "ワクチンは2～8℃で保管する。", True),
    ("temperature", "検体は−25℃以下で保存する。", True),
    ("power", "エンジンの出力は450kWである。", True),
    ("power", "主機は300馬力である。", True),
    ("pressure", "使用圧力は0.7MPaである。", True),
    ("voltage", "充電器は100ボルトで使用する。", True),
])
def test_values_of_the_new_dimensions(kind, text, cjk):
    assert states_measure(kind, text, cjk)


@pytest.mark.parametrize("kind, text, cjk", [
    ("temperature", "The freezer was serviced on 14 July 2026.", False),
    ("temperature", "The cold room holds 40 pallets.", False),
    ("power", "The port engine was overhauled in 2025 after 12,000 hours.", False),
    ("power", "The workboat carries 12 passengers.", False),
    ("pressure", "The compressor was installed in 2019 in Building 3.", False),
    ("voltage", "The charger has 4 ports.", False),
    ("temperature", "冷凍庫は2019年に交換した。", True),
    ("power", "主機は2025年にオーバーホールした。", True),
    ("pressure", "コンプレッサーは3号棟に設置されている。", True),
])
def test_other_numbers_state_no_value_of_the_dimension(kind, text, cjk):
    assert not states_measure(kind, text, cjk)


def test_table_rows_under_a_unit_column():
    assert states_answer_type("temperature", "Cold store B | -18", unit_context="Room | Set point (°C)")
    assert states_answer_type("power", "Main engine | 450", unit_context="Unit | Power (kW)")
    assert states_answer_type("pressure", "Compressor K1 | 8", unit_context="Machine | Pressure (bar)")
    assert not states_answer_type("power", "Main engine | 2019", unit_context="Unit | Installed")
    assert not states_answer_type("temperature", "Cold store B | 40", unit_context="Room | Pallets")


@pytest.mark.parametrize("question, wrong, right", [
    ("How powerful are the engines on the Petrel workboat?",
     "14 July 2026 | Petrel | Port engine turbocharger replaced after rising exhaust readings",
     "The Petrel is driven by two diesel engines of 450 kW each."),
    ("What is the rated power of the Petrel's engines?", "The Petrel's engines were overhauled in 2025.",
     "Each engine of the Petrel is rated at 600 hp."),
    ("How cold must the vaccine fridge be kept?", "The vaccine fridge was serviced on 3 March 2026.",
     "The vaccine fridge must be kept between 2 and 8 °C."),
    ("At what temperature is the freezer kept?", "The freezer holds 40 pallets.",
     "The freezer is kept at minus 25 degrees."),
    ("What is the operating pressure of compressor K1?", "Compressor K1 was installed in 2019.",
     "Compressor K1 delivers air at 8 bar."),
    ("冷凍庫の温度は何度ですか？", "冷凍庫は2019年に交換した。", "冷凍庫はマイナス25度に保つ。"),
    ("ペトレル号のエンジンの出力はどのくらいですか？", "ペトレル号のエンジンは2025年にオーバーホールした。",
     "ペトレル号のエンジンの出力は450kWである。"),
    ("コンプレッサーK1の圧力は？", "コンプレッサーK1は2019年に設置された。", "コンプレッサーK1の使用圧力は0.8MPaである。"),
])
def test_a_value_of_another_kind_does_not_answer(question, wrong, right):
    ctx = "Site equipment | Date | Vessel | Work done" if " | " in wrong else "Site equipment"
    assert not _answers(question, wrong, ctx), wrong
    assert _answers(question, right), right


ENGINES = """# Petrel workboat

The Petrel workboat was delivered to the harbour in 2019.
Its engines were overhauled in March 2025 after 12,000 running hours.
The cold store on the quay was serviced on 14 July 2026.
"""

ENGINES_RIGHT = """
## Particulars

The Petrel is driven by two diesel engines of 450 kW each.
The quay cold store is kept at minus 25 degrees.
"""


def test_power_and_temperature_end_to_end(ctx, tmp_path):
    d = tmp_path / "petrel"
    d.mkdir()
    (d / "petrel.md").write_text(ENGINES, encoding="utf-8")
    assert not ingest(ctx, d, "pt").failed
    for question in ("How powerful are the engines of the Petrel workboat?",
                     "What is the power of the Petrel's engines?",
                     "How cold is the quay cold store kept?"):
        res = ask(question, "pt", ctx=ctx)
        assert not res["grounded"], (question, res["answer"])
    (d / "petrel.md").write_text(ENGINES + ENGINES_RIGHT, encoding="utf-8")
    assert not ingest(ctx, d, "pt").failed
    for question, expected in (("How powerful are the engines of the Petrel workboat?", "450 kW"),
                               ("How cold is the quay cold store kept?", "minus 25 degrees")):
        res = ask(question, "pt", ctx=ctx)
        assert res["grounded"] and expected in res["answer"], (question, res["answer"])


@pytest.mark.parametrize("question", [
    "How much output do the panels lose per year?",
    "How much power does the motor lose when it runs hot?",
    "How much pressure does the tank drop overnight?",
    "出力は毎年どれくらい低下しますか？"])
def test_a_change_of_a_quantity_asks_no_dimension(question):
    # a change is answered by a share too ("about 0.5 % per year"), so no unit of the dimension is required
    assert measure_kind(question) is None
