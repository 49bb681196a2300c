"""Pieces every answer path shares (generate's text and LLM methods, the page-image answers of
relayrag.stages.page_answer): the LLM's NOT_FOUND reply, the [n] citation marker, a citation record, and an LLM
answer split into sentences with the markers they end with."""

from __future__ import annotations

import re

NOT_FOUND = "NOT_FOUND"

MARKER = re.compile(r"\s*\[(\d+)\]")


def citation(chunk: dict, n: int, quote: str) -> dict:
    return {"n": n, "doc": chunk["doc"], "page": chunk["page"], "chunk_id": chunk["chunk_id"],
            "source": chunk["source"], "quote": quote}


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
