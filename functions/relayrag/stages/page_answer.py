"""The answers of a visual question whose pages page-image search found (colpali_search, visual mode): a
vision-capable LLM reading the page images (`vision_answer`), or the best page's own text quoted
(`page_quote_answer`), and the sentence that says the page was found by its image (`by_image_note`). Split out of
relayrag.stages.generate, which calls them."""

from __future__ import annotations

from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.answer_parts import NOT_FOUND, citation, split_answer
from relayrag.stages.evidence import sentence_spans
from relayrag.text import has_cjk

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


def page_search_note(run_rec: dict) -> str:
    """The sentence (with a leading space) a visual question's answer ends with when page-image search did not
    run and the answer comes from text: that it is off and how to turn it on (no model configured here), or that
    the collection needs ingesting again (no page vectors from this model); "" otherwise (it ran, the question is
    not visual, or the collection has no page images). In the question's language (English or Japanese). The
    same words whether or not the `colpali` extra is installed: the run record's page_search says which piece is
    missing."""
    ps = run_rec.get("page_search") or {}
    if run_rec.get("route") != "visual" or ps.get("status") != "off":
        return ""
    cause = ps.get("cause")
    ja = has_cjk(run_rec.get("question", ""))
    if cause == "no_model":
        if ja:
            return (" （ページ画像検索はオフのため、この回答は文書のテキストから作成しました。ページを画像で検索するには "
                    "relayrag[colpali] をインストールし、RELAYRAG_COLPALI_MODEL に ColPali/ColQwen2 のモデル ID "
                    "またはローカルフォルダを設定して、もう一度取り込んでください。）")
        return (" (Page-image search is off, so this answer comes from the documents' text. To search pages by "
                "their images, install relayrag[colpali], set RELAYRAG_COLPALI_MODEL to a ColPali/ColQwen2 model "
                "id or local folder, and ingest again.)")
    if cause in ("no_vectors", "other_model"):
        if ja:
            return (" （このコレクションには設定中のモデルによるページベクトルがないため、この回答は文書のテキストから"
                    "作成しました。ページを画像で検索するには、もう一度取り込んでください。）")
        return (" (This collection has no page vectors from the configured page-image model, so this answer comes "
                "from the documents' text; ingest it again to search its pages by their images.)")
    if cause == "unavailable":
        if ja:
            return " （ページ画像検索を実行できなかったため、この回答は文書のテキストから作成しました。）"
        return " (Page-image search could not run here, so this answer comes from the documents' text.)"
    return ""
