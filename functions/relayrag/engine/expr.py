"""Cloud Workflows expressions (`${...}`), the subset relayrag's YAML uses, evaluated safely.

The expression grammar of Workflows (operators + - * / % //, comparisons, and/or/not, in, literals,
dotted and indexed access, function calls) parses as a Python expression, so we parse with `ast` and walk
only whitelisted nodes: no attribute access on Python objects, no builtins, only the Workflows functions
below. Reference: https://cloud.google.com/workflows/docs/reference/syntax/expressions
"""

from __future__ import annotations

import ast
import contextvars
import json
import os
from collections.abc import Mapping
from typing import Any, Callable

from relayrag.errors import WorkflowError


class WorkflowsRuntimeError(Exception):
    """An error raised inside a workflow (like Workflows' error maps: tags, message, code, body)."""

    def __init__(self, payload: dict):
        super().__init__(payload.get("message", str(payload)))
        self.payload = payload


DEFAULT_RETRY_PREDICATE = "http.default_retry_predicate"
RETRYABLE_CODES = {429, 502, 503, 504}


def _default(value, fallback):
    return fallback if value is None else value


def _map_get(mapping, key):
    if not isinstance(mapping, dict):
        raise WorkflowsRuntimeError({"tags": ["TypeError"], "message": "map.get: first argument is not a map"})
    return mapping.get(key)


def _json_decode(data):
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    try:
        return json.loads(data)
    except (TypeError, ValueError) as exc:
        raise WorkflowsRuntimeError({"tags": ["ValueError"], "message": f"json.decode: {exc}"}) from exc


ENV_OVERLAY: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("relayrag_workflow_env",
                                                                                   default=None)
"""Environment variables one embedded run sees through `sys.get_env` in place of (over) the process's: the
embedded engine's route for deployment settings such as RELAYRAG_STAGE_URLS, which a deployed workflow
reads from its own environment and never from execution arguments (Interpreter.run(env=...))."""


def _get_env(name: str) -> str | None:
    overlay = ENV_OVERLAY.get()
    if overlay is not None and name in overlay:
        return overlay[name]
    return os.environ.get(name)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "default": _default,
    "len": lambda v: len(v),
    "keys": lambda m: list(m.keys()),
    "string": lambda v: json.dumps(v) if isinstance(v, (dict, list)) else str(v),
    "int": lambda v: int(v),
    "double": lambda v: float(v),
    "map.get": _map_get,
    "sys.get_env": lambda name: _get_env(name),
    "json.decode": _json_decode,
    "json.encode_to_string": lambda v: json.dumps(v),
}
CONSTANTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b, ast.FloorDiv: lambda a, b: a // b}
_CMPS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
         ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
         ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def evaluate(expr: str, scope: dict[str, Any]) -> Any:
    """Evaluate one expression body (without `${ }`) in `scope`. Raises WorkflowsRuntimeError
    (KeyError / TypeError tags) on runtime failure and WorkflowError on unsupported syntax."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise WorkflowError(f"cannot parse expression ${{{expr}}}: {exc.msg}") from exc
    return _eval(tree.body, scope, expr)


def _eval(node: ast.AST, scope: dict, src: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in scope:
            return scope[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise WorkflowsRuntimeError({"tags": ["KeyError"], "message": f"variable {node.id!r} not defined"})
    if isinstance(node, ast.Attribute):
        dotted = _dotted(node)
        if dotted == DEFAULT_RETRY_PREDICATE:
            return DEFAULT_RETRY_PREDICATE
        base = _eval(node.value, scope, src)
        if not isinstance(base, dict):
            raise WorkflowsRuntimeError({"tags": ["TypeError"], "message": f"{dotted}: not a map"})
        if node.attr not in base:
            raise WorkflowsRuntimeError({"tags": ["KeyError"], "message": f"key {node.attr!r} not found ({dotted})"})
        return base[node.attr]
    if isinstance(node, ast.Subscript):
        base = _eval(node.value, scope, src)
        key = _eval(node.slice, scope, src)
        try:
            return base[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise WorkflowsRuntimeError({"tags": ["KeyError" if isinstance(exc, KeyError) else "IndexError"],
                                         "message": f"{key!r} not found"}) from exc
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, scope, src), _eval(node.right, scope, src))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, scope, src)
        if isinstance(node.op, ast.Not):
            return not v
        if isinstance(node.op, ast.USub):
            return -v
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_eval(v, scope, src) for v in node.values)
        return any(_eval(v, scope, src) for v in node.values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, scope, src)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, scope, src)
            if type(op) not in _CMPS or not _CMPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.List):
        return [_eval(e, scope, src) for e in node.elts]
    if isinstance(node, ast.Call) and not node.keywords:
        name = _dotted(node.func)
        if name not in FUNCTIONS:
            raise WorkflowError(f"function {name!r} is not supported by the embedded engine (in ${{{src}}}); "
                                f"supported: {', '.join(sorted(FUNCTIONS))}")
        return FUNCTIONS[name](*[_eval(a, scope, src) for a in node.args])
    raise WorkflowError(f"expression construct {type(node).__name__} is not supported by the embedded engine "
                        f"(in ${{{src}}})")


def resolve(value: Any, scope: dict[str, Any]) -> Any:
    """Evaluate `${...}` strings anywhere inside a YAML value (maps and lists recursively)."""
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("${") and s.endswith("}"):
            return evaluate(s[2:-1], scope)
        return value
    if isinstance(value, dict):
        return {k: resolve(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, scope) for v in value]
    return value
