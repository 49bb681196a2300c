"""BM25 tokenizer for mixed English/Japanese text.

Latin-script words: lower-cased, English stopwords removed (bm25s' list), Snowball-stemmed (PyStemmer).
CJK runs: overlapping character bigrams (plus the lone character of a 1-char run). Character bigrams
scored 0.944 nDCG@10 on ../shared/bench/ja-qa versus 0.225 for bm25s' default tokenizer (DESIGN §7), with
no dictionary to ship.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import Stemmer

from relayrag.text import normalize

_CJK_CLASS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af"
_RUN = re.compile(
    rf"(?P<cjk>[{_CJK_CLASS}]+)"
    rf"|(?P<word>[^\W_{_CJK_CLASS}]+(?:['’][^\W_{_CJK_CLASS}]+)?)"
)


@functools.cache
def _stopwords() -> frozenset[str]:
    """bm25s' English stopwords, imported on first use: importing bm25s pulls in scipy (and numba where it is
    installed), which a stage should not pay at import time (cold start, benchmarks/bench_cold_start.py)."""
    import importlib.util
    import sys
    mod = sys.modules.get("bm25s.stopwords")
    if mod is None:
        # bm25s/stopwords.py is a plain list of tuples; executing it alone skips bm25s/__init__ (scipy: ~0.7 s of
        # a cold `relayrag ask`); a layout without that file falls back to the package import
        spec = importlib.util.find_spec("bm25s")
        path = next((Path(p) / "stopwords.py" for p in (spec.submodule_search_locations or [])
                     if (Path(p) / "stopwords.py").is_file()), None) if spec else None
        if path is None:
            from bm25s.stopwords import STOPWORDS_EN
            return frozenset(STOPWORDS_EN)
        # loaded as a module of its own name through the file's loader, so its cached byte code (.pyc) is used:
        # compiling the 48 KB file cost ~20 ms in every process
        spec = importlib.util.spec_from_file_location("_relayrag_bm25s_stopwords", path)
        if spec is None or spec.loader is None:
            from bm25s.stopwords import STOPWORDS_EN
            return frozenset(STOPWORDS_EN)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    return frozenset(mod.STOPWORDS_EN)


@functools.lru_cache(maxsize=1)
def _stemmer():
    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Tokens for BM25 (list[str]); deterministic, so index and query use the same function."""
    out: list[str] = []
    words: list[str] = []
    stop = _stopwords()
    for m in _RUN.finditer(normalize(text).lower()):
        run = m.group("cjk")
        if run is not None:
            if len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i:i + 2] for i in range(len(run) - 1))
        else:
            w = m.group("word").replace("’", "'")
            if w not in stop:
                words.append(w)
    if words:
        out.extend(_stemmer().stemWords(words))
    return out
