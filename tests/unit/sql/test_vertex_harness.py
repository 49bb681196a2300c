"""`relayrag eval sql` through the VertexLLM class (RELAYRAG_LLM=vertex) with a test double of the
google-genai client: the same harness that scores the local model runs against Vertex Gemini when
configured. The double replaces only `genai.Client`; google-genai's own request types (Content, Part,
GenerateContentConfig) are real, and so are the guard, the Chinook warehouse and the context code.

google-genai is in the dev extra (it installs in seconds with no conflicts), so it is imported, not
skipped: a missing install fails the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from google import genai  # dev extra
from google.genai import types

from relayrag.sql.config import parse_config
from relayrag.sql.context import enhance_question, match_terms
from relayrag.sql.warehouse import load_warehouse
from relayrag.stages.sql import SQL_SCHEMA

REPO = Path(__file__).resolve().parents[3]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
BUNDLED = REPO / "examples" / "chinook" / "relayrag.sql.yaml"
FIXTURES = REPO / "tests" / "fixtures" / "text2sql"


class FakeResponse:
    def __init__(self, text: str):
        self.text = text


class FakeModels:
    def __init__(self, answer):
        self.answer = answer
        self.calls: list[dict] = []

    def generate_content(self, *, model, contents, config):
        self.calls.append({"model": model, "contents": contents, "config": config})
        return FakeResponse(self.answer(contents, config))


class FakeClient:
    """Stands in for google.genai.Client: records how VertexLLM built it and every generate_content call."""

    instances: list["FakeClient"] = []
    answer = None

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.models = FakeModels(type(self).answer)
        FakeClient.instances.append(self)


@pytest.fixture
def vertex(home, monkeypatch):
    from relayrag.context import set_default_context
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_LLM", "vertex")
    monkeypatch.setenv("RELAYRAG_GCP_PROJECT", "demo-project")
    monkeypatch.setenv("RELAYRAG_GCP_LOCATION", "europe-west4")
    monkeypatch.setenv("RELAYRAG_LLM_MODEL", "gemini-2.0-flash")
    monkeypatch.setattr(genai, "Client", FakeClient)
    FakeClient.instances = []
    load_settings.cache_clear()
    set_default_context(None)
    load_warehouse(home, "chinook", [CHINOOK], config=BUNDLED)
    yield FakeClient
    load_settings.cache_clear()
    set_default_context(None)


def test_eval_sql_runs_through_vertex_llm(vertex, tmp_path):
    from relayrag.cli import app
    dev = [json.loads(line) for line in (FIXTURES / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    picked = [r for r in dev if r["id"] in ("dev-01", "dev-04", "dev-10", "dev-13")]
    data = tmp_path / "four.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in picked), encoding="utf-8")
    cfg = parse_config(BUNDLED)
    # what Gemini is asked is the enhanced question: answer each with its gold SQL, but dev-13 wrongly
    gold = {enhance_question(r["question"], match_terms(r["question"], cfg)): r["gold_sql"] for r in picked}
    wrong = next(k for k, r in zip(gold, picked) if r["id"] == "dev-13")
    gold[wrong] = gold[wrong].replace("DESC", "ASC")

    def answer(contents, config):
        user = contents[-1].parts[0].text.split("\n\n")[0]  # the question; the plan's shape hints follow
        return json.dumps({"sql": gold.get(user, "DROP TABLE Album"), "tables": [], "assumptions": []})
    vertex.answer = staticmethod(answer)

    r = CliRunner().invoke(app, ["eval", "sql", str(data), "--collection", "chinook", "--adversarial",
                                 str(FIXTURES / "adversarial_dev.jsonl"), "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["llm"] == "vertex:gemini-2.0-flash" and rep["n"] == 4
    assert rep["accuracy"] == 0.75 and [i["correct"] for i in rep["items"][:4]] == [True, True, True, False]
    assert rep["by_lang"]["ja"] == {"n": 1, "accuracy": 1.0, "lenient_accuracy": 1.0}
    assert rep["guard"] == {"refused": 7, "stopped": 0, "errors": 0, "ran": 0, "total": 7, "db_unchanged": True}

    (client,) = vertex.instances  # one client for the whole run, built as Vertex AI
    assert client.kwargs == {"vertexai": True, "project": "demo-project", "location": "europe-west4"}
    calls = client.models.calls
    # vertex gets 5 candidates; the scripted model always agrees with itself, so each question stops once 3
    # agree (2 more could not overtake them); each natural-language attack stops at its first refusal
    assert rep["method"]["candidates"] == 5
    assert len(calls) == 4 * 3 + 2
    temps = [c["config"].temperature for c in calls]
    assert temps[:3] in ([0.0, 0.0, 0.5], [0.0, 0.5, 0.7])  # greedy first; sampled variants after it
    for c in calls:
        cfg_ = c["config"]
        assert isinstance(cfg_, types.GenerateContentConfig) and c["model"] == "gemini-2.0-flash"
        assert cfg_.response_mime_type == "application/json"
        assert cfg_.response_schema == SQL_SCHEMA
        # the schema JSON (of the tables linked to the question) went in as the system instruction
        assert '{"dialect":"bigquery","tables":[{"name":"' in cfg_.system_instruction
        assert [x.role for x in c["contents"]] == ["user"]
    ja = next(c for c in calls if "ドイツ" in c["contents"][0].parts[0].text)
    assert "顧客 (= people who buy" in ja["contents"][0].parts[0].text


def test_vertex_errors_become_item_errors_not_a_crash(vertex, tmp_path):
    from relayrag.cli import app
    dev = [json.loads(line) for line in (FIXTURES / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(dev[0]) + "\n", encoding="utf-8")

    def answer(contents, config):
        raise RuntimeError("429 RESOURCE_EXHAUSTED")
    vertex.answer = staticmethod(answer)
    r = CliRunner().invoke(app, ["eval", "sql", str(data), "--collection", "chinook", "--json"])
    assert r.exit_code == 0, r.output
    (item,) = json.loads(r.stdout)["items"]
    assert not item["correct"] and "Vertex AI call failed: 429 RESOURCE_EXHAUSTED" in item["error"]
