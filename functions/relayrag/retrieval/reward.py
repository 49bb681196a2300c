"""The bandit's reward: how well an arm's *own* ranking puts relevant chunks on top.

A judge gives each chunk of a query's candidate lists P(relevant) without an LLM (`judge`): a logistic
model of two features, the chunk's cosine to the query (only where the embedder can read the query) and the
IDF-weighted share of the query's BM25 tokens the chunk contains. Its coefficients (`JUDGE`) were fitted by
benchmarks/bench_judge.py on the dev sets (SciFact test, ja-qa dev; two-fold AUCs in benchmarks/RESULTS.md).
The grade stage may override a chunk's P with its own judgement (an LLM's yes/no).

The reward of arm a on one query is its DCG@10 under those soft labels — Σ_i P(L_a[i]) / log2(i + 1), the
same discount as the nDCG@10 it should optimise (Järvelin & Kekäläinen 2002) — divided by the best DCG@10
among the arms whose lists the query computed (`arm_rewards`), so it is in [0, 1], 1 for the arm that ranked
the judged-relevant chunks highest, and query difficulty cancels out (as in interleaving comparisons: the
arms are compared on the same query). A query where no list has a relevant chunk in its top 10 teaches nothing
and gives no reward, one list alone included (a question the collection cannot answer is not the arm's
fault). "Relevant" is decided by either scorer (`reward_basis`): the judge (P >= 0.5) or the grade stage's
verdict (the chunks it kept, which the answer cites). The second matters where the judge is out of its
domain: fitted on SciFact abstracts, it gives the cited table row of the bundled Federal Register PDF
P = 0.37 while grade keeps it at 0.999; on the examples/pdfs golden set the judge reached 0.5 for 9 of the
57 grounded answers, and the other 48 taught the bandit nothing (with grade's verdict: all 57). Grade's verdict
only opens the gate; the arms are still compared by the judge's soft labels, which do not depend on the arm (grade
judges the served arm's candidates only, so its scores would favour the arm that served them). Because the
judge does not depend on the arm, every computed list can be rewarded, not only the one that served the
candidates.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from relayrag.backends.embedder import reference_cosine
from relayrag.retrieval.tokenize import tokenize

DEPTH = 10  # DCG cut-off, as nDCG@10


# (intercept, cosine, idf-weighted coverage) for a query the embedder reads; (intercept, coverage) else.
# Fitted (logistic regression, all queries) by benchmarks/bench_judge.py: "readable" on SciFact test,
# "lexical" on ja-qa dev; two-fold AUCs 0.87 and 0.98 (benchmarks/RESULTS.md).
JUDGE = {"readable": (-8.56, 8.35, 4.52), "lexical": (-8.24, 14.54)}


def judge_reads_cosine(readable: bool, context: str) -> bool:
    """Whether the judge uses the cosine feature: only where its "readable" coefficients were fitted — Latin
    script (SciFact, MiniLM). Elsewhere the lexical judge decides even when the embedder reads the query: with
    the multilingual e5 on ja-qa dev the cosine judge favoured the list ranked by cosine and sent the bandit to
    the dense arm on 342 of 377 questions (dense 0.900, BM25 0.944 nDCG@10), while the lexical judge's AUC there
    is 0.99. A judge is trusted where it was measured, not carried over to another script."""
    return readable and context == "latin"


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def query_idf(query: str, bm25_index) -> dict[str, float]:
    """BM25 idf per distinct query token over the snapshot's chunks: ln(1 + (N - df + 0.5)/(df + 0.5))."""
    n = max(1, bm25_index.n_total)
    out = {}
    for t in dict.fromkeys(tokenize(query)):
        again = tokenize(t)  # the token as a query (a stem may stem again): its df when it is one token
        if not bm25_index.n_docs:
            df = 0
        elif len(again) == 1:
            df = bm25_index.df(again[0])
        else:
            matching = getattr(bm25_index, "matching", None)
            df = matching(t) if matching is not None else int(np.count_nonzero(bm25_index.scores(t)))
        out[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def coverage(idf: Mapping[str, float], text: str) -> float:
    """IDF-weighted share of the query tokens present in `text`, in [0, 1] (0 for a query without tokens)."""
    total = sum(idf.values())
    if total <= 0:
        return 0.0
    present = set(tokenize(text))
    return sum(w for t, w in idf.items() if t in present) / total


def judge_features(query: str, qvec: np.ndarray | None, rows: Sequence[int], snapshot,
                   idf: Mapping[str, float] | None = None) -> dict[int, tuple[float, float]]:
    """{row: (cosine, coverage)}; cosine is 0.0 when `qvec` is None (the embedder cannot read the query)."""
    from relayrag.ingest.snapshot import index_text
    rows = list(dict.fromkeys(int(r) for r in rows))
    if idf is None:
        idf = query_idf(query, snapshot.bm25)
    cos = snapshot.dense.rows(rows) @ np.asarray(qvec, dtype=np.float32) if qvec is not None and rows \
        else np.zeros(len(rows))
    cos = reference_cosine(getattr(snapshot, "embedder", None), cos)  # JUDGE was fitted on MiniLM's scale
    return {r: (float(c), coverage(idf, index_text(snapshot.chunks[r]))) for r, c in zip(rows, cos)}


def judge(features: Mapping[int, tuple[float, float]], readable: bool) -> dict[int, float]:
    """{row: P(relevant)} from judge_features' output, with the calibrated coefficients JUDGE."""
    if not features:
        return {}
    rows = list(features)
    f = np.array([features[r] for r in rows], dtype=np.float64)
    if readable:
        b0, bc, bl = JUDGE["readable"]
        p = _sigmoid(b0 + bc * f[:, 0] + bl * f[:, 1])
    else:
        b0, bl = JUDGE["lexical"]
        p = _sigmoid(b0 + bl * f[:, 1])
    return {r: float(x) for r, x in zip(rows, p)}


def dcg(ranking: Sequence, p: Mapping, depth: int = DEPTH) -> float:
    """Σ_{i ≤ depth} p[item_i] / log2(i + 1), i from 1; items without a judgement count 0."""
    return sum(p.get(item, 0.0) / math.log2(i + 2) for i, item in enumerate(ranking[:depth]))


def reward_basis(lists: Mapping[str, Sequence], p: Mapping, depth: int = DEPTH,
                 evidence: Collection = ()) -> str | None:
    """Which scorer makes the query informative: "judge" when some list's top `depth` holds an item with
    P >= 0.5 under `p`, else "grade" when it holds an item of `evidence` (the items the grade stage judged
    relevant), else None (nothing relevant anywhere: no reward)."""
    tops = [x for ranking in lists.values() for x in ranking[:depth]]
    if max((p.get(x, 0.0) for x in tops), default=0.0) >= 0.5:
        return "judge"
    if evidence and any(x in evidence for x in tops):
        return "grade"
    return None


def arm_rewards(lists: Mapping[str, Sequence], p: Mapping, depth: int = DEPTH,
                evidence: Collection = ()) -> dict[str, float]:
    """{arm: reward in [0, 1]}: each list's DCG@depth under the soft labels `p` divided by the best list's;
    empty when no list's top `depth` holds a relevant item (`reward_basis`: judged P >= 0.5 or one of
    `evidence`, the items grade kept) — no information. With one list (nothing to compare with):
    min(1, DCG@depth), so one relevant chunk at rank 1 scores 1; a lone list without any relevant item gets
    no reward either (0 would blame the arm for a question the collection does not answer)."""
    gains = {arm: dcg(ranking, p, depth) for arm, ranking in lists.items()}
    if not gains or reward_basis(lists, p, depth, evidence) is None:
        return {}
    if len(gains) == 1:  # nothing to compare with: one relevant chunk at rank 1 is full marks
        return {arm: min(1.0, g) for arm, g in gains.items()}
    best = max(gains.values())
    if best <= 1e-9:
        return {}
    return {arm: g / best for arm, g in gains.items()}
