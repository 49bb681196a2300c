"""Each stage through its HTTP entry point contract (execute), no-LLM and LLM methods, and bad requests."""

import json

import pytest

from relayrag.ingest.pipeline import ingest
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute


def call(stage, body, ctx):
    status, out = execute(STAGES[stage], body, ctx)
    assert status == 200, out
    return out


@pytest.fixture
def indexed(ctx, small_corpus):
    s = ingest(ctx, small_corpus, "t")
    assert not s.failed
    return ctx


def run_rag(ctx, question, run_id="r1", arm=None):
    call("classify", {"run_id": run_id, "question": question, "collection": "t"}, ctx)
    call("hyde", {"run_id": run_id}, ctx)
    call("retrieve", {"run_id": run_id, "arm": arm}, ctx)
    call("rerank", {"run_id": run_id}, ctx)
    return call("grade", {"run_id": run_id}, ctx)


def test_classify_routes(indexed):
    assert call("classify", {"run_id": "a", "question": "hello!", "collection": "t"}, indexed)["route"] == "chitchat"
    assert call("classify", {"run_id": "b", "question": "ありがとう", "collection": "t"}, indexed)["route"] == "chitchat"
    out = call("classify", {"run_id": "c", "question": "How many eggs does the queen bee lay?", "collection": "t"}, indexed)
    assert out["route"] == "rag" and out["method"] == "few-shot-embedding"


@pytest.mark.parametrize("arm", ["dense", "bm25", "hybrid"])
def test_retrieve_each_arm_finds_the_right_chunk(indexed, arm):
    call("classify", {"run_id": "r", "question": "What is the standard rail gauge in millimetres?",
                      "collection": "t"}, indexed)
    out = call("retrieve", {"run_id": "r", "arm": arm}, indexed)
    assert out["arm"] == arm and out["method"] == "forced"
    run = indexed.docstore.get_run("r")
    snap = indexed.snapshot("t")
    assert snap.chunks[run["candidates"][0]["row"]]["doc"] == "rail.html"


def test_bandit_chooses_and_grade_rewards(indexed):
    out = run_rag(indexed, "How many worker bees can a colony contain?")
    assert out["route"] == "pass" and out["n_relevant"] >= 1 and out["reward"] > 0
    run = indexed.docstore.get_run("r1")
    arms = indexed.docstore.get_arms("t")
    # every offered arm's own list was rewarded once, in the query's context: 3 × (prior 2 + one reward)
    assert run["bandit_context"] == "latin" and set(run["arm_lists"]) == {"dense", "bm25", "hybrid"}
    assert set(arms) == {f"latin/{a}{s}" for a in ("dense", "bm25", "hybrid") for s in ("", "/dcg")}
    assert all(a + b == pytest.approx(3) for a, b in arms.values())  # prior (1, 1) + one reward each
    assert max(arms[f"latin/{a}"][0] for a in ("dense", "bm25", "hybrid")) == 2.0  # some list won the query
    # grade is idempotent per (run, attempt): a retried call rewards nothing twice
    call("grade", {"run_id": "r1"}, indexed)
    assert indexed.docstore.get_arms("t") == arms


def test_japanese_question_does_not_fuse_the_english_dense_arm(indexed):
    call("classify", {"run_id": "j", "question": "富士山の標高は何メートルですか？", "collection": "t"}, indexed)
    out = call("retrieve", {"run_id": "j"}, indexed)
    run = indexed.docstore.get_run("j")
    assert out["context"] == "ja" and run["dense_readable"] is False
    assert out["arm"] == "bm25" and set(run["arm_lists"]) == {"bm25"}  # dense and hybrid are not offered
    forced = call("retrieve", {"run_id": "j", "arm": "hybrid"}, indexed)  # forced hybrid = the BM25 list
    run = indexed.docstore.get_run("j")
    assert forced["arm"] == "hybrid" and run["arm_lists"]["hybrid"] == run["arm_lists"]["bm25"]


def test_generate_and_check_cite_the_page(indexed):
    run_rag(indexed, "How many eggs does the queen lay per day?")
    gen = call("generate", {"run_id": "r1"}, indexed)
    assert gen["method"] == "extractive" and gen["n_citations"] >= 1
    chk = call("hallucination_check", {"run_id": "r1"}, indexed)
    assert chk["route"] == "grounded" and chk["grounded"]
    run = indexed.docstore.get_run("r1")
    assert "2,000 eggs" in run["answer"]
    c = run["citations"][0]
    assert c["doc"] == "bees.txt" and c["page"] == 1 and c["quote"] in run["answer"]


def test_japanese_question_retrieves_japanese_chunk(indexed):
    run_rag(indexed, "富士山の標高は何メートルですか？")
    call("generate", {"run_id": "r1"}, indexed)
    run = indexed.docstore.get_run("r1")
    assert run["citations"][0]["doc"] == "tokyo.txt"
    assert "3776" in run["answer"]


def test_unanswerable_retries_then_says_not_found(indexed):
    out = run_rag(indexed, "What is the boiling point of mercury in kelvin?")
    assert out["route"] == "retry" and out["retry_count"] == 1
    call("hyde", {"run_id": "r1"}, indexed)
    assert any(q["kind"] == "keywords" for q in indexed.docstore.get_run("r1")["queries"])
    call("retrieve", {"run_id": "r1"}, indexed)
    call("rerank", {"run_id": "r1"}, indexed)
    assert call("grade", {"run_id": "r1"}, indexed)["route"] == "pass"
    gen = call("generate", {"run_id": "r1"}, indexed)
    assert gen["found"] is False
    check = call("hallucination_check", {"run_id": "r1"}, indexed)
    assert check["route"] == "not_found" and check["grounded"] is False  # a "not found" is not a grounded answer
    assert indexed.docstore.get_run("r1")["grounded"] is False


def test_unsupported_answer_regenerates_then_refuses(indexed):
    run_rag(indexed, "How many eggs does the queen lay per day?")
    call("generate", {"run_id": "r1"}, indexed)
    # tamper with the answer as a hallucinating generator would
    indexed.docstore.update_run("r1", {"answer_sentences": [{"text": "The queen lays 9 million eggs on Mars.", "cites": [1]}]})
    first = call("hallucination_check", {"run_id": "r1"}, indexed)
    assert first["route"] == "regenerate" and first["regen_count"] == 1
    indexed.docstore.update_run("r1", {"answer_sentences": [{"text": "Bees live on the Moon.", "cites": [1]}]})
    second = call("hallucination_check", {"run_id": "r1"}, indexed)
    assert second["route"] == "refuse"
    run = indexed.docstore.get_run("r1")
    # a number was asked for and "Bees live on the Moon." holds none: it does not answer, so "not found"
    assert run["refused"] and "could not find an answer" in run["answer"] and not run["answers_question"]


def test_llm_methods_used_when_configured(make_llm_ctx, small_corpus):
    def reply(messages, schema):
        sys_msg = messages[0]["content"]
        if schema and "route" in schema["properties"]:
            return {"route": "rag"}
        if schema and "hypothetical_passage" in schema["properties"]:
            return {"hypothetical_passage": "The queen bee lays about 2,000 eggs daily.", "rewrites": ["queen bee egg count"]}
        if schema and "relevance" in schema["properties"]:
            return {"relevance": 3 if "queen" in messages[1]["content"] else 0}
        if schema and "relevant" in schema["properties"]:
            return {"relevant": "queen" in messages[1]["content"].split("Passage:")[1]}
        if schema and "unsupported" in schema["properties"]:
            return {"unsupported": [], "answers_question": True}
        assert "numbered passages" in sys_msg
        return "The queen lays up to 2,000 eggs per day [1]."

    ctx, llm = make_llm_ctx(reply)
    ingest(ctx, small_corpus, "t")
    methods = {}
    for stage, body in [("classify", {"question": "How many eggs does the queen lay?", "collection": "t"}),
                        ("hyde", {}), ("retrieve", {}), ("rerank", {}), ("grade", {}), ("generate", {}),
                        ("hallucination_check", {})]:
        out = call(stage, {"run_id": "L", **body}, ctx)
        methods[stage] = out["method"]
    assert methods == {"classify": "llm", "hyde": "llm-hyde", "retrieve": "thompson", "rerank": "llm-pointwise",
                       "grade": "llm", "generate": "llm", "hallucination_check": "llm"}
    run = ctx.docstore.get_run("L")
    assert run["citations"][0]["doc"] == "bees.txt" and run["grounded"]
    assert any(q["kind"] == "hyde" for q in run["queries"])


def test_llm_failure_falls_back_and_says_so(make_llm_ctx, small_corpus):
    from relayrag.backends.llm import LLMError

    def broken(messages, schema):
        raise LLMError("endpoint down")

    ctx, _ = make_llm_ctx(broken)
    ingest(ctx, small_corpus, "t")
    out = call("classify", {"run_id": "F", "question": "How many eggs does the queen lay?", "collection": "t"}, ctx)
    assert out["method"] == "few-shot-embedding (llm failed)" and out["route"] == "rag"


@pytest.mark.parametrize("stage,body,status,needle", [
    ("classify", {"run_id": "x", "collection": "t"}, 400, "question"),
    ("classify", {"run_id": "x", "question": "q", "collection": "../etc"}, 400, "collection"),
    ("retrieve", {"run_id": "x", "arm": "sparse"}, 400, "valid: dense, bm25, hybrid"),
    ("hyde", {"run_id": "missing"}, 404, "unknown run_id"),
    ("grade", [1, 2], 400, "JSON object"),
])
def test_bad_requests_get_clear_errors(ctx, stage, body, status, needle):
    code, out = execute(STAGES[stage], body, ctx)
    assert code == status and needle in json.dumps(out)
    assert "Traceback" not in json.dumps(out)


def test_unknown_collection_is_404_with_hint(ctx):
    code, out = execute(STAGES["classify"], {"run_id": "u", "question": "What?", "collection": "nope"}, ctx)
    assert code == 404 and "relayrag ingest" in out["error"]
