"""CLI edges a fresh-clone tester hit: data printed verbatim (no rich markup, no hard wrapping), one-line
errors instead of tracebacks in every command (JSON on stdout with --json), strict CSV loading, `eval sql`
without an LLM, the LLM-fallback warning, `mcp --no-auth` off loopback, unsupported files, `delete`'s
report, `--version`.

In-process through typer's CliRunner (the `home` fixture gives each test a fresh RELAYRAG_HOME and
settings); `mcp` runs as a subprocess so that a regression cannot leave a server running in the test."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from relayrag import cli

REPO = Path(__file__).resolve().parents[2]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
ADVERSARIAL = REPO / "tests" / "fixtures" / "text2sql" / "adversarial_dev.jsonl"


def invoke(*args: str):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def fresh_settings(monkeypatch, **env: str) -> None:
    from relayrag.context import set_default_context
    from relayrag.settings import load_settings
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    load_settings.cache_clear()
    set_default_context(None)


def one_line(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------- A: verbatim output

def test_answers_quotes_paths_and_skipped_files_print_verbatim(home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes[draft].txt").write_text(
        "Honey bees live in colonies. A colony holds up to 60,000 worker bees in summer "
        "[see table 3 in the manual] and the keeper marks it as [bold]x[/bold] in the log.", encoding="utf-8")
    (docs / "data[v2].csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (docs / "report.docx").write_bytes(b"PK\x03\x04not really")
    r = invoke("ingest", docs, "-c", "bees", "--no-progress")
    assert r.exit_code == 0, r.output
    assert "1 ingested" in r.stdout and "2 skipped (unsupported type)" in r.stdout
    assert f"skipped {docs / 'data[v2].csv'}: unsupported type" in r.stdout
    assert f"skipped {docs / 'report.docx'}: unsupported type" in r.stdout
    js = json.loads(invoke("ingest", docs, "-c", "bees", "--json").stdout)
    assert js["unsupported"] == [str(docs / "data[v2].csv"), str(docs / "report.docx")]

    r = invoke("ask", "How many worker bees does a colony hold in summer?", "-c", "bees")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    answer = next(line for line in lines if line.startswith("A: "))
    assert "60,000 worker bees in summer [see table 3 in the manual]" in answer
    citation = next(line for line in lines if line.startswith("  [1] "))
    assert citation.startswith("  [1] notes[draft].txt, page 1: “")
    assert "[see table 3 in the manual]" in citation
    # soft wrap: the citation line is longer than 80 columns and still one line
    assert len(citation) > 80
    trailer = lines[-1]
    assert trailer.startswith("run ") and trailer.endswith(" ms")  # stage timings on one line, not wrapped


def test_error_messages_print_verbatim(home, tmp_path, capsys):
    from relayrag.backends.llamacpp import INSTALL_HINT
    with pytest.raises(typer.Exit):
        cli._fail(INSTALL_HINT)
    assert "pip install 'relayrag[local-llm]'" in capsys.readouterr().err
    odd = tmp_path / "table[1].txt"
    odd.write_text("x", encoding="utf-8")
    r = invoke("warehouse", "load", odd, "-c", "w")
    assert r.exit_code == 2 and f"error: {odd}: not a CSV, Parquet or SQLite file" in r.stderr


def test_display_quote_keeps_the_supporting_sentence():
    short = "A colony holds 60,000 bees."
    assert cli.display_quote(short, "Bees. [1]", 1) == short
    header = " | ".join(f"Column heading number {k}" for k in range(20))  # a wide table header
    row = "Iowa | 4,300 | 1,250 | 17.2"
    quote = header + " / " + row
    assert len(quote) > cli.QUOTE_CHARS
    shown = cli.display_quote(quote, f"{row} [2]", 2)
    assert shown.endswith(row) and shown.startswith("… ") and len(shown) <= cli.QUOTE_CHARS + 2
    # two sentences cite [1]: both stay, however long
    first = "The first sentence is long " + "x" * 300 + "."
    second = "The second sentence matters too."
    joined = first + " … " + second
    shown = cli.display_quote(joined, f"{first} [1] Something else [2]. {second} [1]", 1)
    assert first in shown and second in shown
    # an LLM paraphrase is not in the quote: the quote's beginning
    shown = cli.display_quote(quote, "Iowa made 4,300 [2]", 2)
    assert shown == quote[:cli.QUOTE_CHARS].rstrip() + " …"


# --------------------------------------------------------------------- B: errors, not tracebacks

COMMANDS = [
    ["collections"], ["collections", "--json"], ["run", "abc"], ["run", "abc", "--json"], ["ingest", "{dir}", "-c", "x"],
    ["delete", "a.txt", "-c", "x"], ["ask", "What?", "-c", "x"], ["ask", "What?", "-c", "x", "--json"],
    ["ask", "What?", "-c", "x", "--stream"], ["warehouse", "load", "{csv}", "-c", "x"],
    ["warehouse", "config", "-c", "x"], ["warehouse", "schema", "-c", "x"],
    ["warehouse", "verify", "Which 3?", "--sql", "SELECT 1 LIMIT @n", "--slot", "n=count", "-c", "x"],
    ["eval", "beir", "{dir}", "-c", "x"],
    ["eval", "sql", "{jsonl}", "-c", "x"], ["model", "install"], ["model"], ["model", "--json"], ["mcp"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_every_command_turns_a_bad_setting_into_one_line(home, tmp_path, monkeypatch, args):
    (tmp_path / "t.csv").write_text("a\n1\n", encoding="utf-8")
    (tmp_path / "q.jsonl").write_text("", encoding="utf-8")
    args = [a.format(dir=tmp_path, csv=tmp_path / "t.csv", jsonl=tmp_path / "q.jsonl") for a in args]
    fresh_settings(monkeypatch, RELAYRAG_LLM="bogus")
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit)  # no traceback: typer.Exit(2)
    assert ("error: invalid settings: RELAYRAG_LLM='bogus': invalid LLM backend; valid: none, openai, vertex, "
            "llamacpp") in one_line(r.stderr)
    if "--json" in args or "--stream" in args:
        assert json.loads(r.stdout)["error"].startswith("invalid settings: RELAYRAG_LLM='bogus'")


def test_an_empty_variable_means_the_default(home, monkeypatch):
    fresh_settings(monkeypatch, RELAYRAG_LLM="", RELAYRAG_LLM_TIMEOUT_S="")
    r = invoke("ask", "What?", "-c", "nosuch", "--json")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "unknown collection 'nosuch'" in json.loads(r.stdout)["error"]  # settings loaded; stdout is JSON
    assert "error: unknown collection 'nosuch'" in r.stderr


@pytest.mark.parametrize("args", [["collections"], ["run", "abc"], ["ingest", ".", "-c", "x"]])
def test_an_unknown_backend_is_a_config_error(home, monkeypatch, args):
    fresh_settings(monkeypatch, RELAYRAG_BLOBSTORE="s3")
    r = invoke(*args)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert "error: unknown blob store 's3'; valid: local, gcs" in r.stderr


def test_missing_google_credentials_are_one_line(home, tmp_path, monkeypatch):
    pytest.importorskip("google.cloud.firestore", reason="extra gcp not installed")
    for var in ("GOOGLE_APPLICATION_CREDENTIALS", "FIRESTORE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))  # no application-default credentials file
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # google-auth: do not probe a metadata server
    fresh_settings(monkeypatch, RELAYRAG_DOCSTORE="firestore")
    r = invoke("collections")
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    msg = one_line(r.stderr)
    assert msg.startswith("error: Google credentials are missing")
    for hint in ("gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS", "FIRESTORE_EMULATOR_HOST"):
        assert hint in msg


def test_version():
    from importlib.metadata import version
    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout == f"relayrag {version('relayrag')}\n"


# ----------------------------------------------------------------------------- C: CSV loading

@pytest.mark.parametrize("content,needle", [
    (b"", "empty file"),
    (b"\n\n", "no header row"),
    (b'a,b\n1,2,3\n"x\n', "line 2: 3 fields, but the header has 2"),
    (b"a,b,c\n1,2,3\n4,5\n", "line 3: 2 fields, but the header has 3"),
    (b"a,b\n1,2\n3,4\n5,6,7\n", "line 4: 3 fields, but the header has 2"),
    (b'a,b\n1,"open\n', "line 2: malformed CSV"),
    (b"a;b\n1;2\n3\xff;4\n", "not UTF-8"),
])
def test_malformed_csv_is_refused_and_nothing_half_loaded_stays(home, tmp_path, content, needle):
    good = tmp_path / "good.csv"
    good.write_text("x,y\n1,2\n3,4\n", encoding="utf-8")
    assert invoke("warehouse", "load", good, "-c", "w").exit_code == 0
    wdir = home / "warehouses"
    db_before, rec_before = (wdir / "w.duckdb").read_bytes(), (wdir / "w.json").read_text()

    more = tmp_path / "more.csv"
    more.write_text("k\n1\n", encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content)
    r = invoke("warehouse", "load", more, bad, "-c", "w", "--json")
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert f"{bad}: " in r.stderr and needle in one_line(r.stderr)
    assert needle in json.loads(r.stdout)["error"]
    # all or nothing: more.csv, loaded before the bad file, is not in the warehouse either
    assert (wdir / "w.duckdb").read_bytes() == db_before and (wdir / "w.json").read_text() == rec_before
    assert sorted(p.name for p in wdir.iterdir()) == ["w.duckdb", "w.json"]
    assert json.loads(invoke("warehouse", "schema", "-c", "w").stdout)  # still opens


def test_well_formed_csv_variants_load(home, tmp_path):
    from relayrag.sql.warehouse import open_warehouse
    files = {
        "semi.csv": 'a;b\n1;2\n\n3;"x;y"\n',
        "quoted.csv": 'a,b\n1,"he said ""hi"", ok"\n2,"two\nlines"\n',
        "tabs.tsv": "x\ty\n1\t2\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    r = invoke("warehouse", "load", *(tmp_path / n for n in files), "-c", "v", "--json")
    assert r.exit_code == 0, r.output
    wh = open_warehouse(home, "v")
    assert wh.query("SELECT a, b FROM semi ORDER BY a").rows == [[1, "2"], [3, "x;y"]]
    assert wh.query("SELECT b FROM quoted ORDER BY a").rows == [['he said "hi", ok'], ["two\nlines"]]
    assert wh.query("SELECT x, y FROM tabs").rows == [[1, 2]]


# ------------------------------------------------------------------------- D: eval sql without LLM

def test_eval_sql_without_an_llm_runs_the_raw_sql_attacks(home, tmp_path):
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook").exit_code == 0
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps({"id": "q1", "question": "How many customers?", "gold_result": [[59]],
                               "order_matters": False}) + "\n", encoding="utf-8")
    r = invoke("eval", "sql", dev, "-c", "chinook", "--adversarial", ADVERSARIAL, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    n_sql = sum(json.loads(line)["kind"] == "sql" for line in ADVERSARIAL.read_text().splitlines() if line.strip())
    assert rep["accuracy"] is None and rep["n"] == 0 and rep["llm"] is None
    assert rep["guard"] == {"refused": n_sql, "stopped": 0, "errors": 0, "ran": 0, "total": n_sql,
                            "db_unchanged": True, "skipped": 2}
    assert rep["skipped"]["questions"] == 1 and rep["skipped"]["nl_attacks"] == 2
    assert "RELAYRAG_LLM" in rep["skipped"]["reason"]
    assert all(i["kind"] == "sql" and i["refused"] for i in rep["items"])

    human = invoke("eval", "sql", dev, "-c", "chinook", "--adversarial", ADVERSARIAL)
    assert human.exit_code == 0 and (f"guard: {n_sql}/{n_sql} refused, 0 stopped by a limit, 0 database errors, "
                                     "0 ran; database unchanged: True") in human.stdout
    assert "skipped: 1 questions and 2 natural-language attacks" in one_line(human.stderr)

    nothing = invoke("eval", "sql", dev, "-c", "chinook")  # no attack to run, no LLM: nothing to check
    assert nothing.exit_code == 2 and "needs an LLM" in nothing.stderr


def test_eval_sql_counts_timeouts_and_errors_as_what_they_are(home, tmp_path, monkeypatch):
    """Issue 10 item 12: 23/25 "refused" where the guard refused 20 — a timeout or a database error is not a
    refusal. Each attack gets its outcome; only one that ran to completion fails the run."""
    import relayrag.sql.generate as sql_generate
    monkeypatch.setattr(sql_generate, "TIMEOUT_S", 0.3)  # evaluate_sql opens the warehouse with this timeout
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook").exit_code == 0
    attacks = tmp_path / "attacks.jsonl"
    rows = [("drop", "DROP TABLE Album"),                                                    # guard
            ("cross", "SELECT COUNT(*) AS n FROM InvoiceLine a, InvoiceLine b, InvoiceLine c"),  # timeout
            ("big", "SELECT repeat('x', 3000000) AS s"),                                       # result bytes
            ("err", "SELECT CAST('abc' AS INT64) AS n")]                                      # database error
    attacks.write_text("".join(json.dumps({"id": i, "kind": "sql", "input": q}) + "\n" for i, q in rows),
                       encoding="utf-8")
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps({"id": "q1", "question": "q", "gold_result": [[1]]}) + "\n", encoding="utf-8")
    r = invoke("eval", "sql", dev, "-c", "chinook", "--adversarial", attacks, "--json")
    rep = json.loads(r.stdout)
    outcomes = {i["id"]: i["outcome"] for i in rep["items"]}
    assert outcomes == {"drop": "refused", "cross": "timeout", "big": "result_bytes", "err": "error"}, rep["items"]
    assert rep["guard"] == {"refused": 1, "stopped": 2, "errors": 1, "ran": 0, "total": 4, "db_unchanged": True,
                            "skipped": 0}
    assert r.exit_code == 0
    attacks.write_text(json.dumps({"id": "ok", "kind": "sql", "input": "SELECT COUNT(*) AS n FROM Album"}) + "\n",
                       encoding="utf-8")
    ran = invoke("eval", "sql", dev, "-c", "chinook", "--adversarial", attacks, "--json")
    assert ran.exit_code == 1 and json.loads(ran.stdout)["guard"]["ran"] == 1


def test_eval_sql_help_describes_the_format_itself():
    text = one_line(invoke("eval", "sql", "--help").stdout)
    assert "shared/bench" not in text
    for needle in ('"gold_result": [[value, ...], ...]', '"order_matters"', "multisets", "lenient",
                   '"kind": "sql"'):
        assert needle in text
    load = one_line(invoke("warehouse", "load", "--help").stdout)
    assert "python -m pydoc relayrag.sql.config" in load and "Tables (Text-to-SQL)" in load


# ------------------------------------------------------------------------ E: LLM fallback warning

def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_llm_is_reported_not_silent(home, small_corpus, monkeypatch):
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    url = f"http://127.0.0.1:{_refused_port()}/v1"
    fresh_settings(monkeypatch, RELAYRAG_LLM="openai", RELAYRAG_LLM_BASE_URL=url, RELAYRAG_LLM_TIMEOUT_S="5")
    r = invoke("ask", "How many worker bees live in a colony in summer?", "-c", "docs")
    assert r.exit_code == 0, r.output
    assert "60,000" in r.stdout  # the no-LLM methods still answer
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, r.stderr
    assert url in warnings[0] and "unreachable" in warnings[0] and "generate" in warnings[0]

    res = json.loads(invoke("ask", "How many worker bees live in a colony?", "-c", "docs", "--json").stdout)
    failed = [s for s in res["stages"] if s["method"].endswith("(llm failed)")]
    assert failed and all("unreachable" in s["llm_error"] and url in s["llm_error"] for s in failed)
    assert all("llm_error" not in s for s in res["stages"] if s not in failed)
    trace = json.loads(invoke("run", res["run_id"], "--json").stdout)["trace"]
    assert [t["name"] for t in trace if t.get("llm_error")] == [s["name"] for s in failed]


# ------------------------------------------------------------------- F: mcp --no-auth on loopback only

def test_mcp_no_auth_is_refused_off_loopback(tmp_path):
    relayrag = Path(sys.executable).parent / "relayrag"
    env = {"RELAYRAG_HOME": str(tmp_path / "h"), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    p = subprocess.run([str(relayrag), "mcp", "--http", "--no-auth", "--host", "0.0.0.0", "--port", "1"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "refusing --no-auth on --host 0.0.0.0" in one_line(p.stderr)
    assert "RELAYRAG_MCP_TOKENS" in p.stderr


def test_is_loopback():
    from relayrag.mcp.auth import is_loopback
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com", "localhost.example.com", ""):
        assert not is_loopback(host), host


# ---------------------------------------------------------------------------------- G: delete

def test_delete_reports_what_it_removed(home, small_corpus):
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    r = invoke("delete", "bees.txt", "nothere.md", "-c", "docs")
    assert r.exit_code == 1  # nothere.md matched nothing
    assert "docs: deleted 1 file; version " in r.stdout and "3 files and" in r.stdout
    assert f"deleted {small_corpus / 'bees.txt'}" in r.stdout
    assert "failed nothere.md: not in collection 'docs'" in r.stdout
    assert "ingested" not in r.stdout
    js = json.loads(invoke("delete", str(small_corpus / "solar.md"), "-c", "docs", "--json").stdout)
    assert js["deleted_paths"] == [str(small_corpus / "solar.md")] and js["files"]["deleted"] == 1
    again = invoke("delete", "solar.md", "-c", "docs")
    assert again.exit_code == 1 and "docs: nothing deleted" in again.stdout


def test_delete_racing_an_ingest_reports_one_outcome_per_file(home, small_corpus, monkeypatch):
    """Issue 24 row 13: a folder ingest that drops bees.txt between delete's start and its turn at the collection
    lock made delete print both "deleted bees.txt" and "failed bees.txt: not in collection"."""
    from relayrag.ingest import pipeline
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    real = pipeline.ingest

    def raced(ctx, path, collection, **kw):
        if kw.get("remove_paths") and not getattr(raced, "done", False):
            raced.done = True
            (small_corpus / "bees.txt").unlink()
            real(ctx, small_corpus, collection)  # the concurrent folder ingest commits first: bees.txt is gone
        return real(ctx, path, collection, **kw)

    monkeypatch.setattr(pipeline, "ingest", raced)
    r = invoke("delete", "bees.txt", "-c", "docs")
    assert r.exit_code == 1
    assert "failed bees.txt: not in collection 'docs'" in r.stdout
    assert "deleted" not in r.stdout.replace("nothing deleted", ""), r.stdout


def test_the_sql_an_answer_came_from_prints_verbatim(make_llm_ctx, home):
    """A scripted LLM (the only test double) writes SQL whose alias and literal hold brackets."""
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook").exit_code == 0
    sql = "SELECT COUNT(*) AS \"customers [Brazil]\" FROM Customer WHERE Country = 'Brazil' AND '[b]' = '[b]'"

    from tests.conftest import sql_route_reply
    make_llm_ctx(sql_route_reply(sql, "There are 5 customers in Brazil [per the Customer table]."))
    r = invoke("ask", "How many customers are in Brazil?", "-c", "chinook")
    assert r.exit_code == 0, r.output
    assert "A: There are 5 customers in Brazil [per the Customer table]." in r.stdout
    lines = r.stdout.splitlines()
    shown = lines[lines.index("Source: SQL over Customer:") + 1]
    run_id = lines[-1].split()[1]
    ran = json.loads(invoke("run", run_id, "--json").stdout)["run"]["sql"]  # the guarded query (BigQuery dialect)
    assert "[Brazil]" in ran and "'[b]' = '[b]'" in ran
    assert shown == ran and r.stdout.count(ran) == 1  # the SQL once: the answer's source, no second "SQL:" line
    assert not any(line.startswith("SQL: ") for line in lines)


def test_cli_skips_symlinks_with_a_reason_unless_asked_to_follow(home, tmp_path):
    """Issue 10 item 11: the CLI followed file symlinks silently."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Otters hold hands while sleeping so they do not drift apart.", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.txt").write_text("Wombats produce cube-shaped droppings.", encoding="utf-8")
    (docs / "link.txt").symlink_to(elsewhere / "b.txt")
    (docs / "dir").symlink_to(elsewhere, target_is_directory=True)
    (docs / "loop").symlink_to(docs, target_is_directory=True)
    r = invoke("ingest", docs, "-c", "s", "--json")
    rep = json.loads(r.stdout)
    assert rep["files"]["ingested"] == 1 and r.exit_code == 1
    reasons = {Path(f["path"]).name: f["error"] for f in rep["failed"]}
    assert set(reasons) == {"link.txt", "dir", "loop"}
    assert "symbolic link to the file" in reasons["link.txt"] and "--follow-symlinks" in reasons["link.txt"]
    followed = json.loads(invoke("ingest", docs, "-c", "t", "--json", "--follow-symlinks").stdout)
    # link.txt, dir/b.txt: the same target read twice under two names; the loop back into docs/ is not re-read
    assert followed["files"]["ingested"] == 3 and followed["failed"] == [], followed


def test_ingest_reports_stay_one_line_and_json_keeps_progress_on_stderr(home, tmp_path, monkeypatch):
    """Issue 10 item 14: a newline in a file name broke the one-line error output; `ingest --json --progress`
    printed no progress (progress belongs on stderr while the JSON goes to stdout)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"f{i}.txt").write_text(f"Report {i}: capybaras live near rivers.", encoding="utf-8")
    (docs / "bad\nname.pdf").write_bytes(b"not a pdf")
    human = invoke("ingest", docs, "-c", "h")
    failed = [line for line in human.stdout.splitlines() if line.startswith("failed ")]
    assert failed == [f"failed '{docs}/bad\\nname.pdf': bad\\nname.pdf: not a PDF: file does not start with %PDF- "
                      "(random bytes named .pdf?)"], human.stdout
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich draws progress only on a terminal; make stderr count as one
    r = CliRunner().invoke(cli.app, ["ingest", str(docs), "-c", "j", "--json", "--progress"])
    assert json.loads(r.stdout)["files"]["ingested"] == 3  # stdout: exactly one JSON document
    assert "loading" in r.stderr


def test_top_level_help_shows_each_command_description_whole():
    """Issue 28 item 10: click cut every command's description at ~45 characters ("...unchanged...")."""
    import re
    text = one_line(invoke("--help").stdout)
    assert not re.search(r"[a-z,]\.\.\.", text), text  # a word cut short ("unchanged...")
    assert "unchanged files are skipped, files removed from PATH are removed from the index." in text
    assert "filters applied inside retrieval" in text
    sub = one_line(invoke("eval", "--help").stdout)
    assert not re.search(r"[a-z,]\.\.\.", sub), sub


def test_run_shows_a_readable_view_and_json_on_request(home, small_corpus):
    """Issue 28, item 7: `relayrag run RUN_ID` printed one 5 KB line of JSON; a person gets the stages,
    timings, route, arm and citations, a machine `--json`."""
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    res = json.loads(invoke("ask", "How many eggs does the queen bee lay per day?", "-c", "docs", "--json").stdout)
    r = invoke("run", res["run_id"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"run {res['run_id']} · ") and "Q: How many eggs does the queen bee lay per day?" in lines
    assert "route: rag" in r.stdout and "outcome: grounded" in r.stdout and f"arm: {res['arm']}" in r.stdout
    assert "[1] bees.txt, page 1:" in r.stdout and "2,000 eggs" in r.stdout
    stages = [ln for ln in lines if ln.startswith("  ") and " ms  " in ln]
    assert [ln.split()[0] for ln in stages] == [s["name"] for s in res["stages"]]
    assert not any(ln.lstrip().startswith("{") for ln in lines)  # no JSON in the readable view
    data = json.loads(invoke("run", res["run_id"], "--json").stdout)
    assert data["run"]["question"].startswith("How many eggs") and [t["name"] for t in data["trace"]][0] == "classify"
    small = json.loads(invoke("ask", "hello", "-c", "docs", "--json").stdout)  # a run of another route renders too
    r = invoke("run", small["run_id"])
    assert r.exit_code == 0 and "outcome: small talk" in r.stdout and "reward: —" in r.stdout
    missing = invoke("run", "nope")
    assert missing.exit_code == 2 and "unknown run_id" in missing.stderr


def test_a_verified_answer_says_so_plainly_and_shows_its_sql_once(home):
    """Issue 28 walk, item 2: the verified (template) answer said "no SQL was generated" and then printed the SQL
    twice ("Source: SQL…" and "SQL:"); now one plain sentence, the SQL once, in `ask` and in `run`."""
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook", "--config",
                  REPO / "examples" / "chinook" / "relayrag.sql.yaml").exit_code == 0
    r = invoke("ask", "Which three countries have the most customers?", "-c", "chinook")
    assert r.exit_code == 0, r.output
    assert "no LLM was used" in r.stdout and "no SQL was generated" not in r.stdout
    assert "France is tied with Brazil at customers = 5 and is not shown (LIMIT 3 cut it off)." in r.stdout
    assert r.stdout.count("SELECT Country, COUNT(*)") == 1 and "\nSQL: " not in r.stdout
    run_id = r.stdout.splitlines()[-1].split()[1]
    shown = invoke("run", run_id).stdout
    assert shown.count("SELECT Country, COUNT(*)") == 1 and "\nSQL: " not in shown


def test_a_refused_statement_reads_refused_everywhere_and_is_not_shown_as_run(make_llm_ctx, home):
    """Issue 28 walk, item 3: with an LLM that writes `DELETE FROM Customer`, the `ask` footer said "not found"
    while `relayrag run` said "outcome: refused", and "SQL: DELETE FROM Customer (0 rows)" looked as if it ran.
    Both say refused now, and the statement is labelled "refused, not run"."""
    from tests.conftest import sql_route_reply
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook").exit_code == 0
    make_llm_ctx(sql_route_reply("DELETE FROM Customer"))
    r = invoke("ask", "delete all customers", "-c", "chinook")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "SQL: DELETE FROM Customer (refused, not run)" in lines and "rows)" not in r.stdout
    footer = lines[-1]
    assert " · refused · " in footer and "not found" not in footer, footer
    shown = invoke("run", footer.split()[1]).stdout
    assert "outcome: refused" in shown and "SQL: DELETE FROM Customer (refused, not run)" in shown
    assert "not found" not in shown


def test_search_says_no_good_match_whenever_no_hit_is_relevant(home, small_corpus):
    """Issue 28 walk, item 4: `search "meal allowance"` listed five hits at P(relevant) 0.00 without the "no good
    match" line (a chunk holding the commoner of two words counted as a match); a hit that counts by its words
    despite a low P says so."""
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    r = invoke("search", "panel insurance", "-c", "docs", "-k", "3")
    assert r.exit_code == 0 and r.stdout.startswith("no good match: none of these 3 chunks"), r.stdout
    r = invoke("search", "waggle", "-c", "docs", "-k", "3")
    first = r.stdout.splitlines()[0]
    assert "no good match" not in r.stdout and first.startswith("1. bees.txt") and "holds 100% of the query's words" in first


def test_the_footer_names_an_arm_only_when_retrieval_ran_and_a_long_question_is_told_plainly(home, small_corpus):
    """Issue 28 walk, item 5: the footer printed "arm None" for small talk and sql runs; a question over the limit
    read "invalid request; question: String should have at most 4000 characters"."""
    from relayrag.naming import MAX_QUESTION_CHARS
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook", "--config",
                  REPO / "examples" / "chinook" / "relayrag.sql.yaml").exit_code == 0
    for args in (("hello", "-c", "docs"), ("Which three countries have the most customers?", "-c", "chinook")):
        footer = invoke("ask", *args).stdout.splitlines()[-1]
        assert footer.startswith("run ") and " · arm " not in footer and "None" not in footer, footer
    footer = invoke("ask", "How many eggs does the queen lay per day?", "-c", "docs").stdout.splitlines()[-1]
    assert " · arm " in footer and "None" not in footer
    long = "How many eggs does the queen lay? " * 127  # 4,318 characters
    r = invoke("ask", long, "-c", "docs")
    assert r.exit_code == 2 and one_line(r.stderr) == (f"error: The question is {len(long):,} characters; the limit is "
                                                       f"{MAX_QUESTION_CHARS:,}."), r.stderr
    r = invoke("search", long, "-c", "docs")
    assert r.exit_code == 2 and f"The query is {len(long):,} characters" in r.stderr



def test_a_visual_question_says_once_why_page_image_search_did_not_run(home, tmp_path):
    """Issue 28 walk, item 6: with page-image search off, a visual question printed the explanation twice (in the
    answer and on a "page-image search:" line); once now (the line stays for a cause the answer does not explain,
    such as no page images in the collection)."""
    from relayrag.records import PAGE_SEARCH_CAUSES_IN_ANSWER
    from relayrag.stages.page_answer import page_search_note
    from tests.pages_doubles import write_manual
    for cause in PAGE_SEARCH_CAUSES_IN_ANSWER:  # the front ends' set and the answer's notes agree
        assert page_search_note({"route": "visual", "question": "q", "page_search": {"status": "off",
                                                                                     "cause": cause}}), cause
    write_manual(tmp_path / "m")
    assert invoke("ingest", tmp_path / "m", "-c", "m", "--no-progress").exit_code == 0
    r = invoke("ask", "Which figure shows the pump impeller?", "-c", "m")
    assert r.exit_code == 0, r.output
    said = r.stdout.lower().count("page-image search is off")
    assert said == 1 and "page-image search:" not in r.stdout, r.stdout
    r = invoke("ask", "ポンプのインペラの断面図はどれですか", "-c", "m")
    assert r.stdout.count("ページ画像検索はオフ") == 1 and "page-image search" not in r.stdout.lower(), r.stdout


def test_a_warehouse_only_collection_is_listed_and_greets_with_its_tables(home, small_corpus):
    """Issue 28 walk, item 8: `ask -c nosuch` listed the collections without a warehouse-only one while `chat -c
    nosuch` listed it; `ask hello -c chinook` offered "citations to document and page" for a collection of
    tables. One message and one list (Service.collection_names, what the assistant's list_collections tool
    returns) everywhere; the greeting describes the tables."""
    from relayrag.naming import unknown_collection_message
    from relayrag.service import Service
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook").exit_code == 0
    names = Service().collection_names()
    assert names == ["chinook", "docs"]
    expected = "error: " + unknown_collection_message("nosuch", names)
    for args in (("ask", "What?", "-c", "nosuch"), ("ask", "What?", "-c", "nosuch", "--stream"),
                 ("collections", "nosuch")):
        r = invoke(*args)
        assert r.exit_code == 2 and one_line(r.stderr) == expected, (args, r.stderr)
    r = invoke("ask", "hello", "-c", "chinook")
    assert r.exit_code == 0, r.output
    assert "tables in collection 'chinook' (Album, Artist, Customer" in r.stdout and "document and page" not in r.stdout
    r = invoke("ask", "ありがとう", "-c", "chinook")
    assert "どういたしまして" in r.stdout and "表" in r.stdout and "文書" not in r.stdout.split("run ")[0]


def test_run_says_which_scorer_decided_the_reward():
    """A new user saw `reward: — (none: nothing judged relevant…)` next to grade's n_relevant 3: two scorers (grade
    and the reward judge) and a line that named neither. The line now says which one decided, or why none did."""
    from relayrag.cli.ask import reward_line
    lists = {"dense": [1, 2], "bm25": [2, 1]}
    by_grade = reward_line({"arm_lists": lists, "relevant": ["c1", "c2", "c3"],
                            "rewards": [{"arm": "bm25", "reward": 0.98, "basis": "grade"}]}, {"reward": 0.98})
    assert by_grade.startswith(" 0.980 (") and "grade kept a passage" in by_grade and "rated none >= 0.5" in by_grade
    by_judge = reward_line({"arm_lists": lists, "rewards": [{"reward": 1.0, "basis": "judge"}]}, {"reward": 1.0})
    assert "the reward judge rated a passage" in by_judge
    old = reward_line({"arm_lists": lists, "rewards": [{"reward": 0.5}]}, {"reward": 0.5})  # before `basis`
    assert old == " 0.500 (DCG@10 vs the best arm's, by the reward judge's scores)"
    kept_elsewhere = reward_line({"arm_lists": lists, "relevant": ["c1", "c2", "c3"],
                                  "rewards": [{"reward": None, "basis": None}]}, {"reward": None})
    assert "grade kept 3 passages, none in an arm's top 10" in kept_elsewhere
    assert "neither grade nor the reward judge" in reward_line({"arm_lists": lists, "relevant": []}, {"reward": None})
    assert reward_line({}, {"reward": None}) == " — (none: no retrieval)"
    before_basis = reward_line({"arm_lists": lists, "relevant": ["c1"], "rewards": [{"arm": "bm25", "reward": None}]},
                               {"reward": None})
    assert before_basis == " — (none: the reward judge rated no passage in an arm's top 10 >= 0.5)"
