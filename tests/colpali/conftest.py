"""The `colpali` extra's tests (nox -s colpali): the real byaldi path with tiny random ColPali / ColQwen2 models
built at test time. Elsewhere (no torch / byaldi) they skip with the reason; under nox
(RELAYRAG_REQUIRE_COLPALI=1) a missing extra fails instead."""

from __future__ import annotations

import importlib.util
import os

import pytest

MISSING = [m for m in ("torch", "byaldi", "colpali_engine") if importlib.util.find_spec(m) is None]

# the tiny random models below may be loaded only by the test suite (relayrag.retrieval.page_model): say so for
# this process and the CLI processes the tests start (they inherit the environment)
os.environ["RELAYRAG_ALLOW_TEST_MODELS"] = "1"


def pytest_collection_modifyitems(config, items):
    if not MISSING:
        return
    if os.environ.get("RELAYRAG_REQUIRE_COLPALI") == "1":
        raise pytest.UsageError(f"nox -s colpali: {', '.join(MISSING)} not installed (pip install -e '.[colpali]')")
    skip = pytest.mark.skip(reason=f"needs the colpali extra ({', '.join(MISSING)} missing): nox -s colpali")
    for item in items:
        if "tests/colpali/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """{kind: folder} of tiny random models (built once per session, ~10 s each on 2 cores)."""
    from relayrag.retrieval.colpali_tiny import build_tiny
    root = tmp_path_factory.mktemp("models")
    return {kind: build_tiny(root / f"tiny-{kind}", kind) for kind in ("colpali", "colqwen2")}
