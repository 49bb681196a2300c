"""Issue 28 item 6: a `relayrag ask` process pays only for what the ask runs. The embedded engine reaches the
stages through their HTTP adapter without a web framework, stage modules are imported on first use, BM25
postings are queried without scipy, and the model cache stores the ONNX graph's weights as external data. Each
of these is checked here by what a fresh process imports or loads (benchmarks/bench_cold_start.py times it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
# what an embedded ask used to import and does not run: web frameworks (the HTTP hop is in-process), the HTTP
# client (only for http:// stage URLs), scipy (BM25 postings are read as arrays), bm25s (its stopwords file
# only), sqlglot (only to guard SQL)
NOT_ON_THE_ASK_PATH = ("flask", "werkzeug", "functions_framework", "cloudevents", "httpx", "scipy", "bm25s",
                       "sqlglot")

ASK_IN_A_FRESH_PROCESS = """
import json, runpy, sys
sys.argv = ["relayrag", "ask", {question!r}, "-c", "docs", "--json"]
try:
    runpy.run_module("relayrag.cli", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = {heavy!r}
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules if m.split(".")[0] in heavy}})), file=sys.stderr)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("relayrag.stages.", "relayrag.sql.")))), file=sys.stderr)
"""


def test_an_embedded_ask_imports_no_web_framework_http_client_or_scipy(home, ctx, small_corpus, tmp_path):
    from relayrag.ingest.pipeline import ingest
    assert not ingest(ctx, small_corpus, "docs").failed
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_LLM": "none", "HF_HUB_OFFLINE": "1",
           "RELAYRAG_MODEL_CACHE": str(tmp_path / "models"), "PYTHONPATH": str(REPO / "functions")}
    code = ASK_IN_A_FRESH_PROCESS.format(question="How many worker bees live in a colony in summer?",
                                         heavy=NOT_ON_THE_ASK_PATH)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["route"] == "rag" and result["grounded"] and "60,000" in result["answer"]  # the ask really ran
    assert [s["name"] for s in result["stages"]][:3] == ["classify", "hyde", "retrieve"]
    heavy, modules = (json.loads(line) for line in out.stderr.strip().splitlines()[-2:])
    assert heavy == []
    assert "relayrag.stages.sql" not in modules  # a stage the rag route does not call is never imported
    assert "relayrag.stages.retrieve" in modules
    # a collection without a warehouse: classify reads where warehouses are recorded (relayrag.sql.registry) only
    assert "relayrag.sql.registry" in modules
    assert "relayrag.sql.warehouse" not in modules and "relayrag.sql.config" not in modules


def test_stages_are_imported_on_first_use():
    code = ("import sys\nfrom relayrag.stage_registry import STAGES\nfrom relayrag.catalog import HTTP_STAGES\n"
            "before = [n for n in HTTP_STAGES if f'relayrag.stages.{n}' in sys.modules]\n"
            "assert list(STAGES) == list(HTTP_STAGES) and len(STAGES) == len(HTTP_STAGES) and 'sql' in STAGES\n"
            "assert 'nosuch' not in STAGES and [n for n in HTTP_STAGES if f'relayrag.stages.{n}' in sys.modules] == []\n"
            "stage = STAGES['hyde']\n"
            "print(before, stage.name, [n for n in HTTP_STAGES if f'relayrag.stages.{n}' in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO / "functions")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "hyde", "['hyde']"]


def test_an_unknown_stage_is_a_key_error_and_not_found_over_local():
    from relayrag.engine.local import local_transport
    from relayrag.stage_registry import STAGES
    with pytest.raises(KeyError):
        STAGES["nosuch"]
    assert local_transport("POST", "local://nosuch", {}, 5.0) == (404, {"error": "no stage 'nosuch'"})


def test_the_local_request_gets_the_adapters_http_answers(home):
    from relayrag.engine.local import LocalRequest
    from relayrag.stage_http import handle
    from relayrag.stage_registry import STAGES
    hyde = STAGES["hyde"]
    text, status, headers = handle(hyde, LocalRequest("get", "{}"))
    assert (status, json.loads(text)["error"]) == (405, "use POST with a JSON body")
    assert headers == {"Content-Type": "application/json"}
    text, status, _ = handle(hyde, LocalRequest("POST", "{not json"))
    assert (status, json.loads(text)["error"]) == (400, "request body is not valid JSON")
    text, status, _ = handle(hyde, LocalRequest("POST", json.dumps({"question": "x"})))
    body = json.loads(text)
    assert status == 400 and body["error"] == "invalid request" and body["details"][0]["field"] == "run_id"
    req = LocalRequest("post", '{"a": "ü"}', {"traceparent": "00-abc"})
    assert req.method == "POST" and req.get_json() == {"a": "ü"}
    assert req.headers == {"Content-Type": "application/json", "Content-Length": "11", "traceparent": "00-abc"}
    with pytest.raises(ValueError):
        LocalRequest("POST", "{").get_json()


def test_entry_points_wrap_the_same_adapter():
    """functions/main.py's functions answer through relayrag.stage_http.handle (a werkzeug request here)."""
    from werkzeug.test import EnvironBuilder

    from relayrag import entrypoints
    request = EnvironBuilder(method="GET", path="/grade").get_request()
    text, status, _ = entrypoints.grade(request)
    assert status == 405 and json.loads(text) == {"error": "use POST with a JSON body", "stage": "grade"}


def test_postings_read_without_scipy_score_as_the_scipy_matrix_does():
    from relayrag.retrieval.bm25 import BM25Index, TermStats
    texts = ["the queen bee lays eggs", "worker bees dance", "a rail gauge of 1,435 mm", "bees and bees",
             "東京の人口"]
    built = TermStats.from_texts(texts)
    read = TermStats.from_bytes(built.to_bytes())
    assert read._tf is None  # no scipy matrix until one is asked for
    for q in ("bee", "bees dance", "rail", "東京", "nothing here"):
        assert np.array_equal(BM25Index([(read, None)]).scores(q), BM25Index([(built, None)]).scores(q))
    assert (read.tf != built.tf).nnz == 0 and read.tf.shape == built.tf.shape  # built on demand, same matrix
    assert TermStats.from_bytes(read.to_bytes()).to_bytes() == built.to_bytes()


@pytest.mark.parametrize("field, bad, message", [
    ("indptr", lambda a: a[:-1], "entries for"),
    ("indptr", lambda a: np.where(np.arange(a.size) == a.size - 1, a[-1] + 5, a), "does not span"),
    ("indices", lambda a: a + 1000, "outside"),
    ("indptr", lambda a: np.concatenate([a[:1], a[-1:], a[2:]]), "decreases"),  # a middle offset past the next
])
def test_torn_postings_are_refused_when_read(field, bad, message):
    import io

    from relayrag.retrieval.bm25 import TermStats
    raw = TermStats.from_texts(["alpha beta", "beta gamma delta", "delta epsilon alpha"]).to_bytes()
    with np.load(io.BytesIO(raw)) as z:
        arrays = {k: z[k] for k in z.files}
    arrays[field] = bad(arrays[field])
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with pytest.raises(ValueError, match=message):
        TermStats.from_bytes(buf.getvalue())
