"""Aggregates computed from run records, and the plots' math."""

from __future__ import annotations

import math

import pytest

from relayrag.dashboard import metrics, plots


def test_percentile_is_nearest_rank():
    xs = [15, 20, 35, 40, 50]
    assert metrics.percentile(xs, 50) == 35 and metrics.percentile(xs, 95) == 50
    assert metrics.percentile(xs, 30) == 20 and metrics.percentile(xs, 0) == 15
    assert metrics.percentile([], 50) is None


def test_summarize_from_run_records():
    runs = [
        {"run_id": "a", "created_at": 1, "route": "rag", "answer": "x", "refused": False, "regen_count": 1,
         "retry_count": 0, "collection": "c", "arm": "bm25", "arm_draws": {"bm25": 0.9},
         "rewards": [{"arm": "bm25", "reward": 0.8}]},
        {"run_id": "b", "created_at": 2, "route": "rag", "answer": "", "refused": True, "regen_count": 0,
         "retry_count": 1, "collection": "c", "arm": "dense", "arm_draws": {"dense": 0.7}, "bandit_context": "ja",
         "rewards": [{"arm": "dense", "reward": 0.1}, {"arm": "bm25", "reward": 0.4}]},
        {"run_id": "f", "created_at": 3, "route": "rag", "answer": "y", "collection": "c", "arm": "hybrid",
         "arm_draws": {}, "rewards": [{"arm": "hybrid", "reward": 1.0}]},  # forced arm: not a pull
        {"run_id": "s", "created_at": 4, "route": "sql", "answer": "5", "refused": False, "collection": "w"},
    ]
    traces = {"a": [{"name": "classify", "ms": 10.0}, {"name": "generate", "ms": 30.0, "llm_error": "down"}],
              "b": [{"name": "classify", "ms": 20.0}], "f": [{"name": "classify", "ms": 30.0}],
              "s": [{"name": "classify", "ms": 40.0}]}
    m = metrics.summarize(runs, traces)
    assert m["runs"] == 4 and m["routes"] == {"rag": 3, "sql": 1}
    assert m["refusal_rate"] == 0.25 and m["regenerate_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["retry_rate"] == pytest.approx(1 / 3, abs=1e-4) and m["llm_errors"] == 1
    assert m["stages"]["classify"] == {"n": 4, "p50_ms": 20.0, "p95_ms": 40.0}
    assert m["bandit"] == [{"collection": "c", "context": "ja", "arm": "bm25", "pulls": 1, "mean_reward": 0.4},
                           {"collection": "c", "context": "ja", "arm": "dense", "pulls": 1, "mean_reward": 0.1},
                           {"collection": "c", "context": "latin", "arm": "bm25", "pulls": 1, "mean_reward": 0.8}]
    assert metrics.summarize([], {})["refusal_rate"] is None


def test_beta_pdf_matches_closed_forms():
    assert plots.beta_pdf(0.3, 1, 1) == pytest.approx(1.0)
    assert plots.beta_pdf(0.3, 2, 1) == pytest.approx(0.6)            # 2x
    assert plots.beta_pdf(0.5, 2, 2) == pytest.approx(1.5)            # 6x(1-x)
    assert plots.beta_pdf(0.4, 3000.5, 4500.5) > 0 and math.isfinite(plots.beta_pdf(0.4, 3000.5, 4500.5))
    # integrates to 1
    n = 20000
    assert sum(plots.beta_pdf((i + 0.5) / n, 3.5, 7.25) for i in range(n)) / n == pytest.approx(1.0, abs=1e-3)


def test_plots_are_svg_with_their_labels():
    svg = plots.beta_posteriors({"dense": (3.0, 2.0), "bm25": (1.0, 1.0)}, "c: posterior")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "Beta(3.00, 2.00)" in svg and "mean 0.600" in svg
    w = plots.waterfall([{"name": "classify", "ms": 12.0, "method": "knn"},
                         {"name": "generate", "ms": 40.0, "method": "llm (llm failed)", "llm_error": "x"}])
    assert "classify (knn)" in w and "40 ms" in w
    h = plots.history({"bm25": [(1, 0.5), (2, 0.6)]}, "nDCG@10")
    assert "nDCG@10" in h and "bm25" in h
    assert "no evaluations yet" in plots.history({}, "nDCG@10")


def test_span_exporter_selection():
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter
    from relayrag.dashboard.telemetry import build_exporter
    from relayrag.errors import ConfigError
    assert build_exporter("none") is None and build_exporter("") is None
    assert isinstance(build_exporter("console"), ConsoleSpanExporter)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    assert isinstance(build_exporter("otlp"), OTLPSpanExporter)
    with pytest.raises(ConfigError, match="valid: none, console, otlp, gcp_trace"):
        build_exporter("zipkin")
    try:
        import opentelemetry.exporter.cloud_trace  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="opentelemetry-exporter-gcp-trace"):
            build_exporter("gcp_trace")


def test_not_found_counts_as_not_answered_and_small_talk_is_not_a_question():
    """Issue 28 item 4: Overview said "refusal rate 0.0 %" while 15 of 49 runs were "not found"."""
    from relayrag.dashboard import metrics
    runs = [{"run_id": "a", "route": "rag", "answer": "x", "found": True, "grounded": True},
            {"run_id": "b", "route": "rag", "answer": "I could not find", "found": False},
            {"run_id": "c", "route": "sql", "answer": "refused", "refused": True, "found": False},
            {"run_id": "d", "route": "chitchat", "answer": "Hello!", "found": True}]
    m = metrics.summarize(runs, {})
    assert m["questions"] == 3 and m["not_found"] == 1 and m["refused"] == 1
    assert m["refusal_rate"] == pytest.approx(2 / 3, abs=1e-4)


def test_arms_never_offered_to_a_context_are_named():
    from relayrag.dashboard import metrics
    runs = [{"collection": "c", "bandit_context": "ja", "arm_lists": {"bm25": [1, 2]}},
            {"collection": "c", "bandit_context": "latin", "arm_lists": {"bm25": [1], "dense": [2], "hybrid": [3]}}]
    assert metrics.offered_arms(runs, "c", "ja") == {"bm25"}
    assert metrics.offered_arms(runs, "c", "latin") == {"bm25", "dense", "hybrid"}
    assert metrics.offered_arms(runs, "other", "ja") is None


def test_a_one_point_chart_has_whole_number_ticks():
    """Issue 28 item 4: one pull (or one evaluation) drew an x axis from 0.945 to 1.050."""
    import re

    from relayrag.dashboard import plots
    for svg in (plots.reward_over_time([{"arm": "bm25", "reward": 1.0}], "t"),
                plots.history({"hybrid": [(1, 0.8)]}, "nDCG@10", "t")):
        ticks = re.findall(r">(-?\d+(?:\.\d+)?)</text>", svg)
        xs = [t for t in ticks if t not in ("0.0", "0.2", "0.4", "0.6", "0.8", "1.0")]
        assert xs and all("." not in t for t in xs), ticks
    assert "bm25 (1 pull)" in plots.reward_over_time([{"arm": "bm25", "reward": 1.0}], "t")
