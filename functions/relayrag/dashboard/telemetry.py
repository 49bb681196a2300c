"""OpenTelemetry spans for the runs the dashboard starts: one `rag` span per run, one child span per stage.

Stage spans are made from the workflow's per-stage events, timed as each stage finishes (start = end - the
stage's `ms`) and emitted when the run ends, with the attributes `relayrag.run_id`, `relayrag.stage`,
`relayrag.method`, `relayrag.route`, `relayrag.arm` (once retrieve has chosen it) and `relayrag.llm_error`;
the run span carries the run id,
collection, route, arm, grounded/refused and reward.

Exporter (the standard OTEL_TRACES_EXPORTER variable): `none` (default), `console` (stderr), `otlp`
(OTLP/gRPC to OTEL_EXPORTER_OTLP_ENDPOINT, default localhost:4317), `gcp_trace` (Cloud Trace, package
opentelemetry-exporter-gcp-trace; infra/ sets it on the Cloud Run service).
"""

from __future__ import annotations

import os
import threading
import time

from relayrag.tracing import EXPORTERS, build_exporter  # noqa: F401  (re-exported: one exporter choice)

_provider = None
_lock = threading.Lock()


def provider(exporter=None):
    """The dashboard's TracerProvider (built once; `exporter` given = tests: that exporter, synchronously)."""
    global _provider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    with _lock:
        if exporter is not None:
            p = TracerProvider(resource=Resource.create({"service.name": "relayrag-dashboard"}))
            p.add_span_processor(SimpleSpanProcessor(exporter))
            _provider = p
        elif _provider is None:
            p = TracerProvider(resource=Resource.create({"service.name": "relayrag-dashboard"}))
            exp = build_exporter(os.environ.get("OTEL_TRACES_EXPORTER", "none"))
            if exp is not None:
                p.add_span_processor(BatchSpanProcessor(exp))
            _provider = p
        return _provider


class RunSpans:
    """Spans of one run. Stage events are timed as they arrive (each stage ends when its event arrives and
    started its `ms` earlier); the spans are emitted when the run ends, once its run_id and arm are known
    (the engine assigns the run_id)."""

    def __init__(self, collection: str, question_chars: int):
        self.tracer = provider().get_tracer("relayrag.dashboard")
        self.collection, self.question_chars = collection, question_chars
        self.start = time.time_ns()
        self.stages: list[tuple[dict, int]] = []

    def stage(self, event: dict) -> None:
        self.stages.append((event, time.time_ns()))

    def finish(self, result: dict | None, error: str | None = None) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode
        res: dict = result or {}
        run_id = str(res.get("run_id") or "")
        root = self.tracer.start_span("rag", start_time=self.start, attributes={
            "relayrag.run_id": run_id, "relayrag.collection": self.collection,
            "relayrag.question_chars": self.question_chars})
        arm = None
        parent = trace.set_span_in_context(root)
        for event, end in self.stages:
            raw = event.get("result")
            r: dict = raw if isinstance(raw, dict) else {}
            ms = float(r.get("ms") or event.get("ms") or 0.0)
            arm = str(r["arm"]) if r.get("arm") else arm
            attrs: dict[str, str | float] = {"relayrag.run_id": run_id, "relayrag.stage": str(event.get("step")),
                     "relayrag.method": str(r.get("method") or ""), "relayrag.route": str(r.get("route") or ""),
                     "relayrag.ms": ms}
            if arm:
                attrs["relayrag.arm"] = arm
            if r.get("llm_error"):
                attrs["relayrag.llm_error"] = str(r["llm_error"])[:500]
            span = self.tracer.start_span(str(event.get("step")), context=parent,
                                          start_time=max(self.start, end - int(ms * 1e6)), attributes=attrs)
            span.end(end_time=end)
        for k in ("route", "arm"):
            if res.get(k):
                root.set_attribute(f"relayrag.{k}", str(res[k]))
        if res:
            root.set_attribute("relayrag.grounded", bool(res.get("grounded")))
            root.set_attribute("relayrag.refused", bool(res.get("refused")))
            if res.get("reward") is not None:
                root.set_attribute("relayrag.reward", float(res["reward"]))
        if error:
            root.set_status(Status(StatusCode.ERROR, error[:500]))
        root.end()
