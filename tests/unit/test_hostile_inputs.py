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
