"""generate's LLM method: an answer with [n] markers from the extractive evidence (`llm_answer`). The page-image
answers (a vision-capable LLM reading page images, or the best page's own text quoted) live in
relayrag.stages.page_answer; the pieces both share in relayrag.stages.answer_parts."""
from __future__ import annotations

from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.answer_parts import NOT_FOUND, citation, split_answer


def llm_answer(llm, question: str, chunks: list[dict], evidence: list[dict], strict: bool = False
               ) -> tuple[list[dict], list[dict]]:
    """The LLM method: the extractive evidence (best sentences and table rows with their column names and
    local context) as numbered passages in, an answer with [n] markers out. Returns ([], []) when the LLM
    says the passages do not answer the question (NOT_FOUND) or cites no passage. Raises LLMError."""
    passages = "\n\n".join(
        quote_document(e["text"], n=n, doc=chunks[e["i"]]["doc"], page=chunks[e["i"]]["page"],
                       context=" / ".join(e["context"].splitlines()[:3]))
        for n, e in enumerate(evidence, start=1))
    rule = " Copy the passages' words where you can; add nothing they do not state." if strict else ""
    answer = llm.complete([
        {"role": "system", "content": with_data_rule(
            "Answer the question using only the numbered passages (their n attribute). A passage answers only if "
            "it is about the exact thing asked (same name, same year, same item). End every sentence with the "
            "number of the passage that supports it, like [1]. If no passage answers the question, reply exactly "
            f"{NOT_FOUND}. Answer briefly, in the question's language." + rule)},
        {"role": "user", "content": f"Passages:\n{passages}\n\nQuestion: {question}"}],
        temperature=0.0, max_tokens=400)
    if NOT_FOUND in answer:
        return [], []
    sentences = [s for s in split_answer(answer) if s["cites"]]
    cited = sorted({n for s in sentences for n in s["cites"] if 1 <= n <= len(evidence)})
    if not cited:
        return [], []
    renumber: dict[int, int] = {}
    citations: list[dict] = []
    for n in cited:  # one citation per chunk, numbered in order of first use
        ch = chunks[evidence[n - 1]["i"]]
        hit = next((c for c in citations if c["chunk_id"] == ch["chunk_id"]), None)
        if hit is None:
            hit = citation(ch, len(citations) + 1, evidence[n - 1]["text"])
            citations.append(hit)
        elif evidence[n - 1]["text"] not in hit["quote"]:
            hit["quote"] += " … " + evidence[n - 1]["text"]
        renumber[n] = hit["n"]
    out = []
    for s in sentences:
        cites = list(dict.fromkeys(renumber[n] for n in s["cites"] if n in renumber))
        if cites:
            out.append({"text": s["text"], "cites": cites})
    return out, citations
