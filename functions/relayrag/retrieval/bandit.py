"""Contextual Thompson sampling over retrieval arms (Thompson 1933; Chapelle & Li, NIPS 2011).

Context = the query's script (`query_context`: latin, ja, zh, ko, other), because which arm works depends
on the language far more than on the collection: on a mixed English/Japanese collection the English
MiniLM is the second-best arm for English questions and useless for Japanese ones.

Two Beta posteriors per (context, arm), persisted per collection in the docstore (`update_keys`):
- "<context>/<arm>": the arm's probability of *winning* a query — its own list has the best judged DCG@10 of
  the lists computed for the query (ties within 1 % all win), an interleaving-style paired comparison. A win
  is a Bernoulli outcome, so Beta-Bernoulli Thompson sampling is exact: draw θ_a ~ Beta(alpha_a, beta_a) for
  every offered arm and take argmax θ_a. Paired wins separate arms whose mean quality differs by a few
  points much faster than the graded rewards themselves (they share the query's difficulty).
- "<context>/<arm>/dcg": the mean of the graded reward (DCG@10 relative to the query's best list), the
  arm's measured quality, which weights and gates the hybrid fusion (`fusion_weights`).

Offered arms: the dense arm only where the embedder can read the query's script (`readable`: the share of
unknown word pieces its tokenizer gives on a reference text of that script, and on the query itself, is
small; English MiniLM on Japanese: ~30 % [UNK]); hybrid only where it fuses two readable arms (otherwise it
is the BM25 list again). Priors: Beta(1, 1), except a win prior of Beta(2, 1) for hybrid — before any
evidence the fused list is the better bet (rank fusion rarely loses to its inputs: Cormack et al. 2009;
Bruch et al., TOIS 2023) — so a new context starts on hybrid and moves only on evidence.

- "<context>/<arm>/human": people's verdicts on runs that arm served (relayrag.feedback: 👍 = 1, 👎 = 0), a
  Beta posterior of its own, blended into the win posterior at read time (`context_params`) with weight
  HUMAN_WEIGHT: each verdict counts as HUMAN_WEIGHT judged queries. Kept apart so a changed verdict replaces
  its own contribution exactly and the weight can change without rewriting any count (docs/DESIGN.md).

Rewards come from relayrag.retrieval.reward (each arm's own ranking, judged per query) and update every arm
whose list the query computed (the judge does not depend on the arm, so this is full-information feedback;
the Thompson draw still decides which list serves the candidates).
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
PRIORS: dict[str, tuple[float, float]] = {"dense": (1.0, 1.0), "bm25": (1.0, 1.0), "hybrid": (2.0, 1.0)}  # wins
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


def quality_key(context: str, arm: str) -> str:
    """Docstore key of an arm's graded-reward posterior in a context, e.g. 'latin/dense/dcg'."""
    return f"{context}/{arm}/dcg"


def human_key(context: str, arm: str) -> str:
    """Docstore key of an arm's posterior of people's verdicts in a context, e.g. 'latin/hybrid/human'."""
    return f"{context}/{arm}/human"


# A person's verdict counts as this many judged queries in the win posterior. The judge sees every query and
# rewards every computed list; people rate a few runs, only the served arm, and judge the answer (which
# generation can spoil) rather than the ranking. 3 lets a handful of verdicts move an arm whose judge evidence
# is thin, while 30+ judged queries still outweigh one angry click; benchmarks/bench_bandit.py --feedback
# measures it against judge-only (benchmarks/RESULTS.md).
HUMAN_WEIGHT = 3.0

TIE = 0.99  # a list within 1 % of the query's best judged DCG@10 also wins the query


def update_keys(context: str, rewards: dict[str, float]) -> dict[str, float]:
    """The docstore updates {key: r in [0, 1]} for one query's rewards {arm: relative DCG@10}: a win (1/0)
    under arm_key and the graded reward under quality_key. A single offered arm has nothing to win against
    and only records its quality."""
    out = {}
    for arm, r in rewards.items():
        if len(rewards) > 1:
            out[arm_key(context, arm)] = 1.0 if r >= TIE else 0.0
        out[quality_key(context, arm)] = float(r)
    return out


def context_params(stored: dict[str, tuple[float, float]], context: str, arms: list[str] | tuple[str, ...],
                   quality: bool = False, human_weight: float = HUMAN_WEIGHT) -> dict[str, tuple[float, float]]:
    """{arm: (alpha, beta)} of one context from the docstore's {key: (alpha, beta)}: the win posteriors
    (with the docstore's uniform prior replaced by PRIORS, plus `human_weight` × the people's verdicts under
    human_key) or, with quality=True, the graded-reward ones."""
    out = {}
    for arm in arms:
        if quality:
            out[arm] = stored.get(quality_key(context, arm), (1.0, 1.0))
            continue
        a0, b0 = PRIORS.get(arm, (1.0, 1.0))
        a, b = stored.get(arm_key(context, arm), (1.0, 1.0))
        ha, hb = stored.get(human_key(context, arm), (1.0, 1.0))
        out[arm] = (a - 1.0 + a0 + human_weight * max(0.0, ha - 1.0),
                    b - 1.0 + b0 + human_weight * max(0.0, hb - 1.0))
    return out


# A list whose measured quality is below this share of the best input's is left out of hybrid: at RRF's
# k = 60 even a weight of 0.15 lets a noise list's top hit overtake the good list's rank-10 document
# (1/70 + 0.15/61 > 1/61), so weighting alone cannot keep a bad list harmless; below ~3/4 of the best
# list's quality (dense vs BM25 on SciFact: 0.94; on Japanese: 0.18) fusing costs more than it adds.
GATE = 0.75
MIN_EVIDENCE = 5.0  # pseudo-observations before the gate may drop a list


def fusion_weights(params: dict[str, tuple[float, float]], arms: tuple[str, ...] = BASE_ARMS
                   ) -> dict[str, float]:
    """Weighted-RRF weights of hybrid's input lists from their quality posteriors (graded-reward means,
    `context_params(..., quality=True)`) in this context:
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
