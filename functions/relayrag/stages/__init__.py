"""Stages: one module each, `run(request, ctx) -> response`; STAGES maps entry-point names to them."""

from relayrag.stages import classify, generate, grade, hallucination_check, hyde, rerank, retrieve, sql
from relayrag.stages.base import Stage

STAGES: dict[str, Stage] = {m.STAGE.name: m.STAGE for m in
                            (classify, hyde, retrieve, rerank, grade, generate, hallucination_check, sql)}
