"""workflows-emulator behind the Workflows Executions API (gRPC), on 127.0.0.1: a test shim.

Runs in workflows-emulator's own venv (the emulator pins fastapi<0.112, which conflicts with fastmcp; see
docs/DESIGN.md "Emulated cloud") with google-cloud-workflows added there; never imports relayrag. The
emulator executes the workflow (`workflows_emulator.main.execute_workflow`, what its own `serve` command
runs); this file only puts the service's API in front of it, so relayrag's cloud engine talks to it with
the real `ExecutionsClient` over a real gRPC channel:

- `CreateExecution(parent, execution.argument)` starts the execution in a thread and answers an Execution
  `{name, state: ACTIVE, argument, start_time}` (the emulator's `serve` is REST, blocks, binds 0.0.0.0
  and answers the workflow's return value instead);
- `GetExecution(name)` answers `{name, state, result | error{payload, context}, ...}` like the service;
- the argument is bound to `main`'s one parameter, as Cloud Workflows does (the emulator's `serve` passes
  the argument as the parameter map itself, so `main.params: [args]` would find no `args`).

Every workflow id runs the one YAML given by --source. The variables Cloud Workflows sets
(GOOGLE_CLOUD_WORKFLOW_EXECUTION_ID, ...) are set per execution, as the emulator's `serve` does; stage URLs
come from RELAYRAG_STAGE_URLS in this process's environment, as a deployment injects them.

Usage: python workflows_emulator_server.py --source workflows/rag.yaml --port 8123
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import threading
import traceback
import uuid
from concurrent import futures

import grpc
from google.cloud.workflows.executions_v1 import (CreateExecutionRequest, Execution, GetExecutionRequest)
from google.protobuf import timestamp_pb2
from workflows_emulator.main import execute_workflow, load_workflow

SERVICE = "google.cloud.workflows.executions.v1.Executions"
_env_lock = threading.Lock()  # the emulator reads its environment variables from os.environ


def _now() -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.GetCurrentTime()
    return ts


def _error_payload(exc: BaseException) -> str:
    payload = getattr(exc, "payload", None)
    if payload is not None:
        data = payload.to_dict() if hasattr(payload, "to_dict") else payload
        try:
            return json.dumps(data, default=str)
        except (TypeError, ValueError):
            return json.dumps({"message": str(data)})
    return json.dumps({"message": f"{type(exc).__name__}: {exc}", "tags": [type(exc).__name__]})


class Executions:
    def __init__(self, source: str):
        self.source = source
        self.executions: dict[str, Execution] = {}

    def create(self, request: CreateExecutionRequest, context: grpc.ServicerContext) -> Execution:
        argument = request.execution.argument or "{}"
        try:
            params = json.loads(argument)
        except ValueError:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "execution.argument is not JSON")
        parts = request.parent.split("/")
        if len(parts) != 6 or parts[0::2] != ["projects", "locations", "workflows"]:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad parent {request.parent!r}")
        exec_id = uuid.uuid4().hex
        ex = Execution(name=f"{request.parent}/executions/{exec_id}", state=Execution.State.ACTIVE,
                       argument=argument, start_time=_now())
        self.executions[ex.name] = ex

        def run() -> None:
            try:
                config = load_workflow(self.source)  # reloaded per execution, like the emulator's serve
                # Cloud Workflows binds the argument to main's one parameter; the emulator wants the
                # parameter map (its `run` command wraps the data the same way; its `serve` does not)
                names = (config.get("main") or {}).get("params") or []
                runtime = {names[0]: params} if names else {}
                with _env_lock:
                    os.environ.update({"GOOGLE_CLOUD_PROJECT_ID": parts[1], "GOOGLE_CLOUD_LOCATION": parts[3],
                                       "GOOGLE_CLOUD_WORKFLOW_ID": parts[5],
                                       "GOOGLE_CLOUD_WORKFLOW_EXECUTION_ID": exec_id})
                out = execute_workflow(config, runtime)
                done = Execution(name=ex.name, state=Execution.State.SUCCEEDED, argument=argument,
                                 start_time=ex.start_time, end_time=_now(), result=json.dumps(out, default=str))
            except BaseException as exc:  # reported as the execution's error, like the service
                done = Execution(name=ex.name, state=Execution.State.FAILED, argument=argument,
                                 start_time=ex.start_time, end_time=_now(),
                                 error=Execution.Error(payload=_error_payload(exc),
                                                       context=traceback.format_exc(limit=5)))
            self.executions[ex.name] = done

        threading.Thread(target=run, daemon=True).start()
        return ex

    def get(self, request: GetExecutionRequest, context: grpc.ServicerContext) -> Execution:
        ex = self.executions.get(request.name)
        if ex is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"execution {request.name} not found")
        return ex


def serve(source: str, host: str, port: int) -> grpc.Server:
    svc = Executions(source)
    handlers = {
        "CreateExecution": grpc.unary_unary_rpc_method_handler(
            svc.create, request_deserializer=CreateExecutionRequest.deserialize,
            response_serializer=Execution.serialize),
        "GetExecution": grpc.unary_unary_rpc_method_handler(
            svc.get, request_deserializer=GetExecutionRequest.deserialize, response_serializer=Execution.serialize),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_insecure_port(f"{host}:{port}")
    server.start()
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="workflow YAML every execution runs")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    server = serve(args.source, args.host, args.port)
    print(f"workflows-emulator Executions API on {args.host}:{args.port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
