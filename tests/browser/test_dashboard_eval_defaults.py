"""The Evaluation page and a warehouse-only collection in a real headless Chromium (issue 28, a new user's walk):
the page used to default to the first set ("dev", a SQL set) on the first collection (a documents-only one), a red
error on the first click, and to forget the choice after a run; a collection loaded with `relayrag warehouse load`
said "nothing ingested yet, 0 / 0 / 0" without a word about its tables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.browser.conftest import logged_in_browser, REPO, RELAYRAG, TOKEN, run_dashboard, wait

CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
SQL_SET = REPO / "tests" / "fixtures" / "text2sql" / "dev.jsonl"


@pytest.fixture(scope="module")
def eval_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    docs = tmp_path_factory.mktemp("docs")
    (docs / "bees.txt").write_text("A colony can contain up to 60,000 worker bees in summer. The queen lays up to "
                                   "2,000 eggs per day.", encoding="utf-8")
    sets = tmp_path_factory.mktemp("sets")
    (sets / "dev.jsonl").write_text("".join(SQL_SET.read_text(encoding="utf-8").splitlines(True)[:2]), encoding="utf-8")
    rows = [{"id": "eggs", "question": "How many eggs does the queen bee lay per day?", "answers": ["2,000"],
             "doc": "bees.txt", "page": 1},
            {"id": "mercury", "question": "What is the boiling point of mercury in kelvin?", "unanswerable": True}]
    (sets / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_DASHBOARD_TOKENS": TOKEN, "HF_HUB_OFFLINE": "1",
           "RELAYRAG_LLM": "none", "RELAYRAG_ENGINE": "embedded", "RELAYRAG_DASHBOARD_DATASETS": str(sets)}
    # "bad" sorts first and has documents only; "shop" has only a warehouse
    subprocess.run([str(RELAYRAG), "ingest", str(docs), "-c", "bad", "--no-progress"], env=env, check=True,
                   capture_output=True, timeout=600)
    db = tmp_path_factory.mktemp("wh") / "chinook.sqlite"
    shutil.copy(CHINOOK, db)
    subprocess.run([str(RELAYRAG), "warehouse", "load", str(db), "-c", "shop"], env=env, check=True,
                   capture_output=True, timeout=600)
    with run_dashboard(home, env) as url:
        yield {"url": url, "home": home, "env": env}


@pytest.fixture
def browser(eval_server, tmp_path, request):
    with logged_in_browser(eval_server["url"], tmp_path / f"{request.node.name}-final.png") as d:
        yield d


def _selected(d) -> tuple[str, str]:
    from selenium.webdriver.support.ui import Select
    from selenium.webdriver.common.by import By
    return (Select(d.find_element(By.ID, "dataset")).first_selected_option.get_attribute("value"),
            Select(d.find_element(By.ID, "eval-collection")).first_selected_option.get_attribute("value"))


def test_evaluation_defaults_to_a_set_that_fits_the_collection_and_keeps_the_choice(browser, eval_server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    d = browser
    d.get(eval_server["url"] + "/eval")
    assert _selected(d) == ("golden", "bad")  # documents → an answers set, not "dev (sql)"
    Select(d.find_element(By.ID, "eval-collection")).select_by_value("shop")
    assert _selected(d) == ("dev", "shop")  # a warehouse → the SQL set
    Select(d.find_element(By.ID, "eval-collection")).select_by_value("bad")
    assert _selected(d) == ("golden", "bad")
    d.find_element(By.ID, "run-eval").click()
    wait(d, 300).until(lambda x: x.find_elements(By.CSS_SELECTOR, ".eval-run .eval-result, .eval-run .error"))
    run = d.find_element(By.CSS_SELECTOR, ".eval-run")
    d.save_screenshot(str(tmp_path / "eval-run.png"))
    assert not run.find_elements(By.CSS_SELECTOR, ".error"), run.text
    assert "answer accuracy" in run.text
    assert _selected(d) == ("golden", "bad")
    d.refresh()  # a reload (or coming back to the page) keeps the choice
    assert _selected(d) == ("golden", "bad")
    Select(d.find_element(By.ID, "eval-collection")).select_by_value("shop")
    d.get(eval_server["url"] + "/runs")
    d.back()
    assert _selected(d) == ("dev", "shop")


def test_a_warehouse_only_collection_shows_its_warehouse(browser, eval_server, tmp_path):
    from selenium.webdriver.common.by import By
    d = browser
    d.get(eval_server["url"] + "/collections/shop")
    d.save_screenshot(str(tmp_path / "collection-shop.png"))
    summary = d.find_element(By.ID, "collection-summary").text
    assert "nothing ingested yet" not in summary and "0 / 0 / 0" not in summary, summary
    wh = d.find_element(By.ID, "collection-warehouse")
    assert "11 tables" in wh.text, wh.text
    link = wh.find_element(By.CSS_SELECTOR, "a[href*='/warehouse']")
    link.click()
    wait(d, 30).until(lambda x: "/warehouse" in x.current_url)
    assert "shop" in d.find_element(By.TAG_NAME, "main").text
