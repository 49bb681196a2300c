"""`relayrag eval answers`: golden-set loading, the metrics by hand, the ja-qa converter and its
unanswerable twin, and one run through the whole workflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relayrag.errors import RelayragError
from relayrag.evaluation.answers import (
    aggregate, beir_golden, contains_expected, evaluate_answers, load_golden, twin_corpus)
from relayrag.ingest.pipeline import ingest

REPO = Path(__file__).resolve().parents[2]


def test_expected_strings_match_modulo_case_width_and_thousands_separators():
    assert contains_expected("Totals — Totals: 2236457", ["2,236,457"])
    assert contains_expected("The total is ２,２３６,４５７.", ["2236457"])
    assert contains_expected("STAFF ASSISTANT", ["staff assistant"])
    assert not contains_expected("2,236,458", ["2,236,457"])
    assert not contains_expected("anything", [""])


def _write(path: Path, lines: list) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_load_golden_rejects_bad_lines_by_number(tmp_path):
    ok = {"id": "a", "question": "q?", "answers": ["x"]}
    with pytest.raises(RelayragError, match=r":2: not JSON"):
        load_golden(_write(tmp_path / "g.jsonl", [ok, "{nope"]))
    with pytest.raises(RelayragError, match=r":1: an answerable question needs"):
        load_golden(_write(tmp_path / "g.jsonl", [{"id": "a", "question": "q?"}]))
    with pytest.raises(RelayragError, match="duplicate id 'a'"):
        load_golden(_write(tmp_path / "g.jsonl", [ok, ok]))
    with pytest.raises(RelayragError, match="no such golden-set file"):
        load_golden(tmp_path / "missing.jsonl")
    items = load_golden(_write(tmp_path / "g.jsonl", [ok, {"question": "何？", "unanswerable": True}]))
    assert items[1]["category"] == "unanswerable" and items[1]["lang"] == "ja" and items[1]["answers"] == []


def test_the_repo_golden_set_is_valid_and_large_enough():
    items = load_golden(REPO / "benchmarks" / "golden" / "examples-pdfs.jsonl")
    una = [i for i in items if i["unanswerable"]]
    assert len(items) - len(una) >= 60 and len(una) >= 15
    assert {"table", "number", "ocr", "figure", "confuser", "multi", "fact"} <= {i["category"] for i in items}
    assert all(i["doc"] and i["page"] for i in items if not i["unanswerable"])


def test_aggregate_by_hand():
    def row(una, refused, correct=False, grounded=True, cit=None, faith=None, expected=False):
        return {"unanswerable": una, "refused": refused, "correct": correct, "grounded": grounded,
                "citation_ok": cit, "faithfulness": faith, "faithfulness_llm": None, "answer_chars": 10,
                "latency_ms": 100.0, "contains_expected": expected}
    rows = [row(False, False, True, cit=True, faith=1.0), row(False, False, False, cit=False, faith=0.5),
            row(False, True), row(True, True), row(True, False, grounded=True, faith=1.0),
            row(True, False, grounded=False),
            # an unanswerable-twin answer that states a gold string (another paragraph says it): not counted
            row(True, False, grounded=True, expected=True)]
    m = aggregate(rows)
    assert m["answer_accuracy"] == pytest.approx(1 / 3, abs=1e-4) and m["citation_precision"] == 0.5
    assert m["refusal_precision"] == 0.5 and m["refusal_recall"] == pytest.approx(1 / 4, abs=1e-4)
    assert m["refusal_rate_answerable"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["grounded_unanswerable"] == 1 and m["faithfulness"] == pytest.approx(2.5 / 3, abs=1e-4)
    assert m["answered_unanswerable"] == 3
    assert m["latency_ms_p50"] == 100.0


@pytest.fixture
def tiny_qa(tmp_path):
    d = tmp_path / "qa"
    (d / "qrels").mkdir(parents=True)
    docs = {"p1": ("Bees", "Honey bees communicate with a waggle dance. A colony holds up to 60,000 workers."),
            "p2": ("Bees", "The queen lays up to 2,000 eggs per day in summer."),
            "p3": ("Rail", "The standard rail gauge is 1,435 millimetres.")}
    _write(d / "corpus.jsonl", [{"_id": k, "title": t, "text": x} for k, (t, x) in docs.items()])
    _write(d / "queries.jsonl", [{"_id": "q1", "text": "How many eggs does the queen lay per day?"},
                                 {"_id": "q2", "text": "What is the standard rail gauge?"}])
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp2\t1\nq2\tp3\t1\n")
    _write(d / "answers.jsonl", [{"query-id": "q1", "answers": ["2,000"]}, {"query-id": "q2", "answers": ["1,435"]}])
    return d


def test_beir_golden_and_its_unanswerable_twin(tiny_qa, tmp_path):
    items = beir_golden(tiny_qa)
    assert [(i["id"], i["doc"], i["answers"]) for i in items] == [("q1", "p2", ["2,000"]), ("q2", "p3", ["1,435"])]
    twin = beir_golden(tiny_qa, unanswerable=True)
    # the twin keeps the gold strings (another paragraph may state them; such an answer is not a hallucination)
    assert [(i["unanswerable"], i["answers"]) for i in twin] == [(True, ["2,000"]), (True, ["1,435"])]
    out = tmp_path / "twin" / "corpus.jsonl"
    assert twin_corpus(tiny_qa, out) == 1
    assert [json.loads(x)["_id"] for x in out.read_text().splitlines()] == ["p1"]


def test_evaluate_answers_through_the_workflow(ctx, small_corpus, tmp_path):
    assert not ingest(ctx, small_corpus, "t").failed
    golden = _write(tmp_path / "g.jsonl", [
        {"id": "eggs", "question": "How many eggs does the queen lay per day?", "answers": ["2,000"],
         "doc": "bees.txt", "page": 1, "category": "number"},
        {"id": "fuji", "question": "富士山の標高は何メートルですか？", "answers": ["3776"], "doc": "tokyo.txt", "page": 1},
        {"id": "mercury", "question": "What is the boiling point of mercury in kelvin?", "unanswerable": True},
        {"id": "ceo", "question": "Who is the chief executive of the rail gauge committee?", "unanswerable": True}])
    rep = evaluate_answers(ctx, golden, "t")
    assert set(rep["methods"]) == {"no-llm"}  # no LLM configured: one run
    m = rep["methods"]["no-llm"]
    o = m["overall"]
    assert o["n"] == 4 and o["answer_accuracy"] == 1.0 and o["citation_precision"] == 1.0
    assert o["refusal_recall"] == 1.0 and o["refusal_precision"] == 1.0 and o["grounded_unanswerable"] == 0
    assert o["faithfulness"] == 1.0 and o["latency_ms_p50"] > 0
    assert set(m["by_category"]) == {"number", "fact", "unanswerable", "ja"}
    assert m["by_category"]["ja"]["answer_accuracy"] == 1.0


def test_cli_eval_answers_json(tmp_path, small_corpus):
    env = {**os.environ, "RELAYRAG_HOME": str(tmp_path / "h")}
    rr = Path(sys.executable).parent / "relayrag"
    subprocess.run([str(rr), "ingest", str(small_corpus), "-c", "t", "--json"], env=env, check=True,
                   capture_output=True, timeout=600)
    golden = _write(tmp_path / "g.jsonl", [
        {"id": "eggs", "question": "How many eggs does the queen lay per day?", "answers": ["2,000"]},
        {"id": "x", "question": "What is the boiling point of mercury in kelvin?", "unanswerable": True}])
    p = subprocess.run([str(rr), "eval", "answers", str(golden), "-c", "t", "--json", "--rows"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["methods"]["no-llm"]["overall"]["answer_accuracy"] == 1.0
    assert [r["id"] for r in rep["methods"]["no-llm"]["rows"]] == ["eggs", "x"]
    bad = subprocess.run([str(rr), "eval", "answers", str(golden), "-c", "t", "--twin", "--json"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "BEIR folder" in bad.stdout + bad.stderr


def test_llm_and_no_llm_methods_compared_over_an_openai_compatible_double(home, small_corpus, tmp_path):
    """The LLM methods through the OpenAI wire protocol (httpx MockTransport): the generation prompt carries
    the extractive evidence as numbered passages; the double answers from the passage that shares most
    words with the question, or NOT_FOUND; the eval reports both methods and the LLM judge's faithfulness."""
    import re

    import httpx

    from relayrag.backends.llm import OpenAICompatibleLLM
    from relayrag.context import StageContext, build_blobstore, build_docstore, set_default_context
    from relayrag.settings import load_settings

    prompts = []

    def handler(request: httpx.Request):
        body = json.loads(request.content)
        msgs = body["messages"]
        props = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema", {}).get("properties", {})
        user = msgs[-1]["content"]
        if "route" in props:
            out = {"route": "rag"}
        elif "hypothetical_passage" in props:
            out = {"hypothetical_passage": user, "rewrites": []}
        elif "relevance" in props:
            out = {"relevance": 2}
        elif "relevant" in props:
            out = {"relevant": True}
        elif "answers_question" in props:
            out = {"unsupported": [], "answers_question": "mercury" not in user}
        elif "supported" in props:
            out = {"supported": True}
        elif props:
            out = {k: "" for k in props}
        else:
            prompts.append(user)
            question = user.rsplit("Question:", 1)[1]
            words = set(re.findall(r"\w+", question.lower()))
            passages = re.findall(r'^<document n="(\d+)"[^>]*>\n(.*)', user, re.M)
            best = max(passages, key=lambda p: len(words & set(re.findall(r"\w+", p[1].lower()))), default=None)
            out = "NOT_FOUND" if "mercury" in question or best is None else f"{best[1]} [{best[0]}]"
        content = out if isinstance(out, str) else json.dumps(out)
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    s = load_settings()
    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "double", transport=httpx.MockTransport(handler))
    ctx = StageContext(s, build_blobstore(s), build_docstore(s), llm=llm)
    set_default_context(ctx)
    assert not ingest(ctx, small_corpus, "t").failed
    golden = _write(tmp_path / "g.jsonl", [
        {"id": "eggs", "question": "How many eggs does the queen lay per day?", "answers": ["2,000"],
         "doc": "bees.txt", "page": 1},
        {"id": "mercury", "question": "What is the boiling point of mercury in kelvin?", "unanswerable": True}])
    rep = evaluate_answers(ctx, golden, "t")
    assert set(rep["methods"]) == {"no-llm", "llm"}
    for name in ("no-llm", "llm"):
        o = rep["methods"][name]["overall"]
        assert o["answer_accuracy"] == 1.0 and o["refusal_recall"] == 1.0 and o["grounded_unanswerable"] == 0, (
            name, prompts[:1], [(r["answer"], r["refused"], r["grounded"]) for r in rep["methods"][name]["rows"]])
    assert rep["methods"]["llm"]["overall"]["faithfulness_llm"] == 1.0
    assert rep["methods"]["no-llm"]["overall"]["faithfulness_llm"] is None
    assert prompts and '<document n="1" doc="bees.txt" page="1" context=' in prompts[0]


def test_cli_eval_answers_prints_a_table_and_each_miss_with_its_answer(tmp_path, small_corpus):
    """Issue 28, item 7: `eval answers` printed key=value lines with mixed precision; now one aligned table per
    method (rates in % with one decimal, "—" where nothing was measured), a ja row for Japanese questions, and
    a wrong answer's text in the live progress (stderr)."""
    env = {**os.environ, "RELAYRAG_HOME": str(tmp_path / "h")}
    rr = Path(sys.executable).parent / "relayrag"
    subprocess.run([str(rr), "ingest", str(small_corpus), "-c", "t", "--json"], env=env, check=True,
                   capture_output=True, timeout=600)
    golden = _write(tmp_path / "g.jsonl", [
        {"id": "eggs", "question": "How many eggs does the queen lay per day?", "answers": ["2,000"],
         "category": "number"},
        {"id": "eggs-wrong", "question": "How many eggs does the queen lay per day?", "answers": ["7 million"],
         "category": "number"},
        {"id": "x", "question": "What is the boiling point of mercury in kelvin?", "unanswerable": True}])
    p = subprocess.run([str(rr), "eval", "answers", str(golden), "-c", "t"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "wrong eggs-wrong: How many eggs does the queen lay per day? → " in p.stderr
    assert "2,000" in p.stderr.split("wrong eggs-wrong", 1)[1] and "(expected 7 million)" in p.stderr
    lines = p.stdout.splitlines()
    head = next(ln for ln in lines if ln.strip().startswith("category"))
    assert "accuracy" in head and "refusal R" in head and "p50 ms" in head
    overall = next(ln for ln in lines if ln.strip().startswith("overall")).split()
    number = next(ln for ln in lines if ln.strip().startswith("number")).split()
    assert overall[1] == "3" and overall[2] == "50.0" and number[2] == "50.0"  # accuracy of the answerable
    assert "=" not in "\n".join(lines[:4]) and "no Japanese questions in this set" in p.stdout


def test_the_answers_table_has_a_ja_row_and_dashes_for_unmeasured_metrics():
    from relayrag.cli.evaluate import answers_table
    g = {"n": 2, "answer_accuracy": 0.5, "citation_precision": None, "refusal_precision": None,
         "refusal_recall": None, "refusal_rate_answerable": 0.0, "faithfulness": 1.0, "faithfulness_llm": None,
         "grounded_unanswerable": 0, "answer_chars": 41.5, "latency_ms_p50": 12.34}
    rows = answers_table({"overall": g, "by_category": {"fact": g, "ja": g}})
    assert [r.split()[0] for r in rows] == ["category", "overall", "fact", "ja"]
    assert rows[1].split()[1:] == ["2", "50.0", "—", "—", "—", "0.0", "100.0", "0", "42", "12"]
    assert "judge" not in rows[0]  # no LLM judge ran: no column for it
