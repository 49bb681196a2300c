"""Infra tests: put infra/ on sys.path (the Pulumi program's package, relayrag_infra) and share one mocked
deployment of the default stack."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
INFRA = REPO_ROOT / "infra"
if str(INFRA) not in sys.path:
    sys.path.insert(0, str(INFRA))


@pytest.fixture(scope="session")
def full():
    """All stages, Vertex LLM and embedder (the default stack), deployed under mocks."""
    from tests.infra.harness import config, deploy
    return deploy(config())
