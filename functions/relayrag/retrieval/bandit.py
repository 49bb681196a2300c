"""Contextual Thompson sampling over retrieval arms (Thompson 1933; Chapelle & Li, NIPS 2011).

Context = the query's script (`query_context`: latin, ja, zh, ko, other), because which arm works depends
on the language far more than on the collection: on a mixed English/Japanese collection the English
MiniLM is the second-best arm for English questions and useless for Japanese ones. Each (context, arm)
has Beta(alpha, beta), persisted per collection in the docstore under the key "<context>/<arm>"
(`arm_key`). To choose, draw θ_a ~ Beta(alpha_a, beta_a) for every *offered* arm and take argmax θ_a.

Offered arms: the dense arm only where the embedder can read the query's script (`readable`: the share of
unknown word pieces its tokenizer gives on a reference text of that script, and on the query itself, is
small; English MiniLM on Japanese: ~25 % [UNK]); hybrid only where it fuses two readable arms (otherwise it
is the BM25 list again). Priors: Beta(1, 1) for the single arms, Beta(2, 1) for hybrid — before any
evidence the fused list is the better bet (rank fusion rarely loses to its inputs: Cormack et al. 2009;
Bruch et al., TOIS 2023) — so a new context starts on hybrid and moves only on evidence.

Rewards come from relayrag.retrieval.reward (each arm's own ranking, judged per query) and update every arm
whose list the query computed, so the posterior means are per-context quality estimates that also weight
and gate the hybrid fusion (`fusion_weights`).
"""

from __future__ import annotations

import functools
import unicodedata

import numpy as np

from relayrag.enums import ChoiceEnum


class Arm(ChoiceEnum):
    dense = "dense"
    bm25 = "bm25"
    hybrid = "hybrid"

    @classmethod
    def _label(cls) -> str:
        return "retrieval arm"


BASE_ARMS = ("dense", "bm25")          # the lists hybrid fuses
PRIORS: dict[str, tuple[float, float]] = {"dense": (1.0, 1.0), "bm25": (1.0, 1.0), "hybrid": (2.0, 1.0)}
CONTEXTS = ("latin", "ja", "zh", "ko", "other")

# Reference text per script for `script_unknown_rate` (our own sentences, plain facts).
PROBES = {
    "latin": "The river flows through the old town before it reaches the sea. Doctors measured blood pressure "
             "in three hundred patients over two years.",
    "ja": "川は古い町を流れてから海に注ぐ。医師たちは二年間にわたり三百人の患者の血圧を測定した。",
    "zh": "这条河流经古老的城镇，然后流入大海。医生在两年内测量了三百名患者的血压。",
    "ko": "강은 오래된 마을을 지나 바다로 흘러간다. 의사들은 이 년 동안 삼백 명의 환자의 혈압을 측정했다.",
}
MAX_UNKNOWN_RATE = 0.05  # above this share of unknown pieces an embedder is not reading the text


def _script(ch: str) -> str | None:
    o = ord(ch)
    if 0x3040 <= o <= 0x30FF or 0xFF66 <= o <= 0xFF9F:
        return "kana"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return "hangul"
    if 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF:
        return "han"
    if ch.isalpha():
        return "latin" if unicodedata.name(ch, "").startswith("LATIN") else "other"
    return None


def query_context(text: str) -> str:
    """The bandit context of a query: its dominant script. 'ja' if it has kana (or han with kana), 'zh' for
    han without kana, 'ko' for hangul, 'latin', else 'other' (Cyrillic, Greek, Arabic, ... or no letters)."""
    counts: dict[str, int] = {}
    for ch in text:
        s = _script(ch)
        if s:
            counts[s] = counts.get(s, 0) + 1
    if not counts:
        return "other"
    cjk = counts.get("kana", 0) + counts.get("han", 0) + counts.get("hangul", 0)
    if cjk >= 0.1 * sum(counts.values()):  # as relayrag.text.has_cjk: a few CJK characters make it CJK
        if counts.get("kana"):
            return "ja"
        return "ko" if counts.get("hangul", 0) >= counts.get("han", 0) else "zh"
    return max(("latin", "other"), key=lambda s: counts.get(s, 0))


def arm_key(context: str, arm: str) -> str:
    """Docstore key of an arm in a context, e.g. 'ja/bm25'."""
    return f"{context}/{arm}"


def unknown_rate(embedder, text: str) -> float:
    """Share of the embedder's word pieces of `text` that are unknown (e.g. [UNK]), in [0, 1]; 0.0 for an
    embedder that does not expose one (a multilingual API model is assumed to read everything)."""
    fn = getattr(embedder, "unknown_rate", None)
    return float(fn(text)) if callable(fn) else 0.0


@functools.lru_cache(maxsize=64)
def _probe_rate(embedder, context: str) -> float:
    probe = PROBES.get(context)
    return unknown_rate(embedder, probe) if probe else 0.0


def readable(embedder, query: str, context: str | None = None) -> bool:
    """Whether the dense arm can read `query`: the embedder's unknown-piece rate on its script's reference
    text and on the query itself are both at most MAX_UNKNOWN_RATE (English MiniLM: 0 % on English, 25 %
    on Japanese queries, 28 % on the Japanese reference sentence)."""
    context = context or query_context(query)
    try:
        return _probe_rate(embedder, context) <= MAX_UNKNOWN_RATE and \
            unknown_rate(embedder, query) <= MAX_UNKNOWN_RATE
    except TypeError:  # an unhashable test double: measure without the cache
        return unknown_rate(embedder, PROBES.get(context, "")) <= MAX_UNKNOWN_RATE and \
            unknown_rate(embedder, query) <= MAX_UNKNOWN_RATE


def offered_arms(dense_readable: bool) -> list[str]:
    """The arms the bandit may choose for a query."""
    return ["dense", "bm25", "hybrid"] if dense_readable else ["bm25"]


def posterior_mean(params: dict[str, tuple[float, float]]) -> dict[str, float]:
    return {arm: a / (a + b) for arm, (a, b) in params.items()}


def context_params(stored: dict[str, tuple[float, float]], context: str, arms: list[str] | tuple[str, ...]
                   ) -> dict[str, tuple[float, float]]:
    """{arm: (alpha, beta)} of one context from the docstore's {"<context>/<arm>": (alpha, beta)}, with the
    docstore's uniform prior (1, 1) replaced by the arm's prior in PRIORS."""
    out = {}
    for arm in arms:
        a0, b0 = PRIORS.get(arm, (1.0, 1.0))
        a, b = stored.get(arm_key(context, arm), (1.0, 1.0))
        out[arm] = (a - 1.0 + a0, b - 1.0 + b0)
    return out


# A list whose measured quality is below this share of the best input's is left out of hybrid: at RRF's
# k = 60 even a weight of 0.15 lets a noise list's top hit overtake the good list's rank-10 document
# (1/70 + 0.15/61 > 1/61), so weighting alone cannot keep a bad list harmless; below ~3/4 of the best
# list's quality (dense vs BM25 on SciFact: 0.94; on Japanese: 0.18) fusing costs more than it adds.
GATE = 0.75
MIN_EVIDENCE = 5.0  # pseudo-observations before the gate may drop a list


def fusion_weights(params: dict[str, tuple[float, float]], arms: tuple[str, ...] = BASE_ARMS
                   ) -> dict[str, float]:
    """Weighted-RRF weights of hybrid's input lists from their posterior mean rewards in this context:
    w_a = mean_a / max mean, and 0 for a list below GATE × the best once both have MIN_EVIDENCE
    observations. Arms missing from `params` get weight 1 (no evidence: plain RRF)."""
    known = {a: params[a] for a in arms if a in params}
    if len(known) < 2:
        return {a: 1.0 for a in arms}
    means = posterior_mean(known)
    best = max(means.values())
    enough = all(a + b - 2.0 >= MIN_EVIDENCE for a, b in known.values())
    out = {}
    for a in arms:
        if a not in means:
            out[a] = 1.0
            continue
        w = means[a] / best if best > 0 else 1.0
        out[a] = 0.0 if enough and w < GATE else round(w, 4)
    return out


class ThompsonBandit:
    def __init__(self, arms: list[str] | None = None, prior: tuple[float, float] = (1.0, 1.0),
                 rng: np.random.Generator | None = None):
        self.arms = arms or [a.value for a in Arm]
        self.prior = prior
        self.rng = rng or np.random.default_rng()

    def choose(self, params: dict[str, tuple[float, float]], arms: list[str] | None = None
               ) -> tuple[str, dict[str, float]]:
        """Returns (arm, {arm: sampled θ}) over `arms` (default: all). Arms missing from `params` use the
        prior; a single offered arm is returned without a draw."""
        arms = arms or self.arms
        if len(arms) == 1:
            return arms[0], {arms[0]: 1.0}
        draws = {}
        for arm in arms:
            a, b = params.get(arm, self.prior)
            draws[arm] = float(self.rng.beta(max(a, 1e-6), max(b, 1e-6)))
        best = max(arms, key=lambda arm: draws[arm])
        return best, draws

    @staticmethod
    def posterior_mean(params: dict[str, tuple[float, float]]) -> dict[str, float]:
        return posterior_mean(params)
