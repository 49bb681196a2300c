"""generate's LLM methods: an answer with [n] markers from the extractive evidence (`llm_answer`), and for a
question whose pages were found by their image, a vision-capable LLM reading the page images (`vision_answer`)
or, without one, the best page's own text quoted (`page_quote_answer`)."""
from __future__ import annotations

import re

from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.evidence import sentence_spans
from relayrag.stages.extractive import citation
from relayrag.text import has_cjk

NOT_FOUND = "NOT_FOUND"

MARKER = re.compile(r"\s*\[(\d+)\]")


def split_answer(answer: str) -> list[dict]:
    """LLM answer → [{text, cites}] by sentence; markers [n] attach to the sentence they end, also when
    written after its full stop ("… per day. [1]")."""
    from relayrag.text import sentences
    out: list[dict] = []
    for sent in sentences(answer):
        lead = re.match(r"(?:\s*\[\d+\])+", sent)  # "… day. [1] Next …": [1] ends the previous sentence
        if lead and out:
            out[-1]["cites"] += [n for n in map(int, MARKER.findall(lead.group(0))) if n not in out[-1]["cites"]]
            sent = sent[lead.end():]
        cites = [int(m) for m in MARKER.findall(sent)]
        text = MARKER.sub("", sent).strip()
        if text:
            out.append({"text": text, "cites": list(dict.fromkeys(cites))})
        elif out:
            out[-1]["cites"] += [n for n in cites if n not in out[-1]["cites"]]
    return out


VISION = "llm (page images)"
"""generate's method when a vision-capable LLM answered a visual question from the page images."""
VISION_PAGES = 3  # page images sent to a vision-capable LLM


def page_images_for_llm(ctx, run_rec: dict, snap) -> list[dict]:
    """The top pages found by their image, for a vision LLM: [{n, doc, page, text, png, chunk}] (at most
    VISION_PAGES; n from 1; text = the page's chunks, at most 2,000 characters; chunk = its first chunk, or None)."""
    from relayrag.pagerefs import blob_key
    out: list[dict] = []
    for p in run_rec.get("page_candidates") or []:
        key = blob_key(ctx, p.get("image") or "")
        if key is None:
            continue
        try:
            png = ctx.blobstore.get_bytes(key)
        except FileNotFoundError:
            continue
        chunks = [c for c in snap.chunks if c["source"] == p["source"] and c["page"] == p["page"]]
        text = "\n".join(c["text"] for c in chunks)[:2000]
        out.append({"n": len(out) + 1, "doc": p["doc"], "page": p["page"], "text": text, "png": png,
                    "chunk": chunks[0] if chunks else None})
        if len(out) == VISION_PAGES:
            break
    return out


def vision_messages(question: str, pages: list[dict], strict: bool = False) -> list[dict]:
    """The prompt of a visual question for a vision-capable LLM: the page images in order n = 1.., each page's
    text quoted as data."""
    rule = (" Use only what the pages show or say; every sentence must end with the [n] of the page it comes "
            "from.") if strict else ""
    return [
        {"role": "system", "content": with_data_rule(
            "You answer a question about what document pages show. You get page images n = 1, 2, ... in order and "
            "each page's text. Answer in one to three sentences, each ending with the page it comes from as [n]. "
            "If the pages do not show the answer, reply exactly NOT_FOUND." + rule)},
        {"role": "user", "content": f"Question: {question}\n\nPage texts:\n" + "\n\n".join(
            quote_document(p["text"] or "(no text)", n=p["n"], doc=p["doc"], page=p["page"]) for p in pages),
         "images": [p["png"] for p in pages]}]


def vision_answer(ctx, run_rec: dict, snap, strict: bool = False) -> tuple[list[dict], list[dict]] | None:
    """(sentences, citations) from a vision-capable LLM that sees the page images, or None (NOT_FOUND, no page
    with an image, or no marker naming a page with text). A citation names its page and quotes the page's text
    opening; the answer describes the image. Raises LLMError."""
    pages = page_images_for_llm(ctx, run_rec, snap)
    if not pages:
        return None
    reply = ctx.llm.complete(vision_messages(run_rec["question"], pages, strict), max_tokens=300).strip()
    if not reply or NOT_FOUND in reply:
        return None
    by_n = {p["n"]: p for p in pages if p["chunk"] is not None}
    sentences: list[dict] = []
    citations: list[dict] = []
    num_of: dict[int, int] = {}
    for sent in split_answer(reply):
        cites = []
        for n in sent["cites"]:
            if n not in by_n:
                continue
            if n not in num_of:
                ch = by_n[n]["chunk"]
                num_of[n] = len(citations) + 1
                citations.append({**citation(ch, num_of[n], " ".join(ch["text"][:300].split())), "kind": "page_image"})
            cites.append(num_of[n])
        if cites:
            sentences.append({"text": sent["text"], "cites": cites, "kind": "page_image"})
    return (sentences, citations) if sentences else None


PAGE_QUOTE = "page-image (extractive)"
"""generate's method when a visual question is answered with the page found by its image, quoting its text."""


def page_quote_answer(run_rec: dict, snap) -> tuple[list[dict], list[dict]] | None:
    """The visual route without an answer in the pages' text (and no vision LLM): the best page found by its
    image that has text, quoted from its start (its first sentences, at most ~300 characters: usually the
    caption or heading) and cited. (sentences, citations), or None when no page found has text."""
    for p in run_rec.get("page_candidates") or []:
        rows = sorted(i for i, c in enumerate(snap.chunks) if c["source"] == p["source"] and c["page"] == p["page"])
        if not rows:
            continue
        ch = snap.chunks[rows[0]]
        spans = sentence_spans(ch["text"], max_sentences=4)
        end = next((e for s, e in spans if e >= 60), spans[-1][1] if spans else min(300, len(ch["text"])))
        quote = " ".join(ch["text"][:min(end, 300)].split())
        if not quote:
            continue
        return [{"text": quote, "cites": [1], "source": quote, "kind": "page_quote"}], [citation(ch, 1, quote)]
    return None


def found_by_image(run_rec: dict) -> bool:
    """Did page-image search (colpali_search, visual mode) pick this run's evidence?"""
    ps = run_rec.get("page_search") or {}
    return run_rec.get("route") == "visual" and ps.get("status") == "on" and ps.get("mode") == "visual" \
        and bool(run_rec.get("page_candidates")) and run_rec.get("arm") == "pages"


def by_image_note(run_rec: dict, answered: bool, cited: dict | None = None, read_image: bool = False) -> str:
    """The sentence that says the page was found by its image (the answer itself is from the page's text): the
    page of the first citation when it is one of the pages found, else the best page found."""
    pages = run_rec.get("page_candidates") or [{}]
    top = next((p for p in pages if cited and p.get("doc") == cited.get("doc") and p.get("page") == cited.get("page")),
               pages[0])
    where = f"{top.get('doc')} p. {top.get('page')}"
    if has_cjk(run_rec.get("question", "")):
        return f"（ページ画像で見つけたページ: {where}）" if answered else f"画像で最も近いページ: {where}。"
    if answered and read_image:
        return f"(Found by its page image: {where}; the answer describes that page's image.)"
    if answered:
        return f"(Found by its page image: {where}; the answer quotes that page's text.)"
    return f"The page that best matches the question by its image is {where} (see its page image)."



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
