"""Thompson sampling over retrieval arms (Thompson 1933; Chapelle & Li, NIPS 2011).

Each arm a has Beta(alpha_a, beta_a), persisted per collection in the docstore. To choose, draw
θ_a ~ Beta(alpha_a, beta_a) for each arm and take argmax θ_a. The grade stage rewards the arm with
r ∈ [0, 1] (alpha += r, beta += 1 - r), so arms that surface relevant chunks get chosen more often.
"""

from __future__ import annotations

import numpy as np

from relayrag.enums import ChoiceEnum


class Arm(ChoiceEnum):
    dense = "dense"
    bm25 = "bm25"
    hybrid = "hybrid"

    @classmethod
    def _label(cls) -> str:
        return "retrieval arm"


class ThompsonBandit:
    def __init__(self, arms: list[str] | None = None, prior: tuple[float, float] = (1.0, 1.0),
                 rng: np.random.Generator | None = None):
        self.arms = arms or [a.value for a in Arm]
        self.prior = prior
        self.rng = rng or np.random.default_rng()

    def choose(self, params: dict[str, tuple[float, float]]) -> tuple[str, dict[str, float]]:
        """Returns (arm, {arm: sampled θ}). Arms missing from `params` use the prior."""
        draws = {}
        for arm in self.arms:
            a, b = params.get(arm, self.prior)
            draws[arm] = float(self.rng.beta(max(a, 1e-6), max(b, 1e-6)))
        best = max(self.arms, key=lambda arm: draws[arm])
        return best, draws

    @staticmethod
    def posterior_mean(params: dict[str, tuple[float, float]]) -> dict[str, float]:
        return {arm: a / (a + b) for arm, (a, b) in params.items()}
