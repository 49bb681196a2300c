"""Ties at a top-N answer's cut-off (issue 28 walk): a verified top-N query (ORDER BY measure … LIMIT n) whose LIMIT
cuts off rows tied with the last row shown says so, in the question's language; the wider query runs through
the same guard and warehouse path. On a tiny warehouse of its own, not Chinook."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.sql.ties import cutoff_ties, tie_note
from relayrag.sql.warehouse import load_warehouse, open_warehouse

SHOPS = "shop,city,orders\nA,Oslo,9\nB,Oslo,7\nC,Bergen,5\nD,Bergen,5\nE,Tromsø,5\nF,Bodø,2\n"
CONFIG = """examples:
  - question: Which three shops have the most orders? Show the shop and its orders.
    variants: ["注文が最も多い店を3つ挙げて、店と注文数を表示して。"]
    sql: SELECT shop, orders FROM shops ORDER BY orders DESC, shop LIMIT @n
    slots:
      n: count
  - question: Which two shops have the fewest orders?
    sql: SELECT shop, orders FROM shops ORDER BY orders ASC, shop LIMIT @n
    slots:
      n: count
"""


@pytest.fixture
def shops(home, tmp_path):
    csv = tmp_path / "shops.csv"
    csv.write_text(SHOPS, encoding="utf-8")
    cfg = tmp_path / "relayrag.sql.yaml"
    cfg.write_text(CONFIG, encoding="utf-8")
    load_warehouse(home, "shops", [csv], config=cfg)
    wh = open_warehouse(home, "shops")
    yield wh
    wh.close()


def test_a_tie_at_the_cut_off_is_found_through_the_guarded_path(shops):
    sql = "SELECT shop, orders FROM shops ORDER BY orders DESC, shop LIMIT 3"
    r = shops.query(sql)
    ties = cutoff_ties(r.sql, r.columns, r.rows, shops)
    assert ties is not None and [t[0] for t in ties.tied] == ["D", "E"] and ties.value == 5 and not ties.more
    assert tie_note(ties) == "D and E are tied with C at orders = 5 and are not shown (LIMIT 3 cut them off)."
    assert "D、E も C と同じ orders = 5" in tie_note(ties, japanese=True)
    r = shops.query("SELECT shop, orders FROM shops ORDER BY orders DESC, shop LIMIT 4")
    assert tie_note(cutoff_ties(r.sql, r.columns, r.rows, shops)).startswith("E is tied with D at orders = 5 and is")
    # no tie, nothing cut off, not a top-N, an ordering column not shown: nothing to say
    for q in ("SELECT shop, orders FROM shops ORDER BY orders DESC, shop LIMIT 2",
              "SELECT shop, orders FROM shops ORDER BY orders DESC LIMIT 10",
              "SELECT shop, orders FROM shops LIMIT 3",
              "SELECT shop FROM shops ORDER BY orders DESC, shop LIMIT 3"):
        r = shops.query(q)
        assert cutoff_ties(r.sql, r.columns, r.rows, shops) is None, q
    # an ORDER BY on a select expression (its alias is the column), ascending
    r = shops.query("SELECT city, SUM(orders) AS total FROM shops GROUP BY city ORDER BY SUM(orders), city LIMIT 1")
    assert r.rows == [["Bodø", 2]] and cutoff_ties(r.sql, r.columns, r.rows, shops) is None
    r = shops.query("SELECT city, COUNT(*) AS n FROM shops GROUP BY city ORDER BY COUNT(*) DESC, city LIMIT 1")
    ties = cutoff_ties(r.sql, r.columns, r.rows, shops)
    assert r.rows == [["Bergen", 2]] and [t[0] for t in ties.tied] == ["Oslo"] and ties.measure == "n"
    r = shops.query("SELECT city, COUNT(*) AS n FROM shops GROUP BY city ORDER BY COUNT(*) ASC, city LIMIT 1")
    ties = cutoff_ties(r.sql, r.columns, r.rows, shops)
    assert r.rows == [["Bodø", 1]] and [t[0] for t in ties.tied] == ["Tromsø"] and ties.measure == "n"


def test_a_wider_query_the_guard_refuses_reports_no_tie(shops):
    class Refusing:
        dialect = shops.dialect

        def query(self, sql):
            from relayrag.sql.warehouse import QueryResult
            return QueryResult(ok=False, refused=True, error="refused")
    r = shops.query("SELECT shop, orders FROM shops ORDER BY orders DESC, shop LIMIT 3")
    assert cutoff_ties(r.sql, r.columns, r.rows, Refusing()) is None


def test_a_verified_top_n_answer_says_which_tied_rows_it_left_out(ctx, shops):
    res = ask("Which three shops have the most orders?", "shops", ctx=ctx)
    assert res["route"] == "sql" and res["stages"][-1]["method"] == "verified"
    assert res["rows"] == [["A", 9], ["B", 7], ["C", 5]]
    lead = res["answer"].split("\n\n")[0]
    assert lead.startswith("Answered by the verified query “Which {n} shops have the most orders?")
    assert "no LLM was used" in lead and "no SQL was generated" not in lead
    assert "D and E are tied with C at orders = 5 and are not shown (LIMIT 3 cut them off)." in lead
    assert res["answer"].count(res["sql"]) == 1  # the SQL once, as the source
    ja = ask("注文が最も多い店を3つ挙げて", "shops", ctx=ctx)
    assert ja["stages"][-1]["method"] == "verified" and "LLMは使っていません" in ja["answer"]
    assert "D、E も C と同じ orders = 5 ですが、LIMIT 3 のため表示されていません。" in ja["answer"]
    two = ask("Which two shops have the fewest orders?", "shops", ctx=ctx)
    assert two["rows"] == [["F", 2], ["C", 5]] and "tied with C" in two["answer"] and "D and E" in two["answer"]
    four = ask("Which five shops have the most orders?", "shops", ctx=ctx)
    assert four["stages"][-1]["method"] == "verified" and "tied" not in four["answer"]
