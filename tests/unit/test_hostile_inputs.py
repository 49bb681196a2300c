"""Hostile inputs through the CLI (issue 24 rows 6 and 9): a manifest line nested 100,000 deep, non-finite
numbers in manifests and filters. Each answer is exit 2 with one line (a JSON error object with --json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from relayrag import cli
from tests.conftest import EXAMPLES


def invoke(*args: str):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


@pytest.fixture
def policies(tmp_path) -> Path:
    return Path(shutil.copytree(EXAMPLES / "policies", tmp_path / "policies"))


def test_a_manifest_line_nested_100000_deep_is_exit_2_with_one_line(home, policies):
    rows = (policies / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    rows.insert(1, '{"document_path": "x.md", "tags": ' + "[" * 100_000 + "]" * 100_000 + "}")
    bad = policies / "deep.jsonl"
    bad.write_text("\n".join(rows) + "\n", encoding="utf-8")
    schema = policies / "relayrag.collection.yaml"
    r = invoke("ingest", policies, "-c", "pol", "--manifest", bad, "--schema", schema, "--no-progress")
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "RecursionError" not in r.output
    assert "line 2: not a JSON object (JSON nested deeper than 20 levels)" in r.output
    r = invoke("ingest", policies, "-c", "pol", "--manifest", bad, "--schema", schema, "--json")
    assert r.exit_code == 2
    out = json.loads(r.stdout)
    assert "line 2" in json.dumps(out) and "nested deeper" in json.dumps(out)


def test_non_finite_numbers_are_refused_in_manifests_and_filters(home, policies):
    schema = policies / "relayrag.collection.yaml"
    text = (policies / "manifest.jsonl").read_text(encoding="utf-8")
    nan = policies / "nan.jsonl"
    nan.write_text(text.replace('"review_cycle_months": 24', '"review_cycle_months": NaN', 1), encoding="utf-8")
    r = invoke("ingest", policies, "-c", "pol", "--manifest", nan, "--schema", schema, "--json")
    assert r.exit_code == 2 and "NaN is not a number JSON allows" in json.loads(r.stdout)["error"]
    r = invoke("ingest", policies, "-c", "pol", "--manifest", policies / "manifest.jsonl", "--schema", schema,
               "--no-progress")
    assert r.exit_code == 0, r.output
    for value in ("nan", "inf", "-Infinity", "1e999"):
        r = invoke("search", "travel", "-c", "pol", "--filter", f"review_cycle_months>={value}", "--json")
        assert r.exit_code == 2, (value, r.output)
        assert "is not a finite number" in json.loads(r.stdout)["error"]
    js = invoke("collections", "pol", "--json")
    json.loads(js.stdout, parse_constant=lambda c: pytest.fail(f"{c} in collections --json"))


def test_a_full_disk_is_one_line_and_asks_keep_answering(home, small_corpus, monkeypatch):
    """Issue 24 row 10: a full disk during ingest was a 118-line traceback, and every ask failed with `database
    or disk is full` though the index was intact and answering needs no writing."""
    import errno
    import sqlite3

    from relayrag.backends import blobstore, docstore
    assert invoke("ingest", small_corpus, "-c", "docs", "--no-progress").exit_code == 0
    (small_corpus / "more.md").write_text("# More\n\nAnother note about solar panels on roofs.", encoding="utf-8")

    def no_space(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(blobstore.LocalBlobStore, "put_bytes", no_space)
        r = invoke("ingest", small_corpus, "-c", "docs", "--no-progress")
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "no space left for RELAYRAG_HOME" in r.output
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1

    def full(self):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(docstore.SQLiteDocStore._Tx, "__enter__", full)  # every write fails, reads work
    r = invoke("ask", "How many worker bees can a colony contain?", "-c", "docs")
    assert r.exit_code == 0, r.output
    assert "60,000" in r.stdout and "Traceback" not in r.output
    assert "run records, traces and bandit rewards are not stored" in r.stderr
    js = invoke("ask", "How many worker bees can a colony contain?", "-c", "docs", "--json")
    assert js.exit_code == 0 and "60,000" in json.loads(js.stdout)["answer"]
