"""Issue 31, retrieval losses: the passage that answers reached the candidates but not the answer step.

1. Grade's middle band (CRAG's "ambiguous", Yan et al. 2024): a passage with AMBIGUOUS <= P(relevant) < 0.5 is
   recorded, not relevant (no route, no reward), and generate reads it after the relevant ones when fewer than
   `context_k` are relevant — with nothing relevant the answer step used to read nothing at all. The answerability
   check still decides, so an ambiguous passage that does not answer gives no answer.
2. Grade's lexical coverage reads the chunk's title, as BM25 and the reward judge do (`index_text`): a passage past
   a document's first lines keeps the words of the document's name a question asks by.
"""

import pytest

from relayrag.stages.generate import context_chunks
from relayrag.stages.grade import AMBIGUOUS, ambiguous_ids
from relayrag.stages.rerank import chunk_lexical
from relayrag.retrieval.tokenize import tokenize
from tests.conftest import write_docs
from tests.unit.stages.conftest import call, prepare


class _Snap:
    def __init__(self, n):
        self.chunks = [{"chunk_id": f"c{i}", "row": i, "text": f"text {i}"} for i in range(n)]


def _rec(p: list[float]) -> dict:
    cands = [{"chunk_id": f"c{i}", "row": i, "p_relevant": v} for i, v in enumerate(p)]
    return {"candidates": cands, "relevant": [c["chunk_id"] for c in cands if c["p_relevant"] >= 0.5],
            "ambiguous": ambiguous_ids(cands)}


def test_the_middle_band_is_recorded_in_rerank_order_and_fills_the_context_after_the_relevant():
    rec = _rec([0.2, 0.45, 0.9, AMBIGUOUS, 0.29, 0.49999, 0.7])
    assert rec["ambiguous"] == ["c1", "c3", "c5"]  # neither >= 0.5 nor below the band
    chunks, fill = context_chunks(rec, _Snap(7), 5)
    assert [c["chunk_id"] for c in chunks] == ["c2", "c6"] and [c["chunk_id"] for c in fill] == ["c1", "c3", "c5"]
    chunks, fill = context_chunks(rec, _Snap(7), 3)  # only what is left of context_k
    assert [c["chunk_id"] for c in chunks + fill] == ["c2", "c6", "c1"]


def test_enough_relevant_passages_leave_no_room_and_a_yes_no_judge_leaves_no_band():
    rec = _rec([0.9, 0.4, 0.8, 0.7])
    assert context_chunks(rec, _Snap(4), 3)[1] == []
    llm = _rec([1.0, 0.0, 0.0, 1.0])  # grade's LLM method: P is 1 or 0
    assert llm["ambiguous"] == [] and context_chunks(llm, _Snap(4), 5)[1] == []
    old = {"candidates": llm["candidates"], "relevant": ["c0"]}  # a run recorded before the band: no key
    assert [c["chunk_id"] for c in context_chunks(old, _Snap(4), 5)[0]] == ["c0"]


@pytest.mark.parametrize("question, title, text", [
    ("What extension should I call with a question about the purchase requisition procedure?",
     "Procedure PR-04: Purchase Requisition and Approval",
     "For questions about this document, contact the Policy Desk at extension 4410."),
    ("Where do I open a ticket if a pump fault won't go away?", "Service Manual - Circulation Pumps P7 and P9",
     "If a fault persists, open a ticket with Field Service Support in Porto."),
    ("Who do I ask about the remote work policy?", "Remote Work Policy",
     "Questions about this document go to the People team, hr@example.com."),
])
def test_grade_reads_the_words_of_the_document_title(question, title, text):
    q = tokenize(question)
    with_title = chunk_lexical(q, {"title": title, "context": "", "text": text})
    assert with_title > chunk_lexical(q, {"title": "", "context": "", "text": text})
    assert chunk_lexical(q, {"title": title, "context": "", "text": text}) == with_title  # deterministic, in [0, 1]
    assert 0 < with_title <= 1


DOCS = {
    "overview.md": "# About Larkspur Tooling\n\nLarkspur Tooling builds precision cutting tools for aerospace plants.\n\n"
                   "## Today\n\n- Headquarters: Sheffield\n- Managing director: Tobias Renwick\n- Employees: 640\n",
    "pumps.md": "# Service Guide - Coolant Pumps C3 and C5\n\nLow flow: clean the inlet filter. Noise: check the "
                "impeller. If a fault persists, raise a case with the Technical Support Centre in Leipzig.\n",
    "travel.md": "# Travel Rules\n\nHotel bookings must be made at least five days before the trip. Taxi receipts "
                 "are reimbursed with the expense claim.\n",
}


@pytest.mark.parametrize("question, answer", [
    ("Who is the managing director?", "Tobias Renwick"),
    ("Where do I raise a case if a pump fault persists?", "Technical Support Centre in Leipzig"),
    ("How many days before the trip must hotels be booked?", "five days"),
])
def test_an_answering_passage_in_the_band_reaches_the_answer_and_one_that_does_not_answer_gives_none(
        ctx, tmp_path, question, answer):
    """The grade stage's verdict is forced into the band (every candidate below 0.5): with nothing relevant the
    answer step still reads the band and answers from the passage that says it; with the band empty it says it
    found nothing; an unanswerable question over the same band is refused by the answerability check."""
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, write_docs(tmp_path / "docs", DOCS), "t")

    def graded(run_id: str, q: str, band: bool, arm: str | None = None) -> dict:
        prepare(ctx, "grade", question=q, run_id=run_id, arm=arm)
        rec = ctx.docstore.get_run(run_id)
        cands = [{**c, "p_relevant": 0.4 if band else 0.1} for c in rec["candidates"][:30]] + rec["candidates"][30:]
        ctx.docstore.update_run(run_id, {"candidates": cands, "relevant": [], "ambiguous": ambiguous_ids(cands)})
        call("generate", {"run_id": run_id}, ctx)
        return ctx.docstore.get_run(run_id)

    found = graded("band", question, True)
    assert found["found"] and answer in found["answer"]
    assert graded("none", question, False)["found"] is False
    assert graded("unanswerable", "What is the boiling point of mercury?", True)["found"] is False
    # a "not found" reached through the band still lists the closest passages as related reading, as one with
    # nothing read does (the dashboard and the CLI show them), and records why — also when no sentence of the band
    # scored at all (dense arm: every question gets candidates)
    for q in ("How many taxis does Larkspur Tooling own?", "What is the boiling point of mercury?"):
        refused = graded("related", q, True, arm="dense")
        assert refused["found"] is False and refused["answerability"], refused
        assert refused["related"] and all(r["doc"] in DOCS and r["quote"] for r in refused["related"]), refused
