"""BigQuery warehouse against a test double of the client (google-cloud-bigquery need not be installed):
dry run before run, refusal over budget, maximum_bytes_billed and a job timeout set, the guard first."""

from types import SimpleNamespace

import pytest

from relayrag.sql.warehouse import BigQueryWarehouse, Warehouse


class FakeQueryJobConfig:
    def __init__(self, **kw):
        self.__dict__.update(kw)


FAKE_BQ = SimpleNamespace(QueryJobConfig=FakeQueryJobConfig)


class FakeRow(tuple):
    def values(self):
        return tuple(self)


class FakeRowIterator(list):
    schema = [SimpleNamespace(name="n")]


class FakeClient:
    def __init__(self, bytes_processed=1_000):
        self.bytes_processed = bytes_processed
        self.calls = []

    def list_tables(self, dataset):
        self.calls.append(("list_tables", dataset))
        return [SimpleNamespace(table_id="Customer"), SimpleNamespace(table_id="Invoice")]

    def get_table(self, table_id):
        self.calls.append(("get_table", table_id))
        cols = {"Customer": ["CustomerId", "Country"], "Invoice": ["InvoiceId", "CustomerId", "Total"]}
        name = table_id.rsplit(".", 1)[-1]
        return SimpleNamespace(num_rows=59, schema=[SimpleNamespace(name=c, field_type="STRING")
                                                    for c in cols[name]])

    def query(self, sql, job_config=None, timeout=None):
        self.calls.append(("query", sql, job_config, timeout))
        if getattr(job_config, "dry_run", False):
            return SimpleNamespace(total_bytes_processed=self.bytes_processed)
        client = self

        class Job:
            def result(self, timeout=None, max_results=None):
                client.calls.append(("result", timeout, max_results))
                return FakeRowIterator([FakeRow((5,))])
        return Job()


def make(client, **kw):
    return BigQueryWarehouse("proj", "chinook", client=client, bigquery_module=FAKE_BQ, **kw)


def test_dry_run_then_run_with_maximum_bytes_billed():
    client = FakeClient(bytes_processed=2_000)
    wh = make(client, max_bytes_billed=10_000, timeout_s=12)
    assert isinstance(wh, Warehouse)
    r = wh.query("SELECT COUNT(*) AS n FROM Customer WHERE Country = 'Brazil'")
    assert r.ok and r.rows == [[5]] and r.columns == ["n"] and r.bytes_estimated == 2_000
    queries = [c for c in client.calls if c[0] == "query"]
    assert len(queries) == 2
    dry, real = queries[0][2], queries[1][2]
    assert dry.dry_run is True and dry.use_query_cache is False and dry.default_dataset == "proj.chinook"
    assert not getattr(real, "dry_run", False)
    assert real.maximum_bytes_billed == 10_000 and real.job_timeout_ms == 12_000 and queries[1][3] == 12
    assert queries[0][1] == queries[1][1] and queries[1][1].endswith("LIMIT 1000")  # the guarded SQL ran
    assert ("result", 12, 1001) in client.calls


def test_over_budget_is_refused_after_the_dry_run_only():
    client = FakeClient(bytes_processed=5_000_000)
    r = make(client, max_bytes_billed=1_000_000).query("SELECT * FROM Invoice")
    assert not r.ok and r.refused and r.refusal_code == "budget" and "5,000,000 bytes" in r.error
    queries = [c for c in client.calls if c[0] == "query"]
    assert len(queries) == 1 and queries[0][2].dry_run is True


@pytest.mark.parametrize("sql", ["DROP TABLE Customer", "SELECT 1; DELETE FROM Invoice",
                                 "SELECT * FROM EXTERNAL_QUERY('conn', 'SELECT 1')", "SELECT * FROM other.secret"])
def test_guard_refuses_before_any_call(sql):
    client = FakeClient()
    r = make(client).query(sql)
    assert not r.ok and r.refused
    assert not [c for c in client.calls if c[0] == "query"]


def test_qualified_dataset_names_are_allowed():
    client = FakeClient()
    assert make(client).query("SELECT COUNT(*) AS n FROM chinook.Customer").ok
    assert make(client).query("SELECT COUNT(*) AS n FROM proj.chinook.Customer").ok


def test_client_errors_are_results():
    class Failing(FakeClient):
        def query(self, sql, job_config=None, timeout=None):
            raise RuntimeError("403 Access Denied")
    r = make(Failing()).query("SELECT * FROM Customer")
    assert not r.ok and "403" in r.error


def test_settings_route_a_collection_to_bigquery_through_the_whole_sql_route(make_llm_ctx, monkeypatch):
    """RELAYRAG_BIGQUERY_DATASET + RELAYRAG_BIGQUERY_COLLECTIONS make a collection's warehouse the BigQuery
    dataset (how the cloud sql function runs): classify routes to sql, the sql stage dry-runs then runs
    with the configured budget as maximum_bytes_billed, and the answer shows the SQL."""
    from relayrag.engine.local import ask
    from tests.conftest import sql_route_reply
    from relayrag.settings import load_settings
    from relayrag.sql import warehouse as wmod

    monkeypatch.setenv("RELAYRAG_BIGQUERY_DATASET", "proj.chinook")
    monkeypatch.setenv("RELAYRAG_BIGQUERY_COLLECTIONS", "sales")
    monkeypatch.setenv("RELAYRAG_BIGQUERY_MAX_BYTES_BILLED", "50000")
    load_settings.cache_clear()
    client = FakeClient(bytes_processed=4_000)
    wh = BigQueryWarehouse("proj", "chinook", max_bytes_billed=50_000, client=client, bigquery_module=FAKE_BQ)
    monkeypatch.setattr(wmod, "_open_bq", {("proj", "chinook", 50_000): wh})
    sql = "SELECT COUNT(*) AS n FROM Customer WHERE Country = 'Brazil'"

    ctx, _ = make_llm_ctx(sql_route_reply(sql))
    assert wmod.warehouse_record(ctx.settings.home, "other") is None  # only the listed collections
    res = ask("How many customers are in Brazil?", "sales", ctx=ctx)
    assert res["route"] == "sql" and res["rows"] == [[5]] and sql in res["sql"]
    dry, run = [c[2] for c in client.calls if c[0] == "query"]
    assert dry.dry_run is True and run.maximum_bytes_billed == 50_000
    assert "Customer" in res["answer"]


def test_templates_answer_on_bigquery_as_on_the_embedded_warehouse(home, ctx, monkeypatch, tmp_path):
    """Issue 25: the bundled Chinook config stored for a BigQuery collection; without an LLM its templates
    answer with the question's values, the same rows as the embedded warehouse. Value slots read their
    columns' values through the warehouse (dry run first, within the budget), and every filled template is
    dry-run before it runs."""
    from relayrag.context import set_default_context
    from relayrag.engine.local import ask
    from relayrag.service import Service
    from relayrag.settings import load_settings
    from relayrag.sql import warehouse as wmod
    from tests.unit.sql.bigquery_chinook import MODULE, ChinookClient
    from tests.unit.sql.conftest import CHINOOK, CONFIG

    questions = ["Which 5 countries have the most customers?", "顧客が多い国トップ3は？",
                 "How much was billed in total to Germany?", "ドイツで請求された金額の合計は？",
                 "Revenue by billing country in the first half of 2024", "2023年の月別売上を表示して",
                 "Who are Jane Peacock's customers?", "How many songs are in the Rock genre?"]
    wmod.load_warehouse(home, "chinook", [CHINOOK], config=CONFIG)
    embedded = {q: ask(q, "chinook", ctx=ctx) for q in questions}

    db = tmp_path / "bq.duckdb"
    wmod.load_into_duckdb([CHINOOK], db)
    client = ChinookClient(db)
    monkeypatch.setenv("RELAYRAG_BIGQUERY_DATASET", "proj.chinook")
    monkeypatch.setenv("RELAYRAG_BIGQUERY_COLLECTIONS", "sales")
    load_settings.cache_clear()
    set_default_context(None)
    budget = load_settings().bigquery_max_bytes_billed
    bq = BigQueryWarehouse("proj", "chinook", max_bytes_billed=budget, client=client, bigquery_module=MODULE)
    monkeypatch.setattr(wmod, "_open_bq", {("proj", "chinook", budget): bq})
    svc = Service()
    assert svc.sql_config_store("sales", CONFIG)["templates"] == 7
    for q in questions:
        res = ask(q, "sales", ctx=svc.ctx)
        assert res["stages"][-1]["method"] == "verified", (q, res["answer"])
        assert res["rows"] == embedded[q]["rows"] and res["rows"], q
    ran = [sql for kind, sql in client.calls if kind == "query"]
    dry = [sql for kind, sql in client.calls if kind == "dry_run"]
    assert ran and all(sql in dry for sql in ran)
    assert any("SELECT DISTINCT" in sql and "`Genre`.`Name`" in sql for sql in ran)  # a value slot's values
    assert any("LIMIT 5" in sql for sql in ran) and any("'Germany'" in sql for sql in ran)
    miss = ask("How many Jazz tracks are longer than 5 minutes?", "sales", ctx=svc.ctx)
    assert miss["stages"][-1]["method"] == "no-llm" and "longer than 5 minutes" in miss["answer"]
