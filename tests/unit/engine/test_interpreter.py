import pytest
import yaml

from relayrag.engine.expr import WorkflowsRuntimeError, evaluate, resolve
from relayrag.engine.interpreter import Interpreter, load_workflow
from relayrag.errors import WorkflowError


def test_expressions():
    scope = {"args": {"a": 2, "m": {"k": "v"}}, "s": "x"}
    assert evaluate('args.a * 3 + 1', scope) == 7
    assert evaluate('map.get(args, "missing")', scope) is None
    assert evaluate('default(map.get(args, "missing"), "d")', scope) == "d"
    assert evaluate('args.m.k == "v" and not (args.a > 5)', scope) is True
    assert evaluate('args["m"]["k"] + s', scope) == "vx"
    assert evaluate('json.decode("{\\"a\\": 1}")', scope) == {"a": 1}
    assert evaluate('len(args.m)', scope) == 1
    assert resolve({"x": "${args.a}", "y": ["${s}", "lit"]}, scope) == {"x": 2, "y": ["x", "lit"]}


def test_expression_errors_are_clear():
    with pytest.raises(WorkflowsRuntimeError, match="not defined"):
        evaluate("nope", {})
    with pytest.raises(WorkflowsRuntimeError, match="not found"):
        evaluate("a.b", {"a": {}})
    with pytest.raises(WorkflowError, match="not supported"):
        evaluate("__import__('os')", {})
    with pytest.raises(WorkflowError, match="not supported"):
        evaluate("(lambda: 1)()", {})
    with pytest.raises(WorkflowError):
        evaluate("a.__class__", {"a": 1}) if False else evaluate("[x for x in y]", {"y": []})


WF = """
main:
  params: [args]
  steps:
    - init:
        assign:
          - n: 0
    - loop:
        call: bump
        args:
          value: ${n}
        result: n
    - check:
        switch:
          - condition: ${n < args.limit}
            next: loop
        next: done
    - done:
        return: ${n}
bump:
  params: [value]
  steps:
    - r:
        return: ${value + 1}
"""


def test_loop_switch_subworkflow_and_events():
    events = []
    out = Interpreter(load_workflow(WF), transport=None, on_event=events.append).run({"limit": 3})
    assert out == 3
    assert [e["step"] for e in events] == ["loop", "loop", "loop"]


def test_http_retry_on_503_then_success_no_retry_on_400():
    calls = []

    def transport(method, url, body, timeout):
        calls.append(url)
        if url == "u://flaky" and len(calls) < 3:
            return 503, {"error": "busy"}
        if url == "u://bad":
            return 400, {"error": "invalid"}
        return 200, {"ok": body}

    wf = yaml.safe_load("""
main:
  params: [args]
  steps:
    - call1:
        try:
          call: http.post
          args:
            url: ${args.url}
            body:
              x: 1
            timeout: 5
          result: r
        retry:
          predicate: ${http.default_retry_predicate}
          max_retries: 3
          backoff: {initial_delay: 1, max_delay: 4, multiplier: 2}
    - out:
        return: ${r.body}
""")
    sleeps = []
    it = Interpreter(wf, transport, sleep=sleeps.append)
    assert it.run({"url": "u://flaky"}) == {"ok": {"x": 1}}
    assert sleeps == [1.0, 2.0]
    calls.clear()
    with pytest.raises(WorkflowsRuntimeError) as ei:
        Interpreter(wf, transport, sleep=sleeps.append).run({"url": "u://bad"})
    assert ei.value.payload["code"] == 400 and len(calls) == 1


def test_unsupported_constructs_are_errors():
    wf = yaml.safe_load("""
main:
  steps:
    - l:
        for:
          value: v
          in: [1, 2]
          steps: []
""")
    with pytest.raises(WorkflowError, match="for"):
        Interpreter(wf, None).run(None)
    with pytest.raises(WorkflowError, match="timeout"):
        Interpreter(yaml.safe_load("""
main:
  steps:
    - c:
        call: http.post
        args: {url: "x://y"}
"""), lambda *a: (200, {})).run(None)
    with pytest.raises(WorkflowError, match="main"):
        load_workflow("other: {}")


def test_rag_yaml_parses_and_every_call_has_timeout_and_retry():
    from relayrag.engine.local import workflows_dir
    wf = load_workflow((workflows_dir() / "rag.yaml").read_text())
    steps = {next(iter(s)): s[next(iter(s))] for s in wf["main"]["steps"]}
    stage_calls = [n for n, b in steps.items() if b.get("call") == "call_stage"]
    assert stage_calls == ["classify", "pages", "hyde", "retrieve", "fuse_pages", "rerank", "grade", "generate",
                           "hallucination_check", "sql"]
    post = wf["call_stage"]["steps"][0]["post"]
    assert post["try"]["args"]["timeout"] > 0
    assert post["retry"]["predicate"] == "${http.default_retry_predicate}"
