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
    """SciFact: relayrag vs the plain baseline (bm25s + MiniLM + RRF), in one run; writes benchmarks/results/."""
    session.install("-e", ".[dev]")
    session.run("python", "benchmarks/bench_scifact.py", *session.posargs)
