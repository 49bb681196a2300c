"""The CLI as a user runs it (subprocess, fresh RELAYRAG_HOME): ingest, ask --json/--stream, re-ingest,
delete, bad files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.ingest.snapshot import read_chunks

RELAYRAG = Path(sys.executable).parent / "relayrag"


def rr(home, *args, check=True):
    env = {**os.environ, "RELAYRAG_HOME": str(home)}
    p = subprocess.run([str(RELAYRAG), *args], env=env, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"relayrag {args} exited {p.returncode}: {p.stdout}\n{p.stderr}")
    return p


def test_ingest_ask_reingest_delete(tmp_path, small_corpus):
    home = tmp_path / "h"
    s1 = json.loads(rr(home, "ingest", str(small_corpus), "-c", "docs", "--json").stdout)
    assert s1["files"] == {"ingested": 4, "skipped": 0, "deleted": 0, "failed": 0}
    assert s1["chunks_embedded"] >= 4 and s1["version"]
    s2 = json.loads(rr(home, "ingest", str(small_corpus), "-c", "docs", "--json").stdout)
    assert s2["chunks_embedded"] == 0 and s2["files"]["skipped"] == 4 and s2["version"] == s1["version"]

    res = json.loads(rr(home, "ask", "How many worker bees live in a colony in summer?", "-c", "docs", "--json").stdout)
    for key in ("run_id", "route", "answer", "citations", "arm", "grounded", "stages"):
        assert key in res
    assert res["route"] == "rag" and res["grounded"] and "60,000" in res["answer"]
    assert {"doc", "page", "chunk_id", "quote"} <= set(res["citations"][0]) and res["citations"][0]["doc"] == "bees.txt"
    assert all({"name", "ms", "method"} <= set(s) for s in res["stages"])

    lines = rr(home, "ask", "How many worker bees live in a colony?", "-c", "docs", "--stream").stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["name"] for e in events[:-1]] == ["classify", "hyde", "retrieve", "rerank", "grade", "generate",
                                               "hallucination_check"]
    assert events[-1]["event"] == "result" and events[-1]["answer"]

    # a file removed from PATH disappears everywhere
    (small_corpus / "bees.txt").unlink()
    s3 = json.loads(rr(home, "ingest", str(small_corpus), "-c", "docs", "--json").stdout)
    assert s3["files"]["deleted"] == 1 and s3["chunks_embedded"] == 0
    res = json.loads(rr(home, "ask", "How many worker bees live in a colony in summer?", "-c", "docs", "--json").stdout)
    assert all(c["doc"] != "bees.txt" for c in res["citations"])
    assert all("bees" not in c["text"] for c in read_chunks(LocalBlobStore(home / "blobs"), "docs", s3["version"]))
    # relayrag delete
    d = json.loads(rr(home, "delete", str(small_corpus / "solar.md"), "-c", "docs", "--json").stdout)
    assert d["files"]["deleted"] == 1
    cols = json.loads(rr(home, "collections", "--json").stdout)
    assert cols[0]["stats"]["n_files"] == 2
    assert all("solar" not in c["text"].lower()
               for c in read_chunks(LocalBlobStore(home / "blobs"), "docs", d["version"]))


def test_bad_files_fail_clearly_and_the_rest_ingest(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.txt").write_text("The standard rail gauge is 1,435 millimetres.")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "random.pdf").write_bytes(os.urandom(4096))
    (folder / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    examples = Path(__file__).resolve().parents[2] / "examples" / "pdfs"
    data = (examples / "senate-expenditures.pdf").read_bytes()
    (folder / "truncated.pdf").write_bytes(data[: len(data) // 3])
    p = rr(tmp_path / "h", "ingest", str(folder), "-c", "m", "--json", check=False)
    assert p.returncode == 1
    s = json.loads(p.stdout)
    assert s["files"]["ingested"] == 1 and s["files"]["failed"] == 4
    errors = {Path(f["path"]).name: f["error"] for f in s["failed"]}
    assert "empty" in errors["empty.pdf"]
    assert "PDF" in errors["random.pdf"]
    assert "UTF-8" in errors["latin1.txt"] or "decod" in errors["latin1.txt"]
    assert errors["truncated.pdf"]
    assert [c["doc"] for c in read_chunks(LocalBlobStore(tmp_path / "h" / "blobs"), "m", s["version"])] == ["good.txt"]


def test_ask_unknown_collection_is_a_clear_error(tmp_path):
    p = rr(tmp_path / "h", "ask", "What?", "-c", "nothing", check=False)
    assert p.returncode == 2 and "relayrag ingest" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("args,needle", [
    (["ingest", "{docs}", "-c", "../../escape"], "invalid collection name"),
    (["ingest", "{docs}", "-c", "a b/c"], "invalid collection name"),
    (["ingest", "{docs}", "-c", ""], "invalid collection name"),
    (["ask", "What?", "-c", "../x"], "invalid collection name"),
    (["ask", "What?", "-c", "docs", "--arm", "sparse"], "valid: dense, bm25, hybrid"),
    (["ask", "  ", "-c", "docs"], "question is empty"),
    (["delete", "x.txt", "-c", "nope"], "unknown collection"),
    (["eval", "beir", "{docs}", "-c", "e"], "not a BEIR dataset"),
])
def test_bad_arguments_are_clear_errors(tmp_path, small_corpus, args, needle):
    args = [a.replace("{docs}", str(small_corpus)) for a in args]
    p = rr(tmp_path / "h", *args, check=False)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert needle in " ".join(p.stderr.split()) and "Traceback" not in p.stderr
    assert not (tmp_path / "escape.lock").exists() and not list(tmp_path.glob("**/escape*"))


def test_warehouse_with_sql_config_as_a_user_runs_it(tmp_path):
    """The bundled Chinook example: load with its relayrag.sql.yaml, list it, show and replace the config;
    `ask` routes to sql and, with no LLM configured, says how to enable one."""
    home = tmp_path / "h"
    chinook = Path(__file__).resolve().parents[2] / "examples" / "chinook"
    rec = json.loads(rr(home, "warehouse", "load", str(chinook / "chinook.sqlite"), "-c", "chinook", "--config",
                        str(chinook / "relayrag.sql.yaml"), "--json").stdout)
    assert rec["config"]["examples"] >= 8 and rec["config"]["glossary"] >= 10
    (col,) = json.loads(rr(home, "collections", "--json").stdout)
    assert col["name"] == "chinook" and col["current_version"] is None and col["warehouse"]["config"]
    shown = json.loads(rr(home, "warehouse", "config", "-c", "chinook", "--json").stdout)
    assert shown["glossary"]["revenue"]["sql"] == "SUM(Invoice.Total)"
    res = json.loads(rr(home, "ask", "ドイツの顧客は何人？", "-c", "chinook", "--json").stdout)
    assert res["route"] == "sql" and "RELAYRAG_LLM" in res["answer"] and res["sql"] is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("examples:\n  - question: wipe\n    sql: DELETE FROM Invoice\n", encoding="utf-8")
    p = rr(home, "warehouse", "config", str(bad), "-c", "chinook", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{bad}: invalid SQL config: examples[0].sql: refused by the SQL guard" in " ".join(p.stderr.split())
    assert json.loads(rr(home, "warehouse", "config", "-c", "chinook", "--json").stdout)["examples"]  # old one kept
