"""Deployed shape: the sql function reads the collection's SQL config from the shared store, not a local folder.

An operator stores a `relayrag.sql.yaml` with the deployment's settings (RELAYRAG_BLOBSTORE=gcs against the
bucket, the BigQuery warehouse it is checked against). Then the sql function bundle (functions/main.py, served
by functions-framework's app, as Cloud Functions runs it) starts with an EMPTY RELAYRAG_HOME — as a fresh
Cloud Functions instance does — and answers a question whose glossary term only the stored config defines:
the run record's `sql_context` names the term and the prompt the LLM got carries its SQL. The bucket is
gcp-storage-emulator (in-process, on 127.0.0.1); BigQuery is the client double of tests/unit/sql/test_bigquery.py;
the LLM is the scripted double. Before issue 9 the config was read only from RELAYRAG_HOME/warehouses/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ScriptedLLM, sql_route_reply
from tests.emulators import gcs_emulator
from tests.unit.sql.test_bigquery import FAKE_BQ, FakeClient

REPO = Path(__file__).resolve().parents[2]
CONFIG = """\
glossary:
  brazilian_customers:
    synonyms: [brasileiros]
    meaning: customers whose country is Brazil
    sql: "Customer.Country = 'Brazil'"
notes: Revenue is Invoice.Total.
"""


@pytest.fixture
def bucket(monkeypatch):
    pytest.importorskip("gcp_storage_emulator", reason="gcp-storage-emulator (dev extra) is not installed")
    pytest.importorskip("google.cloud.storage", reason="google-cloud-storage (dev extra) is not installed")
    with gcs_emulator("relayrag-deployed") as emu:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu["endpoint"])
        yield emu["bucket"]


def deployment_env(monkeypatch, home: Path, bucket: str) -> None:
    from relayrag.context import set_default_context
    from relayrag.settings import load_settings
    for k, v in {"RELAYRAG_HOME": str(home), "RELAYRAG_BLOBSTORE": "gcs", "RELAYRAG_GCS_BUCKET": bucket,
                 "RELAYRAG_GCP_PROJECT": "demo-relayrag", "RELAYRAG_BIGQUERY_DATASET": "proj.chinook",
                 "RELAYRAG_BIGQUERY_COLLECTIONS": "sales"}.items():
        monkeypatch.setenv(k, v)
    load_settings.cache_clear()
    set_default_context(None)


def test_deployed_sql_function_reads_the_config_from_the_bucket(bucket, tmp_path, monkeypatch):
    from functions_framework import create_app

    from relayrag.context import StageContext, build_blobstore, build_docstore, set_default_context
    from relayrag.service import Service
    from relayrag.settings import load_settings
    from relayrag.sql import warehouse as wmod

    client = FakeClient(bytes_processed=4_000)
    bq = wmod.BigQueryWarehouse("proj", "chinook", max_bytes_billed=load_settings().bigquery_max_bytes_billed,
                                client=client, bigquery_module=FAKE_BQ)

    # the operator's machine: store the config with the deployment's settings
    admin_home = tmp_path / "admin"
    deployment_env(monkeypatch, admin_home, bucket)
    monkeypatch.setattr(wmod, "_open_bq", {("proj", "chinook", load_settings().bigquery_max_bytes_billed): bq})
    src = tmp_path / "relayrag.sql.yaml"
    src.write_text(CONFIG, encoding="utf-8")
    summary = Service().sql_config_store("sales", src)
    assert summary["glossary"] == 1 and summary["config"] == f"gs://{bucket}/sql-config/sales.sql.yaml"
    assert not (admin_home / "warehouses").exists()  # nothing stored locally

    # a fresh function instance: empty home, the same bucket and dataset, the deployed bundle's entry point
    fn_home = tmp_path / "function"
    deployment_env(monkeypatch, fn_home, bucket)
    s = load_settings()
    sql = "SELECT COUNT(*) AS n FROM Customer WHERE Customer.Country = 'Brazil'"
    llm = ScriptedLLM(sql_route_reply(sql))
    ctx = StageContext(s, build_blobstore(s), build_docstore(s), llm=llm)
    set_default_context(ctx)
    try:
        ctx.docstore.create_run("r1", {"run_id": "r1", "question": "Quantos clientes brasileiros temos?",
                                       "collection": "sales", "created_at": 0.0, "retry_count": 0,
                                       "regen_count": 0, "route": "sql"})
        app = create_app(target="sql", source=str(REPO / "functions" / "main.py"))
        resp = app.test_client().post("/", json={"run_id": "r1"})
        assert resp.status_code == 200, resp.get_data(as_text=True)
        assert resp.get_json()["ok"] is True
        rec = ctx.docstore.get_run("r1")
        assert rec["sql_context"]["config"] is True
        assert [g["term"] for g in rec["sql_context"]["glossary"]] == ["brazilian_customers"]
        prompt = "\n".join(m["content"] for c in llm.calls for m in c["messages"])
        assert "Customer.Country = 'Brazil'" in prompt and "Revenue is Invoice.Total." in prompt
        assert rec["rows"] == [[5]]
        assert not (fn_home / "warehouses").exists()  # the function read nothing from a local folder
    finally:
        set_default_context(None)
        load_settings.cache_clear()


def test_deployed_sql_function_answers_templates_from_the_bucket_without_an_llm(bucket, tmp_path, monkeypatch):
    """Issue 25: a template added with `relayrag warehouse verify` on the operator's machine (deployment settings:
    the bucket, the BigQuery dataset) is in the shared config; a fresh sql function instance with no LLM answers
    another wording of it, with the question's values, on BigQuery (a client double that runs the SQL)."""
    from functions_framework import create_app

    from relayrag.context import StageContext, build_blobstore, build_docstore, set_default_context
    from relayrag.service import Service
    from relayrag.settings import load_settings
    from relayrag.sql import warehouse as wmod
    from tests.unit.sql.bigquery_chinook import MODULE, ChinookClient

    db = tmp_path / "bq.duckdb"
    wmod.load_into_duckdb([REPO / "examples" / "chinook" / "chinook.sqlite"], db)
    client = ChinookClient(db)
    admin_home = tmp_path / "admin"
    deployment_env(monkeypatch, admin_home, bucket)
    budget = load_settings().bigquery_max_bytes_billed
    bq = wmod.BigQueryWarehouse("proj", "chinook", max_bytes_billed=budget, client=client, bigquery_module=MODULE)
    monkeypatch.setattr(wmod, "_open_bq", {("proj", "chinook", budget): bq})
    svc = Service()
    svc.sql_config_store("sales", REPO / "examples" / "chinook" / "relayrag.sql.yaml")
    rec = svc.sql_verify("sales", "Which 3 genres have the most tracks?",
                         "SELECT g.Name AS genre, COUNT(*) AS tracks FROM Track AS t JOIN Genre AS g "
                         "ON g.GenreId = t.GenreId GROUP BY g.Name ORDER BY tracks DESC LIMIT @n", ["n=count"])
    assert rec["config"] == f"gs://{bucket}/sql-config/sales.sql.yaml" and rec["templates"] == 8
    assert not (admin_home / "warehouses").exists()

    fn_home = tmp_path / "function"
    deployment_env(monkeypatch, fn_home, bucket)
    s = load_settings()
    ctx = StageContext(s, build_blobstore(s), build_docstore(s), llm=None, llm_configured=False)
    set_default_context(ctx)
    try:
        app = create_app(target="sql", source=str(REPO / "functions" / "main.py")).test_client()
        for run_id, question, rows in (("t1", "What are the top 5 genres by number of tracks?", 5),
                                       ("t2", "Which 4 countries have the most customers?", 4)):
            ctx.docstore.create_run(run_id, {"run_id": run_id, "question": question, "collection": "sales",
                                             "created_at": 0.0, "retry_count": 0, "regen_count": 0, "route": "sql"})
            resp = app.post("/", json={"run_id": run_id})
            assert resp.status_code == 200, resp.get_data(as_text=True)
            assert resp.get_json()["method"] == "verified"
            rec = ctx.docstore.get_run(run_id)
            assert len(rec["rows"]) == rows and f"LIMIT {rows}" in rec["sql"]
        assert not (fn_home / "warehouses").exists()
    finally:
        set_default_context(None)
        load_settings.cache_clear()
