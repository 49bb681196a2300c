"""Dashboard endpoints over a real embedded home: ask with streamed stages, citations, runs and the
waterfall, uploads with per-file progress, delete, bandit, evaluation, warehouse, errors and escaping."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, sql_route_reply
from tests.unit.dashboard.conftest import job_url, read_sse


@pytest.fixture
def docs(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "docs")
    return small_corpus


def _ask(api, question: str, collection: str = "docs", arm: str = "") -> tuple[list, str]:
    r = api.post("/ask", data={"question": question, "collection": collection, "arm": arm})
    assert r.status_code == 200, r.text
    assert 'hx-ext="sse"' in r.text and 'sse-close="done"' in r.text
    events = read_sse(api, job_url(r.text))
    return events, r.text


def test_ask_streams_each_stage_then_a_cited_answer(api, docs):
    from relayrag.dashboard.telemetry import provider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    spans = InMemorySpanExporter()
    provider(spans)
    events, _ = _ask(api, "How many eggs does the queen bee lay per day?", arm="bm25")
    names = [e for e, _ in events]
    assert names[-1] == "done" and names[-2] == "result"
    stages = [re.search(r'data-stage="([a-z_]+)"', d).group(1) for e, d in events if e == "stage"]
    assert stages[:3] == ["classify", "hyde", "retrieve"] and "generate" in stages
    assert "arm bm25" in next(d for e, d in events if e == "stage" and 'data-stage="retrieve"' in d)
    result = events[-2][1]
    assert "2,000 eggs" in result
    run_id = re.search(r'data-run="([0-9a-f]+)"', result).group(1)
    assert f'hx-get="/runs/{run_id}/citations/1"' in result and "bees.txt, page 1" in result
    assert "grounded" in result

    cit = api.get(f"/runs/{run_id}/citations/1")
    assert cit.status_code == 200 and "bees.txt" in cit.text and "2,000 eggs" in cit.text
    assert api.get(f"/runs/{run_id}/citations/9").status_code == 400

    # one span per stage with the run's attributes, children of the run's span
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "rag")
    by_stage = {s.attributes["relayrag.stage"]: s for s in finished if s.name != "rag"}
    assert set(stages) == set(by_stage)
    assert all(s.parent.span_id == root.context.span_id for s in by_stage.values())
    assert by_stage["retrieve"].attributes["relayrag.arm"] == "bm25"
    assert by_stage["generate"].attributes["relayrag.run_id"] == run_id and by_stage["generate"].attributes["relayrag.method"]
    assert root.attributes["relayrag.route"] == "rag" and root.attributes["relayrag.arm"] == "bm25"


def test_runs_list_run_page_waterfall_and_json(api, docs):
    events, _ = _ask(api, "What is the standard rail gauge?")
    run_id = re.search(r'data-run="([0-9a-f]+)"', events[-2][1]).group(1)
    runs = api.get("/runs")
    assert runs.status_code == 200 and f"/runs/{run_id}" in runs.text and "What is the standard rail gauge?" in runs.text
    page = api.get(f"/runs/{run_id}")
    assert page.status_code == 200
    for label in ("retries", "regenerations", "reward", "arm", "llm_error", "Waterfall"):
        assert label in page.text
    svg = api.get(f"/runs/{run_id}/waterfall.svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in svg.text and "classify" in svg.text and "generate" in svg.text
    assert "default-src 'none'" in svg.headers["content-security-policy"]
    data = api.get(f"/api/runs/{run_id}").json()
    assert data["result"]["run_id"] == run_id and [t["name"] for t in data["trace"]][0] == "classify"
    assert "candidates" not in data["record"]
    missing = api.get("/runs/nope", headers={"accept": "text/html"})
    assert missing.status_code == 404 and "unknown run_id" in missing.text
    assert api.get("/api/runs/nope").json() == {"error": "unknown run_id 'nope'"}


def test_ask_errors_are_messages(api, docs):
    r = api.post("/ask", data={"question": "  ", "collection": "docs"}, headers={"hx-request": "true"})
    assert r.status_code == 400 and "the question is empty" in r.text and 'role="alert"' in r.text
    r = api.post("/ask", data={"question": "q", "collection": "../etc"})
    assert r.status_code == 400 and "collection" in r.text
    events, _ = _ask(api, "anything", collection="nothere")
    last = events[-2][1]
    assert events[-2][0] == "result" and "unknown collection 'nothere'" in last.replace("&#39;", "'")
    assert "Traceback" not in last
    events, _ = _ask(api, "anything", arm="sideways")
    assert "retrieval arm" in events[-2][1]
    assert api.get("/jobs/unknown/events").status_code == 404


def test_upload_ingests_with_per_file_progress_then_delete(api, home, tmp_path):
    pdf = (EXAMPLES / "pdfs" / "federal-register-2020-17221.pdf").read_bytes()
    files = [("files", ("directive.pdf", pdf, "application/pdf")),
             ("files", ("../../escape.md", b"# Escape\n\nThis note tries to leave the upload folder.", "text/markdown")),
             ("files", ("broken.pdf", b"%PDF-1.4 not really", "application/pdf")),
             ("files", ("table.csv", b"a,b\n1,2\n", "text/csv"))]
    r = api.post("/collections/up/upload", files=files)
    assert r.status_code == 200, r.text
    events = read_sse(api, job_url(r.text))
    done = {}
    for e, d in events:
        if e == "file":
            m = re.search(r'data-file="([^"]+)" data-state="([a-z]+)"', d)
            done[m.group(1)] = (m.group(2), d)
    assert done["directive.pdf"][0] == "ingested"
    live = [d for e, d in events if e == "file" and 'data-file="directive.pdf" data-state="loading"' in d]
    assert any("loaded directive.pdf" in d for d in live)          # progress inside the file's ingestion
    assert all('hx-swap-oob="true"' in d for d in live[1:])          # ... replacing its line in place
    assert done["escape.md"][0] == "ingested"          # the base name only: it lands in the source area
    assert done["broken.pdf"][0] == "failed" and "broken.pdf" in done["broken.pdf"][1]
    assert done["table.csv"][0] == "failed" and "unsupported file type" in done["table.csv"][1]
    assert "2 ingested" in events[-2][1] and "2 failed" in events[-2][1]
    src = home / "sources" / "up"
    assert sorted(p.name for p in src.iterdir()) == ["directive.pdf", "escape.md"]  # failed uploads are not kept
    assert not (home.parent / "escape.md").exists() and not (home / "escape.md").exists()

    page = api.get("/collections/up")
    assert "directive.pdf" in page.text and "escape.md" in page.text
    key = str(src / "directive.pdf")
    r = api.post("/collections/up/delete", data={"path": key})
    assert r.status_code == 200 and "deleted" in r.text
    assert not (src / "directive.pdf").exists()
    assert "directive.pdf" not in api.get("/collections/up").text
    r = api.post("/collections/up/delete", data={"path": key})
    assert r.status_code == 400 and "has no document" in r.text


def test_upload_size_limit_and_empty_upload(api, home):
    big = b"x" * (1024 * 1024 + 10)  # the app under test allows 1 MB
    r = api.post("/collections/up/upload", files=[("files", ("big.txt", big, "text/plain"))])
    assert r.status_code == 413 and "upload limit" in r.text
    # a chunked body (no Content-Length) is cut off while it is read
    boundary = "b0undary"

    def chunked():
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.txt\"\r\n"
               f"Content-Type: text/plain\r\n\r\n").encode()
        for _ in range(20):
            yield b"y" * 65536
        yield f"\r\n--{boundary}--\r\n".encode()
    r = api.post("/collections/up/upload", content=chunked(),
                 headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 413 and "upload limit" in r.text
    assert list((home / "sources").glob("up/*")) == []  # nothing of the cut-off upload was kept
    r = api.post("/collections/up/upload", data={"x": "1"})
    assert r.status_code == 400 and "choose at least one file" in r.text


def test_document_text_and_file_names_are_escaped(api, home):
    payload = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"
    name = "<img src=x onerror=alert(2)>.txt"  # plain text keeps the markup verbatim as document text
    files = [("files", (name, f"Notes. The launch code is 4242. {payload}".encode(), "text/plain"))]
    events = read_sse(api, job_url(api.post("/collections/xss/upload", files=files).text))
    assert "<img src=x" not in "".join(d for _, d in events) and "&lt;img src=x onerror=alert(2)&gt;.txt" in events[1][1]
    page = api.get("/collections/xss").text
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(2)&gt;.txt" in page
    events, _ = _ask(api, "What is the launch code?", collection="xss")
    answer = events[-2][1]
    assert "4242" in answer and "<script>" not in answer and "onerror=alert(1)>" not in answer
    run_id = re.search(r'data-run="([0-9a-f]+)"', answer).group(1)
    cit = api.get(f"/runs/{run_id}/citations/1").text
    assert "<script>" not in cit and "&lt;script&gt;" in cit


def test_bandit_page_and_plots(api, ctx, docs):
    _ask(api, "How tall is Tokyo Tower?")
    _ask(api, "東京タワーの高さは？")  # a Japanese question: its own query context
    stored = ctx.docstore.get_arms("docs")
    contexts = sorted({k.split("/")[0] for k in stored}) or ["latin"]
    page = api.get("/bandit")
    assert page.status_code == 200
    for c in contexts:  # one posterior plot per query context with evidence
        assert f'src="/bandit/docs/posterior.svg?context={c}"' in page.text and f'data-context="{c}"' in page.text
    for arm in ("dense", "bm25", "hybrid"):
        assert arm in page.text
    for key, (a, b) in stored.items():
        if key.endswith("/dcg"):  # graded-quality posteriors weight the fusion; the plot shows the win posteriors
            continue
        context, arm = key.split("/")
        svg = api.get(f"/bandit/docs/posterior.svg?context={context}")
        assert svg.status_code == 200 and "<path" in svg.text
        prior_a = 2.0 if arm == "hybrid" else 1.0  # hybrid's Beta(2, 1) prior replaces the stored Beta(1, 1)
        assert f"{arm}: Beta({a - 1 + prior_a:.2f}, {b:.2f})" in svg.text  # the stored posterior
    assert api.get(f"/bandit/docs/rewards.svg?context={contexts[0]}").status_code == 200
    r = api.get("/bandit/docs/posterior.svg?context=klingon")
    assert r.status_code == 400 and "no bandit evidence" in r.text
    assert api.get("/bandit/..%2Fx/posterior.svg").status_code in (400, 404)


def test_bandit_page_shows_where_a_lone_arms_rewards_go(api, ctx, docs):
    """A new user saw six Japanese runs with rewards under "rewarded pulls" while the page kept the Japanese arm
    at Beta(1, 1): English MiniLM cannot read Japanese, so bm25 is offered alone, has nothing to win against, and
    its rewards go to its quality posterior (`ja/bm25/dcg`), which the page did not show."""
    _ask(api, "東京タワーの高さは？")
    stored = ctx.docstore.get_arms("docs")
    assert "ja/bm25" not in stored and "ja/bm25/dcg" in stored
    a, b = stored["ja/bm25/dcg"]
    page = api.get("/bandit").text
    ja = page[page.index('data-context="ja"'):]
    assert "Only bm25 was offered to ja queries" in ja
    assert f'<td class="quality">{a:.2f}</td><td class="quality">{b:.2f}</td>' in ja and (a, b) != (1.0, 1.0)


def test_overview_metrics_from_run_records(api, docs):
    _ask(api, "How many worker bees live in a colony?")
    _ask(api, "What is the airspeed of a swallow carrying a coconut?")
    m = api.get("/api/metrics").json()
    assert m["runs"] == 2 and m["routes"].get("rag", 0) + m["routes"].get("chitchat", 0) == 2
    assert m["stages"]["classify"]["n"] == 2 and m["stages"]["classify"]["p95_ms"] >= m["stages"]["classify"]["p50_ms"]
    assert m["refusal_rate"] is not None
    page = api.get("/")
    assert page.status_code == 200 and "p95" in page.text and "classify" in page.text


def test_collections_pages(api, ctx, docs):
    page = api.get("/collections")
    assert page.status_code == 200 and "/collections/docs" in page.text
    detail = api.get("/collections/docs")
    assert all(n in detail.text for n in ("solar.md", "bees.txt", "rail.html", "tokyo.txt"))
    assert "Dead letters" in detail.text
    current = ctx.docstore.get_collection("docs")["current_version"]
    assert re.search(rf'<code>{current}</code> \(<span class="ts">[0-9: -]+</span>, current\)', detail.text)
    empty = api.get("/collections/brandnew")
    assert empty.status_code == 200 and "nothing ingested yet" in empty.text
    assert api.get("/collections/bad..name").status_code == 400


def test_dead_letters_are_listed(api, ctx, docs):
    ctx.docstore.record_dead_letter("docs", "gs://b/docs/<b>bad</b>.pdf",
                                    {"error": "encrypted PDF", "kind": "corrupt", "generation": "7", "published": True})
    page = api.get("/collections/docs").text
    assert "encrypted PDF" in page and "&lt;b&gt;bad&lt;/b&gt;.pdf" in page


def _beir(folder: Path) -> Path:
    folder.mkdir(parents=True)
    docs = {"d1": "Solar panels convert sunlight into electricity.", "d2": "Bees dance to point at flowers.",
            "d3": "The standard rail gauge is 1,435 millimetres."}
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": "", "text": v})
                                                   for k, v in docs.items()) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps({"_id": q, "text": t}) for q, t in
                                                    [("q1", "how do solar panels work"), ("q2", "bee dance")]) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return folder


def test_eval_runs_with_progress_and_history(api, home, tmp_path, monkeypatch):
    root = tmp_path / "sets"
    _beir(root / "tiny")
    monkeypatch.setenv("RELAYRAG_DASHBOARD_DATASETS", str(root))
    page = api.get("/eval")
    assert page.status_code == 200 and "tiny (beir)" in page.text
    for _ in range(2):
        r = api.post("/eval", data={"dataset": "tiny", "collection": "tinyc", "limit": "0"})
        assert r.status_code == 200, r.text
        events = read_sse(api, job_url(r.text))
        progress = [d for e, d in events if e == "progress"]
        assert any("ingest 100 %" in d for d in progress) or any("index ready (3 chunks)" in d for d in progress)
        assert events[-2][0] == "result" and "nDCG@10" in events[-2][1], events
    svg = api.get("/eval/history/tiny.svg")
    assert svg.status_code == 200 and "bm25" in svg.text and "nDCG@10" in svg.text
    assert api.get("/eval").text.count("2 queries:") == 2
    r = api.post("/eval", data={"dataset": "nope", "collection": "tinyc", "limit": "0"})
    assert r.status_code == 404 and "unknown dataset" in r.text
    r = api.post("/eval", data={"dataset": "tiny", "collection": "tinyc", "limit": "many"})
    assert r.status_code == 400 and "whole number" in r.text


def test_sql_eval_without_llm_runs_the_guard_attacks(api, home, tmp_path, monkeypatch):
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"])
    root = tmp_path / "sets"
    root.mkdir()
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "text2sql"
    (root / "dev.jsonl").write_text((fixtures / "dev.jsonl").read_text())
    (root / "adversarial_dev.jsonl").write_text((fixtures / "adversarial_dev.jsonl").read_text())
    monkeypatch.setenv("RELAYRAG_DASHBOARD_DATASETS", str(root))
    r = api.post("/eval", data={"dataset": "dev", "collection": "chinook", "limit": "0"})
    events = read_sse(api, job_url(r.text))
    progress = [d for e, d in events if e == "progress"]
    assert any("refused" in d for d in progress)  # one line per attack, live
    assert "database unchanged: True" in events[-2][1]


def test_answer_quality_eval_runs_a_golden_set(api, docs, tmp_path, monkeypatch):
    root = tmp_path / "sets"
    root.mkdir()
    rows = [{"id": "eggs", "question": "How many eggs does the queen bee lay per day?", "answers": ["2,000"],
             "doc": "bees.txt", "page": 1, "category": "number"},
            {"id": "mercury", "question": "What is the boiling point of mercury in kelvin?", "unanswerable": True}]
    (root / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("RELAYRAG_DASHBOARD_DATASETS", str(root))
    assert "golden (answers)" in api.get("/eval").text
    r = api.post("/eval", data={"dataset": "golden", "collection": "docs", "limit": "0"})
    assert r.status_code == 200, r.text
    events = read_sse(api, job_url(r.text))
    progress = [d for e, d in events if e == "progress"]
    assert any("eggs: correct" in d for d in progress) and any("mercury:" in d for d in progress)
    assert events[-2][0] == "result" and "no-llm: 2 questions, answer accuracy 1.000" in events[-2][1], events
    assert "refusal recall 1.000" in events[-2][1]
    svg = api.get("/eval/history/golden.svg")
    assert svg.status_code == 200 and "answer accuracy" in svg.text


def test_warehouse_schema_and_guarded_query(api, home):
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"],
                   config=EXAMPLES / "chinook" / "relayrag.sql.yaml")
    page = api.get("/warehouse?collection=chinook")
    assert page.status_code == 200 and "Customer" in page.text and "glossary" in page.text
    ok = api.post("/warehouse/chinook/query", data={"sql": "SELECT Country, COUNT(*) AS n FROM Customer "
                                                           "GROUP BY Country ORDER BY n DESC"})
    assert ok.status_code == 200 and 'id="verdict">allowed' in ok.text and "USA" in ok.text and "LIMIT" in ok.text
    bad = api.post("/warehouse/chinook/query", data={"sql": "DROP TABLE Customer"})
    assert 'id="verdict">refused' in bad.text
    sneaky = api.post("/warehouse/chinook/query", data={"sql": "SELECT * FROM read_csv('/etc/passwd')"})
    assert 'id="verdict">refused' in sneaky.text and "root:" not in sneaky.text
    missing = api.get("/warehouse?collection=nothere")
    assert missing.status_code == 404 and "has no warehouse" in missing.text


def test_sql_route_answer_shows_sql_and_rows(api, home, make_llm_ctx):
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"])
    make_llm_ctx(sql_route_reply("SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Brazil'"))
    events, _ = _ask(api, "How many customers do we have in Brazil?", collection="chinook")
    result = events[-2][1]
    assert "There are 5 customers in Brazil." in result
    assert "SELECT COUNT(*) AS customers FROM Customer" in result and "<th>customers</th>" in result
    assert re.search(r"<td>5</td>", result)


def test_internal_errors_show_no_stack_trace(api, monkeypatch):
    from relayrag.dashboard import backend

    def boom(*a, **k):
        raise ZeroDivisionError("secret internals")
    monkeypatch.setattr(backend, "list_runs", boom)
    from starlette.testclient import TestClient
    with TestClient(api.app, headers=dict(api.headers), raise_server_exceptions=False) as c:
        r = c.get("/runs", headers={"accept": "text/html"})
    assert r.status_code == 500 and "internal error (reference" in r.text
    assert "Traceback" not in r.text and "secret internals" not in r.text and "ZeroDivisionError" not in r.text


def test_vendored_assets_match_their_recorded_hashes():
    import hashlib
    static = Path(__file__).resolve().parents[3] / "functions" / "relayrag" / "dashboard" / "static"
    readme = (static / "README.md").read_text()
    for line in re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.M):
        digest, name = line
        assert hashlib.sha256((static / name).read_bytes()).hexdigest() == digest, name
    assert (static / "LICENSE-htmx.txt").is_file() and (static / "LICENSE-htmx-ext-sse.txt").is_file()
    # no page loads anything from elsewhere
    templates = (static.parent / "templates")
    for t in templates.iterdir():
        assert not re.search(r"""(src|href)=["']https?://""", t.read_text()), t.name


def test_google_api_errors_are_messages_not_internal_errors(api, monkeypatch):
    from google.api_core import exceptions as gexc
    from relayrag.dashboard import backend

    def denied(*a, **k):
        raise gexc.PermissionDenied("caller lacks datastore.entities.list")
    monkeypatch.setattr(backend, "list_runs", denied)
    from starlette.testclient import TestClient
    with TestClient(api.app, headers=dict(api.headers), raise_server_exceptions=False) as c:
        r = c.get("/runs", headers={"accept": "text/html"})
    assert r.status_code == 502
    assert "Google API error PERMISSION_DENIED" in r.text and "datastore.entities.list" in r.text


def _file_states(events) -> dict:
    done = {}
    for e, d in events:
        if e == "file":
            m = re.search(r'data-file="([^"]+)" data-state="([a-z]+)"', d)
            done[m.group(1)] = (m.group(2), d)
    return done


def test_upload_names_are_limited_in_bytes_and_duplicates_are_refused(api, home):
    """Issue 24 rows 7 and 14: 82 CJK characters (249 bytes with .md) passed the 180-character check and failed on disk
    with a 500, leaving earlier files of the request behind; of two files of one name the first was lost; a
    right-to-left override or NUL in a name was kept."""
    long_name = "報" * 82 + ".md"
    files = [("files", ("first.md", b"# First\n\nThe first note.", "text/markdown")),
             ("files", (long_name, b"# Long\n\nA long name.", "text/markdown")),
             ("files", ("same.md", b"# One\n\nThe first same note.", "text/markdown")),
             ("files", ("same.md", b"# Two\n\nThe second same note.", "text/markdown")),
             ("files", ("report\u202efdp.md", b"# Bidi\n\nA reversed name.", "text/markdown")),
             ("files", ("nul\x00.md", b"# Nul\n\nA NUL in the name.", "text/markdown"))]
    # written by hand: httpx would send the NUL as "%00"
    body = b"".join(b"--B\r\nContent-Disposition: form-data; name=\"files\"; filename=\"" + fn.encode() + b"\"\r\n"
                    b"Content-Type: " + ct.encode() + b"\r\n\r\n" + data + b"\r\n" for _, (fn, data, ct) in files)
    r = api.post("/collections/names/upload", content=body + b"--B--\r\n",
                 headers={"content-type": "multipart/form-data; boundary=B"})
    assert r.status_code == 200, r.text
    events = read_sse(api, job_url(r.text))
    done = _file_states(events)
    assert done["first.md"][0] == "ingested"
    assert done[long_name][0] == "failed" and "249 bytes in UTF-8; at most 200" in done[long_name][1]
    assert done["same.md"][0] == "failed" and "2 files named" in done["same.md"][1].replace("&#39;", "'")
    assert any(s == "failed" and "bidi override" in d for s, d in done.values())
    assert sum(1 for s, _ in done.values() if s == "failed") == 4, {k: v[0] for k, v in done.items()}
    assert any(s == "failed" and "control characters" in d for s, d in done.values())
    assert not any("\x00" in d or "\u202e" in d for _, d in events)  # the names are shown, not obeyed
    src = home / "sources" / "names"
    assert sorted(p.name for p in src.iterdir()) == ["first.md"]  # nothing else written, no temporary file left


def test_an_upload_that_cannot_be_stored_keeps_nothing(api, home, monkeypatch):
    """Issue 24 row 7: a write failing midway (disk full) used to leave the files before it in sources/."""
    real_open = Path.open
    calls = {"n": 0}

    def failing_open(self, mode="r", *a, **k):
        if "w" in mode and self.name.startswith(".upload-"):
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(28, "No space left on device")
        return real_open(self, mode, *a, **k)

    monkeypatch.setattr(Path, "open", failing_open)
    files = [("files", ("a.md", b"# A\n\nFirst.", "text/markdown")),
             ("files", ("b.md", b"# B\n\nSecond.", "text/markdown"))]
    r = api.post("/collections/full/upload", files=files)
    assert r.status_code == 400 and "nothing was kept" in r.text and "No space left on device" in r.text
    src = home / "sources" / "full"
    assert not src.exists() or list(src.iterdir()) == []
