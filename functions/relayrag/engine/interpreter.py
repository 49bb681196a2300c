"""Embedded engine: executes a Cloud Workflows YAML in-process.

Supported subset (what relayrag's workflows use; anything else is a WorkflowError naming the construct):
steps with `assign`, `call` (http.post / http.get / sys.log / a subworkflow), `args`, `result`,
`switch` (condition + next / return / steps), `next` (a step name or `end`), `return`, `raise`,
`try` + `retry` (predicate http.default_retry_predicate, max_retries, exponential backoff) + `except`,
and subworkflows with `params`. HTTP calls go through a pluggable transport, so `local://<stage>` URLs
are dispatched to the stage entry points in-process while http(s) URLs use httpx.

Why not LangGraph (DESIGN §4 suggested it): the YAML is already a graph with its own step semantics
(try/retry, switch fall-through, subworkflow scopes); mapping it onto a StateGraph would add a layer that
still needs this interpreter's expression evaluator and step rules. Per-step events (for --stream) come
from `on_event`, and run state is persisted by the stages in the docstore, which is the checkpoint.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from typing import Any, Callable

import yaml

from relayrag.engine.expr import (DEFAULT_RETRY_PREDICATE, ENV_OVERLAY, RETRYABLE_CODES, WorkflowsRuntimeError,
                                  resolve)
from relayrag.errors import WorkflowError

# (method, url, body, timeout[, headers=…]) -> (status, body); a step with `headers` passes them as a keyword
HttpTransport = Callable[..., tuple[int, Any]]
STEP_KEYS = {"assign", "call", "args", "result", "switch", "next", "return", "raise", "try", "retry", "except",
             "steps"}
MAX_STEPS = 10_000


# libyaml's parser with the safe constructor (what yaml.safe_load builds, ~10x faster on rag.yaml: ~1 ms instead of
# ~10 ms per process); pure Python where PyYAML was built without libyaml
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


def load_workflow(source: str) -> dict:
    """Parse workflow YAML; a top-level `main` is required. Raises WorkflowError."""
    try:
        doc = yaml.load(source, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader: libyaml's when present
    except yaml.YAMLError as exc:
        raise WorkflowError(f"workflow YAML does not parse: {exc}") from exc
    if not isinstance(doc, dict) or "main" not in doc:
        raise WorkflowError("workflow YAML must define a `main` workflow")
    return doc


class Interpreter:
    def __init__(self, workflow: dict, transport: HttpTransport,
                 on_event: Callable[[dict], None] | None = None, sleep: Callable[[float], None] = time.sleep):
        self.workflow = workflow
        self.transport = transport
        self.on_event = on_event or (lambda e: None)
        self.sleep = sleep
        self.steps_run = 0

    # -- public ----------------------------------------------------------------------------------
    def run(self, args: Any, env: Mapping[str, str] | None = None) -> Any:
        """Run `main` with the runtime argument `args`. `env`: variables `sys.get_env` returns for this run
        (over the process environment), as a deployment's environment would (e.g. RELAYRAG_STAGE_URLS)."""
        main = self.workflow["main"]
        params = main.get("params") or []
        scope = {params[0]: copy.deepcopy(args)} if params else {}
        token = ENV_OVERLAY.set(dict(env) if env is not None else None)
        try:
            return self._run_workflow("main", main, scope)
        finally:
            ENV_OVERLAY.reset(token)

    # -- workflows and steps -----------------------------------------------------------------------
    def _run_workflow(self, name: str, wf: dict, scope: dict) -> Any:
        steps = wf.get("steps")
        if not isinstance(steps, list):
            raise WorkflowError(f"workflow {name!r} has no steps list")
        try:
            self._run_steps(steps, scope)
        except _Return as ret:
            return ret.value
        return None

    def _run_steps(self, steps: list, scope: dict) -> str | None:
        """Run a step list; returns a `next` target that is not in this list (for the caller), or None."""
        names = []
        for step in steps:
            if not isinstance(step, dict) or len(step) != 1:
                raise WorkflowError(f"each step must be a map with one name, got {step!r}")
            names.append(next(iter(step)))
        i = 0
        while i < len(steps):
            name = names[i]
            body = steps[i][name]
            target = self._run_step(name, body, scope)
            if target is None:
                i += 1
            elif target == "end":
                raise _Return(None)
            elif target in names:
                i = names.index(target)
            else:
                return target  # a jump out of a nested steps block
        return None

    def _run_step(self, name: str, body: dict, scope: dict) -> str | None:
        self.steps_run += 1
        if self.steps_run > MAX_STEPS:
            raise WorkflowError(f"more than {MAX_STEPS} steps executed: a loop without exit?")
        if not isinstance(body, dict):
            raise WorkflowError(f"step {name!r} must be a map")
        unknown = set(body) - STEP_KEYS
        if unknown:
            raise WorkflowError(f"step {name!r} uses {sorted(unknown)}, not supported by the embedded engine "
                                f"(supported: {sorted(STEP_KEYS)})")
        if "try" in body:
            return self._run_try(name, body, scope)
        if "assign" in body:
            for item in body["assign"]:
                (target, expr), = item.items()
                self._assign(scope, target, resolve(expr, scope))
        if "call" in body:
            value = self._call(name, body["call"], resolve(body.get("args", {}), scope), scope)
            if "result" in body:
                self._assign(scope, body["result"], value)
        if "steps" in body:
            target = self._run_steps(body["steps"], scope)
            if target:
                return target
        if "switch" in body:
            for cond in body["switch"]:
                if resolve(cond["condition"], scope):
                    if "steps" in cond:
                        target = self._run_steps(cond["steps"], scope)
                        if target:
                            return target
                    if "return" in cond:
                        raise _Return(resolve(cond["return"], scope))
                    if "raise" in cond:
                        raise WorkflowsRuntimeError(self._error_payload(resolve(cond["raise"], scope)))
                    if "next" in cond:
                        return cond["next"]
                    break
        if "raise" in body:
            raise WorkflowsRuntimeError(self._error_payload(resolve(body["raise"], scope)))
        if "return" in body:
            raise _Return(resolve(body["return"], scope))
        return body.get("next")

    @staticmethod
    def _error_payload(value: Any) -> dict:
        return value if isinstance(value, dict) else {"message": str(value), "tags": ["RaisedError"]}

    def _assign(self, scope: dict, target: str, value: Any) -> None:
        parts = target.split(".")
        if len(parts) == 1:
            scope[target] = value
            return
        node = scope.setdefault(parts[0], {})
        for p in parts[1:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value

    def _run_try(self, name: str, body: dict, scope: dict) -> str | None:
        inner = body["try"]
        policy = body.get("retry")
        attempt = 0
        while True:
            try:
                if "steps" in inner:
                    target = self._run_steps(inner["steps"], scope)
                else:
                    target = self._run_step(name, inner, scope)
                return target or body.get("next")
            except WorkflowsRuntimeError as exc:
                if policy and attempt < int(resolve(policy.get("max_retries", 0), scope)) \
                        and self._retryable(resolve(policy.get("predicate", DEFAULT_RETRY_PREDICATE), scope),
                                            exc.payload):
                    backoff = policy.get("backoff", {})
                    delay = float(backoff.get("initial_delay", 1)) * float(backoff.get("multiplier", 2)) ** attempt
                    self.sleep(min(delay, float(backoff.get("max_delay", 60))))
                    attempt += 1
                    continue
                if "except" in body:
                    exc_spec = body["except"]
                    scope[exc_spec.get("as", "e")] = exc.payload
                    target = self._run_steps(exc_spec.get("steps", []), scope)
                    return target or body.get("next")
                raise

    @staticmethod
    def _retryable(predicate: Any, payload: dict) -> bool:
        if predicate != DEFAULT_RETRY_PREDICATE:
            raise WorkflowError(f"retry predicate {predicate!r} is not supported (use ${{http.default_retry_predicate}})")
        tags = set(payload.get("tags", []))
        return payload.get("code") in RETRYABLE_CODES or bool(tags & {"ConnectionError", "TimeoutError"})

    # -- calls ----------------------------------------------------------------------------------
    def _call(self, step: str, target: str, args: dict, scope: dict) -> Any:
        if target in ("http.post", "http.get"):
            return self._http(step, "POST" if target == "http.post" else "GET", args)
        if target == "sys.log":
            return None
        if target in self.workflow and target != "main":
            sub = self.workflow[target]
            params = sub.get("params") or []
            missing = [p for p in params if isinstance(p, str) and p not in args]
            if missing:
                raise WorkflowError(f"step {step!r}: subworkflow {target!r} needs params {missing}")
            t0 = time.perf_counter()
            result = self._run_workflow(target, sub, dict(args))
            self.on_event({"event": "step", "step": step, "ms": round((time.perf_counter() - t0) * 1000, 2),
                           "result": result})
            return result
        raise WorkflowError(f"step {step!r}: call target {target!r} is not supported by the embedded engine "
                            "(supported: http.post, http.get, sys.log, subworkflows)")

    def _http(self, step: str, method: str, args: dict) -> dict:
        url = args.get("url")
        if not url:
            raise WorkflowError(f"step {step!r}: http call without url")
        if "timeout" not in args:
            raise WorkflowError(f"step {step!r}: every http call needs an explicit timeout")
        headers = args.get("headers")
        if headers is not None and not isinstance(headers, dict):
            raise WorkflowError(f"step {step!r}: http headers must be a map")
        sent = {str(k): str(v) for k, v in (headers or {}).items() if v not in (None, "")}  # "" = no header
        if sent:  # only calls with headers pass them (every transport in relayrag.engine takes them)
            status, body = self.transport(method, url, args.get("body"), float(args["timeout"]), headers=sent)
        else:
            status, body = self.transport(method, url, args.get("body"), float(args["timeout"]))
        if status >= 400:
            message = body.get("error") if isinstance(body, dict) else str(body)
            raise WorkflowsRuntimeError({"tags": ["HttpError"], "code": status, "message": f"HTTP {status}: {message}",
                                         "body": body})
        return {"code": status, "body": body, "headers": {}}
