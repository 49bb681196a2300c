"""Evaluation of the pipeline, one module per thing measured, side by side:

- relayrag.evaluation.retrieval — retrieval on BEIR-format datasets (`relayrag eval beir`): nDCG@k,
  Recall@k, MRR@k and the bandit's online replay.
- relayrag.evaluation.answers — answer quality over a golden set (`relayrag eval answers`): accuracy,
  citation precision, refusal precision/recall, faithfulness, grounded wrong answers.
- relayrag.evaluation.sql — Text-to-SQL execution accuracy and the guard's refusals (`relayrag eval sql`).

The retrieval metrics are re-exported here, where callers imported them from before the package existed.
"""

from relayrag.evaluation.retrieval import (bandit_replay, bandit_report, doc_ranking, evaluate_beir, learning_curve,
                                           load_qrels, load_queries, mrr_at_k, ndcg_at_k, recall_at_k, score_run)

__all__ = ["bandit_replay", "bandit_report", "doc_ranking", "evaluate_beir", "learning_curve", "load_qrels",
           "load_queries", "mrr_at_k", "ndcg_at_k", "recall_at_k", "score_run"]
