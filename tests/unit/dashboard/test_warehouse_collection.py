"""A collection loaded with `relayrag warehouse load` and no documents (issue 28): its page shows its warehouse
(tables, a link to the Warehouse page) instead of "nothing ingested yet, 0 / 0 / 0"."""

from __future__ import annotations

from tests.conftest import EXAMPLES


def test_a_warehouse_only_collection_page_shows_its_tables(api, home):
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "shop", [EXAMPLES / "chinook" / "chinook.sqlite"])
    page = api.get("/collections/shop")
    assert page.status_code == 200
    assert "nothing ingested yet" not in page.text and "0 / 0 / 0" not in page.text
    assert 'id="collection-warehouse"' in page.text and "11 tables" in page.text and "Album" in page.text
    assert 'href="/warehouse?collection=shop"' in page.text
    assert "this collection has only its warehouse" in page.text


def test_a_collection_without_a_warehouse_says_nothing_about_one(api, home):
    page = api.get("/collections/brandnew").text
    assert "nothing ingested yet" in page and 'id="collection-warehouse"' not in page
