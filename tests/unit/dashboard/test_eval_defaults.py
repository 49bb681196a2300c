"""The Evaluation page's default selection (issue 28): a set that fits the selected collection (documents → an
answers set, a warehouse → a SQL set, BEIR last), and the choice a query string names (what a reload keeps)."""

from __future__ import annotations

import json
import re

from relayrag.dashboard.backend import dataset_fits, eval_choice

from tests.conftest import EXAMPLES

DATASETS = [{"id": "dev", "kind": "sql"}, {"id": "golden", "kind": "answers"}, {"id": "aa-beir", "kind": "beir"}]
DOCS = {"name": "bad", "current_version": "v1", "warehouse": None}
SHOP = {"name": "shop", "current_version": None, "warehouse": {"tables": ["Album"]}}
BOTH = {"name": "both", "current_version": "v1", "warehouse": {"tables": ["Album"]}}
EMPTY = {"name": "new", "current_version": None, "warehouse": None}


def test_a_set_fits_a_collection_by_what_it_needs():
    assert dataset_fits("sql", SHOP) and not dataset_fits("sql", DOCS)
    assert dataset_fits("answers", DOCS) and not dataset_fits("answers", SHOP)
    assert all(dataset_fits("beir", c) for c in (DOCS, SHOP, EMPTY))


def test_the_default_is_a_set_that_fits_the_first_or_named_collection():
    assert eval_choice(DATASETS, [DOCS, SHOP]) == ("golden", "bad")          # not "dev (sql)" on documents
    assert eval_choice(DATASETS, [SHOP, DOCS]) == ("dev", "shop")
    assert eval_choice(DATASETS, [DOCS, SHOP], collection="shop") == ("dev", "shop")
    assert eval_choice(DATASETS, [EMPTY]) == ("aa-beir", "new")              # only BEIR fits an empty collection
    assert eval_choice(DATASETS, [BOTH]) == ("dev", "both")                  # both fit: the first by name
    assert eval_choice(DATASETS, [DOCS], dataset_id="dev", collection="bad") == ("dev", "bad")  # what was asked
    assert eval_choice(DATASETS, [DOCS], dataset_id="gone", collection="gone") == ("golden", "bad")
    assert eval_choice([], [DOCS]) == (None, "bad") and eval_choice(DATASETS, []) == ("dev", None)
    assert eval_choice([{"id": "dev", "kind": "sql"}], [DOCS]) == ("dev", "bad")  # nothing fits: still a choice


def _selected(page: str, select_id: str) -> str:
    block = re.search(rf'<select[^>]*id="{select_id}"[^>]*>(.*?)</select>', page, re.S).group(1)
    return re.search(r'<option value="([^"]+)"[^>]*selected', block).group(1)


def test_the_page_selects_the_fitting_set_and_keeps_the_named_choice(api, home, ctx, small_corpus, tmp_path,
                                                                     monkeypatch):
    from relayrag.service import Service
    from relayrag.sql.warehouse import load_warehouse
    Service(ctx).ingest(small_corpus, "bad")
    load_warehouse(home, "shop", [EXAMPLES / "chinook" / "chinook.sqlite"])
    root = tmp_path / "sets"
    root.mkdir()
    (root / "dev.jsonl").write_text(json.dumps({"id": "q", "question": "How many?", "gold_sql": "SELECT 1",
                                               "gold_result": [[1]]}) + "\n")
    (root / "golden.jsonl").write_text(json.dumps({"id": "e", "question": "Eggs?", "answers": ["2,000"]}) + "\n")
    monkeypatch.setenv("RELAYRAG_DASHBOARD_DATASETS", str(root))
    page = api.get("/eval").text
    assert (_selected(page, "dataset"), _selected(page, "eval-collection")) == ("golden", "bad")
    assert "does not fit" not in page
    page = api.get("/eval?collection=shop").text
    assert (_selected(page, "dataset"), _selected(page, "eval-collection")) == ("dev", "shop")
    page = api.get("/eval?dataset=dev&collection=bad").text  # the user's own choice is kept, with a warning
    assert (_selected(page, "dataset"), _selected(page, "eval-collection")) == ("dev", "bad")
    assert "dev does not fit bad" in page and 'data-kind="sql"' in page and 'data-warehouse="1"' in page
