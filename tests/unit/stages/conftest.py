"""Per-stage tests share this: a small indexed collection "t" on a real embedded context, three LLM setups
(`mode`: no LLM; the scripted LLM double answering every stage's schema; an LLM whose every call fails), and
`prepare`, which runs the stages before the one under test through the same entry-point contract."""

from __future__ import annotations

import pytest

from relayrag.backends.llm import LLMError
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute

RAG_ORDER = ["classify", "hyde", "retrieve", "rerank", "grade", "generate", "hallucination_check"]
MODES = ["no-llm", "llm", "llm-failure"]
QUESTION = "How many eggs does the queen lay per day?"


def scripted_reply(messages, schema):
    """A well-behaved LLM for every stage's JSON schema (and generate's free-text answer)."""
    props = (schema or {}).get("properties", {})
    user = messages[-1]["content"] if messages else ""
    if "route" in props:
        return {"route": "rag"}
    if "hypothetical_passage" in props:
        return {"hypothetical_passage": "The queen bee lays about 2,000 eggs daily.", "rewrites": ["queen bee eggs"]}
    if "relevance" in props:
        return {"relevance": 3 if "queen" in user else 0}
    if "relevant" in props:
        return {"relevant": "queen" in user.split("Passage:")[-1]}
    if "unsupported" in props:
        return {"unsupported": [], "answers_question": True}
    return "The queen lays up to 2,000 eggs per day [1]."


def failing_reply(messages, schema):
    raise LLMError("endpoint down (test double)")


def call(stage: str, body: dict, ctx) -> dict:
    status, out = execute(STAGES[stage], body, ctx)
    assert status == 200, out
    return out


def prepare(ctx, stage: str, question: str = QUESTION, run_id: str = "r", collection: str = "t",
            arm: str | None = None) -> None:
    """Run the RAG stages before `stage` for `run_id` (classify creates the record); `arm` forces retrieve's arm
    (default: the bandit samples one, so candidate lists differ between runs)."""
    for s in RAG_ORDER[:RAG_ORDER.index(stage)]:
        body = {"run_id": run_id, **({"question": question, "collection": collection} if s == "classify" else {})}
        if s == "retrieve" and arm:
            body["arm"] = arm
        call(s, body, ctx)


@pytest.fixture(params=MODES)
def mode_ctx(request, home, make_llm_ctx, small_corpus):
    """(mode, ctx with collection "t" ingested, the LLM double or None)."""
    from relayrag.context import default_context
    from relayrag.ingest.pipeline import ingest
    if request.param == "no-llm":
        ctx, llm = default_context(), None
    else:
        ctx, llm = make_llm_ctx(scripted_reply if request.param == "llm" else failing_reply)
    assert not ingest(ctx, small_corpus, "t").failed
    return request.param, ctx, llm
