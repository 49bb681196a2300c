"""Workflow tools: `workflows/*.yaml` files that declare themselves MCP tools in comment lines."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Protocol

from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from pydantic import Field

from relayrag.errors import RelayragError

log = logging.getLogger("relayrag.mcp")

BUILTIN_TOOLS = ("ask", "search", "ingest", "delete_document", "list_collections", "list_documents", "get_run",
                 "sql_query", "classify", "feedback")
RESERVED_ARGS = ("run_id", "urls")  # set by the gateway, never by a client (see DESIGN.md)

# -- workflow tools: declarations in comment lines ---------------------------------------------------

PARAM_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict,
               "array": list}
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_DIRECTIVE = re.compile(r"^\s*#\s*mcp-(tool|description|param)\s*:\s*(.*?)\s*$")
_DESC_SEP = re.compile(r"\s+(?:—|--)(?:\s+|$)")


class WorkflowSpecError(RelayragError):
    """A workflow's `# mcp-...` declaration lines are malformed."""


@dataclass(frozen=True)
class WorkflowParam:
    name: str
    type: str
    required: bool
    description: str = ""
    default: Any = None
    enum: tuple | None = None

    def schema(self) -> dict:
        s: dict[str, Any] = {"type": self.type}
        if self.description:
            s["description"] = self.description
        if self.enum:
            s["enum"] = list(self.enum)
        if self.default is not None:
            s["default"] = self.default
        return s


@dataclass(frozen=True)
class WorkflowToolSpec:
    name: str                      # tool name
    workflow: str                  # file stem, as relayrag.engine.local.run_workflow takes it
    description: str
    params: tuple[WorkflowParam, ...] = field(default_factory=tuple)

    def input_schema(self) -> dict:
        return {"type": "object", "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required], "additionalProperties": False}

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate a client's arguments against the declaration; defaults applied. Raises ToolError."""
        arguments = dict(arguments or {})
        by_name = {p.name: p for p in self.params}
        unknown = sorted(set(arguments) - set(by_name))
        if unknown:
            raise ToolError(f"{self.name}: unknown argument(s) {unknown}; accepted: {sorted(by_name) or 'none'}")
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name not in arguments or arguments[p.name] is None:
                if p.required:
                    raise ToolError(f"{self.name}: missing required argument {p.name!r} ({p.type})")
                if p.default is not None:
                    out[p.name] = p.default
                continue
            v = arguments[p.name]
            ok = isinstance(v, PARAM_TYPES[p.type])  # type: ignore[arg-type]  # a type or a tuple of types and not (p.type in ("integer", "number") and isinstance(v, bool))
            if not ok:
                raise ToolError(f"{self.name}: argument {p.name!r} must be {p.type}, got {type(v).__name__}")
            if p.enum and v not in p.enum:
                raise ToolError(f"{self.name}: argument {p.name!r} must be one of {list(p.enum)}, got {v!r}")
            out[p.name] = v
        return out


def _parse_value(raw: str, type_: str, where: str) -> Any:
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw  # a bare word: a string
    if type_ != "string" and isinstance(value, str):
        raise WorkflowSpecError(f"{where}: default {raw!r} is not a JSON {type_}")
    if type_ == "string" and not isinstance(value, str):
        value = raw
    return value


def parse_param(text: str, where: str) -> WorkflowParam:
    head, *rest = _DESC_SEP.split(text, maxsplit=1)
    description = rest[0].strip() if rest else ""
    tokens = head.split()
    if len(tokens) < 2:
        raise WorkflowSpecError(f"{where}: expected `# mcp-param: NAME TYPE [required|optional] [default=VALUE] "
                                f"[enum=A|B] — description`, got {text!r}")
    name, type_, *opts = tokens
    if not PARAM_NAME.match(name):
        raise WorkflowSpecError(f"{where}: invalid parameter name {name!r}")
    if name in RESERVED_ARGS:
        raise WorkflowSpecError(f"{where}: {name!r} is set by the gateway and cannot be a tool parameter "
                                f"(reserved: {', '.join(RESERVED_ARGS)})")
    if type_ not in PARAM_TYPES:
        raise WorkflowSpecError(f"{where}: unknown type {type_!r}; valid: {', '.join(PARAM_TYPES)}")
    required, default, enum = False, None, None
    for opt in opts:
        if opt in ("required", "optional"):
            required = opt == "required"
        elif opt.startswith("default="):
            default = _parse_value(opt[len("default="):], type_, where)
        elif opt.startswith("enum="):
            enum = tuple(_parse_value(v, type_, where) for v in opt[len("enum="):].split("|") if v)
            if not enum:
                raise WorkflowSpecError(f"{where}: empty enum")
        else:
            raise WorkflowSpecError(f"{where}: unknown option {opt!r} (use required, optional, default=…, enum=…)")
    if required and default is not None:
        raise WorkflowSpecError(f"{where}: parameter {name!r} is required and has a default")
    return WorkflowParam(name, type_, required, description, default, enum)


def parse_tool_spec(text: str, workflow: str) -> WorkflowToolSpec | None:
    """The tool declared by a workflow file's comment lines, or None if it declares none.

    Grammar (full-line YAML comments, anywhere in the file; everything else is ignored):
        # mcp-tool: NAME [— one-line description]
        # mcp-description: more description (repeatable; lines are joined with spaces)
        # mcp-param: NAME TYPE [required|optional] [default=VALUE] [enum=A|B|C] [— description]
    TYPE is a JSON Schema type: string, integer, number, boolean, object, array. VALUE is JSON or a bare
    word (a string). `--` may stand for `—`. Raises WorkflowSpecError naming the file and line."""
    name = None
    description: list[str] = []  # lines, joined into `desc` below
    params: list[WorkflowParam] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        kind, rest = m.groups()
        where = f"{workflow}.yaml line {lineno}"
        if kind == "tool":
            if name is not None:
                raise WorkflowSpecError(f"{where}: a second `# mcp-tool:` line (one tool per workflow)")
            head, *desc = _DESC_SEP.split(rest, maxsplit=1)
            name = head.strip()
            if not TOOL_NAME.match(name):
                raise WorkflowSpecError(f"{where}: invalid tool name {name!r} (letters, digits, '_', '-'; "
                                        "starting with a letter; max 64)")
            if desc and desc[0].strip():
                description.insert(0, desc[0].strip())
        elif kind == "description":
            description.append(rest)
        else:
            p = parse_param(rest, where)
            if any(q.name == p.name for q in params):
                raise WorkflowSpecError(f"{where}: parameter {p.name!r} declared twice")
            params.append(p)
    if name is None:
        if params or description:
            raise WorkflowSpecError(f"{workflow}.yaml: `# mcp-param:`/`# mcp-description:` lines without a "
                                    "`# mcp-tool: NAME` line")
        return None
    summary = " ".join(d for d in description if d) or f"Run the {workflow}.yaml workflow."
    return WorkflowToolSpec(name=name, workflow=workflow, description=summary, params=tuple(params))


def load_tool_spec(path: Path) -> WorkflowToolSpec | None:
    """Parse the declaration and check that the YAML is a workflow that can take the arguments."""
    from relayrag.engine.interpreter import load_workflow
    text = path.read_text(encoding="utf-8")
    spec = parse_tool_spec(text, path.stem)
    if spec is None:
        return None
    try:
        wf = load_workflow(text)
    except RelayragError as exc:
        raise WorkflowSpecError(f"{path.name}: {exc}") from exc
    main = wf.get("main")
    params = main.get("params") if isinstance(main, dict) else None
    if not isinstance(main, dict) or not isinstance(main.get("steps"), list):
        raise WorkflowSpecError(f"{path.name}: `main` has no steps list")
    if spec.params and (not isinstance(params, list) or len(params) != 1):
        raise WorkflowSpecError(f"{path.name}: declares tool parameters, so `main` must take exactly one "
                                "runtime-argument map, e.g. `params: [args]`")
    return spec


class WorkflowCatalog:
    """The tools declared in a folder of workflow YAMLs, re-read when a file's mtime or size changes."""

    def __init__(self, folder: Callable[[], Path], reserved: tuple[str, ...] = BUILTIN_TOOLS):
        self._folder = folder
        self._reserved = set(reserved)
        self._cache: dict[Path, tuple[tuple[int, int], WorkflowToolSpec | None, str | None]] = {}

    def scan(self) -> dict[str, WorkflowToolSpec]:
        folder = self._folder()
        tools: dict[str, WorkflowToolSpec] = {}
        seen = set()
        paths = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        for path in paths:
            seen.add(path)
            try:
                st = path.stat()
            except OSError:
                continue
            key = (st.st_mtime_ns, st.st_size)
            cached = self._cache.get(path)
            if cached is None or cached[0] != key:
                try:
                    spec, error = load_tool_spec(path), None
                except (RelayragError, OSError, UnicodeDecodeError) as exc:
                    spec, error = None, str(exc)
                    log.warning("workflow %s is not offered as a tool: %s", path.name, error)
                self._cache[path] = (key, spec, error)
            _, spec, _ = self._cache[path]
            if spec is None:
                continue
            if spec.name in self._reserved:
                if cached is None or cached[0] != key:
                    log.warning("workflow %s declares tool %r, a built-in tool name: skipped", path.name, spec.name)
                continue
            if spec.name in tools:
                log.warning("workflow %s declares tool %r, already declared by %s.yaml: skipped",
                            path.name, spec.name, tools[spec.name].workflow)
                continue
            tools[spec.name] = spec
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return tools

    def errors(self) -> dict[str, str]:
        """File name → why it is not offered (malformed declarations), for diagnostics."""
        return {p.name: err for p, (_, _, err) in self._cache.items() if err}


class WorkflowTool(Tool):
    """A tool backed by one workflow file; runs it with the gateway's engine."""

    spec: Annotated[Any, Field(exclude=True)] = None
    gateway: Annotated[Any, Field(exclude=True)] = None

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            ctx = get_context()
        except RuntimeError:
            ctx = None
        result = await self.gateway.run_workflow_tool(self.spec, arguments, ctx)
        return self.convert_result(result)


class WorkflowRunner(Protocol):
    """What the provider needs of the gateway (relayrag.mcp.tools.Gateway implements it): the catalog of
    workflow tools and a way to run one. A protocol here, so this module does not import the gateway's
    (which imports this one)."""

    catalog: WorkflowCatalog

    async def run_workflow_tool(self, spec: WorkflowToolSpec, arguments: dict, ctx: Any) -> dict: ...


class WorkflowToolProvider(Provider):
    """Lists and resolves workflow tools by scanning the folder on every request (no restart needed)."""

    def __init__(self, gateway: WorkflowRunner):
        super().__init__()
        self.gateway = gateway

    def _tool(self, spec: WorkflowToolSpec) -> WorkflowTool:
        return WorkflowTool(name=spec.name, description=spec.description, parameters=spec.input_schema(),
                            tags={"workflow"}, meta={"relayrag": {"workflow": f"{spec.workflow}.yaml"}},
                            spec=spec, gateway=self.gateway)

    async def _list_tools(self) -> list[Tool]:
        return [self._tool(s) for s in self.gateway.catalog.scan().values()]

    async def _get_tool(self, name: str, version=None) -> Tool | None:
        spec = self.gateway.catalog.scan().get(name)
        return self._tool(spec) if spec else None
