"""One OpenTelemetry trace per run: a root span `rag` where the run starts (the CLI, MCP gateway or dashboard
process that calls the engine) and one child span per stage call, in whichever process serves the stage.

Propagation (W3C Trace Context, https://www.w3.org/TR/trace-context/): the caller passes its span's
`traceparent` as the workflow argument `traceparent`; workflows/rag.yaml sends it as the `traceparent` header
of every stage call (Cloud Workflows does not propagate trace context by itself), and the stage's entry point
continues the trace from that header. Embedded, the same header travels through the in-process JSON round trip.

Span attributes (names under `relayrag.`): run_id, stage, collection, method, route, arm, retry_count,
llm_error and llm_fallbacks (a stage that fell back from its LLM), reward, grounded, n_candidates.

Exporter: the standard OTEL_TRACES_EXPORTER variable — `none` (default: no span is recorded and no header is
sent), `console` (JSON per span on stderr, written as each span ends), `otlp` (OTLP/gRPC to
OTEL_EXPORTER_OTLP_ENDPOINT, package opentelemetry-exporter-otlp-proto-grpc), `gcp_trace` (Cloud Trace,
package opentelemetry-exporter-gcp-trace; infra/ sets it on the deployed functions and services).
opentelemetry-api/-sdk are optional: without them every function here is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from relayrag.errors import ConfigError

EXPORTERS = ("none", "console", "otlp", "gcp_trace")
SERVICE = "relayrag"
_provider: Any = None
_lock = threading.Lock()


def build_exporter(name: str):
    """The SpanExporter for an OTEL_TRACES_EXPORTER value, or None for `none`. ConfigError when the name is
    unknown or its package is missing."""
    name = (name or "none").strip().lower()
    if name == "none":
        return None
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter
        return ConsoleSpanExporter(out=sys.stderr, formatter=lambda span: span.to_json(indent=None) + "\n")
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ConfigError("OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-grpc: "
                              "pip install 'relayrag[dashboard]'") from exc
        return OTLPSpanExporter()
    if name == "gcp_trace":
        try:
            from opentelemetry.exporter.cloud_trace import CloudTraceSpanExporter
        except ImportError as exc:
            raise ConfigError("OTEL_TRACES_EXPORTER=gcp_trace needs opentelemetry-exporter-gcp-trace: "
                              "pip install 'relayrag[dashboard,gcp]'") from exc
        return CloudTraceSpanExporter(project_id=os.environ.get("RELAYRAG_GCP_PROJECT") or None)
    raise ConfigError(f"OTEL_TRACES_EXPORTER={name!r} is not supported; valid: {', '.join(EXPORTERS)}")


def _enabled() -> bool:
    return _provider is not None or (os.environ.get("OTEL_TRACES_EXPORTER") or "none").strip().lower() != "none"


def provider(exporter=None):
    """This process's TracerProvider for run and stage spans, built once from OTEL_TRACES_EXPORTER; None when
    tracing is off or opentelemetry-sdk is missing. `exporter` given (tests): that exporter, synchronously,
    replacing the provider. `console` exports synchronously too (a stage process may be stopped any time)."""
    global _provider
    with _lock:
        if exporter is None and _provider is not None:
            return _provider
        if exporter is None and not _enabled():
            return None
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        except ImportError:
            return None
        name = os.environ.get("K_SERVICE") or os.environ.get("FUNCTION_TARGET") or SERVICE
        p = TracerProvider(resource=Resource.create({"service.name": name}))
        if exporter is not None:
            p.add_span_processor(SimpleSpanProcessor(exporter))
        else:
            kind = (os.environ.get("OTEL_TRACES_EXPORTER") or "none").strip().lower()
            exp = build_exporter(kind)
            if exp is not None:
                p.add_span_processor(SimpleSpanProcessor(exp) if kind == "console" else BatchSpanProcessor(exp))
        _provider = p
        return p


def _clean(attrs: Mapping[str, Any]) -> dict[str, str | bool | int | float]:
    out: dict[str, str | bool | int | float] = {}
    for k, v in attrs.items():
        if v is None or v == "":
            continue
        out[f"relayrag.{k}"] = v if isinstance(v, (bool, int, float)) else str(v)[:500]
    return out


@contextlib.contextmanager
def run_span(run_id: str, collection: str, **attrs: Any) -> Iterator[Any]:
    """The root span of one run (`rag`), current for the block; yields the span (None when tracing is off).
    Use `traceparent()` inside the block for the workflow argument."""
    p = provider()
    if p is None:
        yield None
        return
    tracer = p.get_tracer("relayrag.engine")
    with tracer.start_as_current_span("rag", attributes=_clean({"run_id": run_id, "collection": collection,
                                                                **attrs})) as span:
        yield span


def traceparent() -> str:
    """The W3C `traceparent` of the current span, or '' (tracing off, or no span)."""
    if provider() is None:
        return ""
    from opentelemetry.propagate import inject
    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier.get("traceparent", "")


@contextlib.contextmanager
def stage_span(stage: str, run_id: str, headers: Mapping[str, str] | None = None) -> Iterator[Any]:
    """A span per stage call, child of the `traceparent` header when one came with the request, else of the
    current span (in-process). Yields the span, or None when tracing is off; set the outcome with
    `record_stage`."""
    p = provider()
    if p is None:
        yield None
        return
    from opentelemetry.propagate import extract
    parent = extract({k.lower(): v for k, v in (headers or {}).items()}) if headers else None
    tracer = p.get_tracer("relayrag.stages")
    with tracer.start_as_current_span(stage, context=parent,
                                      attributes=_clean({"run_id": run_id, "stage": stage})) as span:
        yield span


def record_stage(span: Any, status: int, body: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> None:
    """Set a stage span's outcome from the stage's HTTP status and JSON response (and `extra`: trace entry
    fields such as llm_fallbacks)."""
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode
    keep = ("method", "route", "arm", "retry_count", "reward", "grounded", "n_candidates", "n_relevant",
            "llm_error")
    span.set_attributes(_clean({k: body.get(k) for k in keep}))
    span.set_attributes(_clean(dict(extra or {})))
    span.set_attribute("http.response.status_code", int(status))
    if status >= 400:
        span.set_status(Status(StatusCode.ERROR, str(body.get("error", ""))[:500]))


def record_run(span: Any, result: Mapping[str, Any]) -> None:
    """Set the root span's outcome from the run's assembled result."""
    if span is None:
        return
    span.set_attributes(_clean({k: result.get(k) for k in ("route", "arm", "grounded", "refused", "reward")}))
