"""Issue 25 in Chromium: on the Warehouse page of a no-LLM dashboard, a guarded query that ran is saved as a
verified template (its LIMIT written as the slot @n), and the Ask page then answers another wording with
other numbers from that template, without an LLM; a statement the guard refuses offers no "Save as verified"
and a template whose slot the question does not fill is not saved."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.browser.conftest import login, RELAYRAG, REPO, TOKEN, make_driver, run_dashboard, wait

TOP_N = ("SELECT g.Name AS genre, COUNT(*) AS tracks FROM Track AS t JOIN Genre AS g ON g.GenreId = t.GenreId "
         "GROUP BY g.Name ORDER BY tracks DESC, genre LIMIT {n}")


@pytest.fixture(scope="module")
def wh_server(tmp_path_factory):
    """`relayrag dashboard` without an LLM over a home whose collection `music` is the bundled Chinook warehouse
    with no SQL config (so only what the test saves can answer)."""
    home = tmp_path_factory.mktemp("whhome")
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_DASHBOARD_TOKENS": TOKEN, "HF_HUB_OFFLINE": "1",
           "RELAYRAG_LLM": "none", "RELAYRAG_ENGINE": "embedded"}
    subprocess.run([str(RELAYRAG), "warehouse", "load", str(REPO / "examples" / "chinook" / "chinook.sqlite"),
                    "-c", "music"], env=env, check=True, capture_output=True, timeout=600)
    with run_dashboard(home, env) as url:
        yield {"url": url, "home": home}


def _by():
    from selenium.webdriver.common.by import By
    return By


def _run_sql(d, url: str, sql: str):
    By = _by()
    d.get(url + "/warehouse?collection=music")
    box = d.find_element(By.ID, "sql")
    box.clear()
    box.send_keys(sql)
    d.find_element(By.ID, "run-sql").click()
    return wait(d, 60).until(lambda x: x.find_element(By.ID, "verdict"))


def _ask(d, url: str, question: str) -> str:
    By = _by()
    from selenium.webdriver.support.ui import Select
    d.get(url + "/ask?collection=music")
    d.find_element(By.ID, "question").send_keys(question)
    Select(d.find_element(By.ID, "collection")).select_by_value("music")
    d.find_element(By.ID, "ask").click()
    wait(d, 180).until(lambda x: x.find_elements(By.CSS_SELECTOR, ".ask-run .answer-block, .ask-run .error"))
    return d.find_element(By.CSS_SELECTOR, ".ask-run").text


def test_a_query_saved_as_verified_answers_another_wording_without_an_llm(wh_server, tmp_path):
    By = _by()
    url = wh_server["url"]
    d = make_driver()
    try:
        login(d, url)

        before = _ask(d, url, "What are the top 5 genres by number of tracks?")
        assert "Rock" not in before and "RELAYRAG_LLM" in before  # no template yet: says why, answers nothing

        assert _run_sql(d, url, "DROP TABLE Genre").text == "refused"
        assert not d.find_elements(By.ID, "save-verified")  # only a query that ran can be saved

        assert _run_sql(d, url, TOP_N.format(n=3)).text == "allowed"
        d.find_element(By.CSS_SELECTOR, "#save-verified summary").click()
        d.find_element(By.ID, "verify-question").send_keys("Which genres have the most tracks?")
        sql = d.find_element(By.ID, "verify-sql")
        sql.clear()
        sql.send_keys(TOP_N.format(n="@n"))
        d.find_element(By.ID, "verify-slots").send_keys("n=count")
        d.find_element(By.ID, "verify-save").click()
        refused = wait(d, 60).until(lambda x: x.find_element(By.ID, "verify-result")).text
        assert refused.startswith("Not saved") and "n" in refused  # the question names no count for @n

        q = d.find_element(By.ID, "verify-question")
        q.clear()
        q.send_keys("Which 3 genres have the most tracks?")
        d.find_element(By.ID, "verify-save").click()
        wait(d, 60).until(lambda x: x.find_element(By.ID, "verify-result").text.startswith("Saved as verified"))
        saved = d.find_element(By.ID, "verify-result").text
        assert "n = 3" in saved and "returned 3 rows" in saved
        d.save_screenshot(str(tmp_path / "saved.png"))

        after = _ask(d, url, "What are the top 5 genres by number of tracks?")
        d.save_screenshot(str(tmp_path / "answered.png"))
        assert "verified" in after and "Rock" in after and "1297" in after.replace(",", "")
        assert "Reggae" not in after  # 5 rows, not the whole list
    finally:
        d.quit()
