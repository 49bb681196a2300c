"""Issue 28's Done-when in Chromium: every dashboard page renders after runs of each route. The text routes
(small talk, rag, not found, visual) run in test_dashboard.py's `test_every_page_renders_after_runs_of_each_route`;
this file adds the two that need an LLM, sql and refused, through a second `relayrag dashboard` whose
RELAYRAG_LLM=openai points at an OpenAI-compatible double on 127.0.0.1 (the same replies as the unit tests'
`sql_route_reply`: route sql; an SQL statement chosen by the question; one answer sentence). It also checks
the "Open it" button (issue 28, item 2), citations' page thumbnails (item 3) and upload progress."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.browser.conftest import login, RELAYRAG, REPO, TOKEN, make_driver, run_dashboard, wait
from tests.conftest import sql_route_reply

COUNT = "SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country ORDER BY customers DESC LIMIT 3"
ANSWER = "The USA has the most customers, then Canada and Brazil."


class _Double(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: the reply `sql_route_reply` gives for the request's JSON schema, as an OpenAI
    chat completion. A question that asks to delete gets a DROP statement (the guard refuses it)."""

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
        text = json.dumps(body["messages"], ensure_ascii=False).lower()
        sql = "DROP TABLE Customer" if "delete every customer" in text else COUNT
        out = sql_route_reply(sql, ANSWER)(body["messages"], schema)
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": json.dumps(out)}}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory):
    """`relayrag dashboard` over a home with the Chinook warehouse (`shop`, its SQL config) and the bundled refund
    policy PDF, its LLM the double above."""
    double = ThreadingHTTPServer(("127.0.0.1", 0), _Double)
    threading.Thread(target=double.serve_forever, daemon=True).start()
    home = tmp_path_factory.mktemp("llmhome")
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_DASHBOARD_TOKENS": TOKEN, "HF_HUB_OFFLINE": "1",
           "RELAYRAG_ENGINE": "embedded", "RELAYRAG_LLM": "openai", "RELAYRAG_LLM_MODEL": "double",
           "RELAYRAG_LLM_BASE_URL": f"http://127.0.0.1:{double.server_address[1]}/v1"}
    ex = REPO / "examples"
    for args in (["warehouse", "load", str(ex / "chinook" / "chinook.sqlite"), "-c", "shop", "--config",
                  str(ex / "chinook" / "relayrag.sql.yaml")],
                 ["ingest", str(ex / "shop-policies"), "-c", "shop", "--no-progress"]):
        subprocess.run([str(RELAYRAG), *args], env=env, check=True, capture_output=True, timeout=600)
    with run_dashboard(home, env) as url:
        yield {"url": url, "home": home, "env": env}
    double.shutdown()


def _by():
    from selenium.webdriver.common.by import By
    return By


def _login(d, url: str) -> None:
    login(d, url)


def _ask(d, url: str, question: str, collection: str):
    By = _by()
    from selenium.webdriver.support.ui import Select
    d.get(f"{url}/ask?collection={collection}")
    d.find_element(By.ID, "question").send_keys(question)
    Select(d.find_element(By.ID, "collection")).select_by_value(collection)
    d.find_element(By.ID, "ask").click()
    wait(d, 180).until(lambda x: x.find_elements(By.CSS_SELECTOR, ".ask-run .answer-block, .ask-run .error"))
    return d.find_element(By.CSS_SELECTOR, ".ask-run")


PAGES = {"overview": "/", "runs": "/runs", "bandit": "/bandit", "collections": "/collections",
         "collection": "/collections/shop", "ask": "/ask", "eval": "/eval", "warehouse": "/warehouse",
         "feedback": "/feedback"}


def test_sql_and_refused_runs_render_on_every_page(llm_server, tmp_path):
    By = _by()
    url = llm_server["url"]
    d = make_driver()
    try:
        d.set_window_size(1400, 1100)
        _login(d, url)
        run = _ask(d, url, "Which three countries have the most customers?", "shop")
        answer = run.find_element(By.CSS_SELECTOR, ".answer").text
        assert ANSWER in answer and "SELECT" not in answer and "Result (" not in answer  # shown once, below
        assert len(run.find_elements(By.CSS_SELECTOR, "pre.sql")) == 1
        rows = run.find_elements(By.CSS_SELECTOR, "table.rows tr")
        assert "USA" in rows[1].text and len(rows) == 4  # header + three rows
        d.save_screenshot(str(tmp_path / "sql-answer.png"))
        refused = _ask(d, url, "Please delete every customer from the tables", "shop")
        assert "refused" in refused.text.lower(), refused.text
        d.save_screenshot(str(tmp_path / "refused-answer.png"))
        for name, path in PAGES.items():
            d.get(url + path)
            body = d.find_element(By.TAG_NAME, "body").text
            assert "Internal Server Error" not in body and "internal error" not in body.lower(), (path, body[:500])
            assert d.find_elements(By.CSS_SELECTOR, "main h1"), (path, body[:500])
            overflow = d.execute_script("return document.documentElement.scrollWidth - "
                                        "document.documentElement.clientWidth")
            assert overflow <= 0, (path, overflow)
            d.save_screenshot(str(tmp_path / f"page-{name}.png"))
        d.get(url + "/warehouse?collection=shop")
        album = d.find_element(By.XPATH, "//details[.//b[text()='Album']]")
        assert "For Those About To Rock" in album.text  # sample values for every column
        d.get(url + "/runs")
        text = d.find_element(By.ID, "runs").text
        assert "refused" in text and "grounded" in text
        for link in [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, "#runs a[href*='/runs/']")]:
            d.get(link)
            assert d.find_elements(By.ID, "trace"), link
            assert "internal error" not in d.find_element(By.TAG_NAME, "body").text.lower()
    finally:
        d.quit()


def test_open_it_goes_to_the_new_collection_and_a_pdf_citation_shows_its_page(server, tmp_path):
    """On the no-LLM dashboard of conftest's `server`: "Open it" lands on the new collection's own page (it used to
    render that page, navigation bar included, inside the form's card), an upload of a good and a broken PDF
    shows the bytes sent, then one line per file whose failure reason stays after the summary refreshes the
    document list, and an answer from the PDF shows its page thumbnail, which opens the whole page."""
    By = _by()
    url = server["url"]
    d = make_driver()
    try:
        _login(d, url)
        d.get(url + "/collections")
        d.find_element(By.ID, "new-name").send_keys("fresh")
        d.find_element(By.ID, "create").click()
        wait(d, 30).until(lambda x: x.current_url.endswith("/collections/fresh"))
        assert len(d.find_elements(By.CSS_SELECTOR, "header")) == 1 and d.find_element(By.ID, "files")
        assert not d.find_elements(By.CSS_SELECTOR, "#new-error header")
        pdf = REPO / "examples" / "pdfs" / "ag-energy-round-up-2017-02-24.pdf"
        broken = tmp_path / "broken.pdf"
        broken.write_bytes(b"%PDF-1.7 this is not a PDF")
        d.find_element(By.ID, "files").send_keys(f"{pdf}\n{broken}")
        d.find_element(By.ID, "upload").click()
        wait(d, 30).until(lambda x: x.find_element(By.ID, "upload-bytes").get_attribute("data-state") in
                          ("sent", "sending"))
        wait(d, 300).until(lambda x: x.find_elements(By.CSS_SELECTOR, ".upload-done"))
        assert d.find_element(By.ID, "upload-bytes").get_attribute("data-state") == "sent"
        failed = d.find_element(By.CSS_SELECTOR, 'li[data-file="broken.pdf"]')
        assert failed.get_attribute("data-state") == "failed" and failed.find_element(By.CSS_SELECTOR, ".detail").text
        wait(d, 30).until(lambda x: pdf.name in x.find_element(By.ID, "documents").text)
        # the summary's refresh of the document list has landed; the failure's reason is still shown
        assert d.find_element(By.CSS_SELECTOR, 'li[data-file="broken.pdf"] .detail').text
        d.save_screenshot(str(tmp_path / "uploaded.png"))

        d.get(url + "/ask?collection=fresh")
        from selenium.webdriver.support.ui import Select
        d.find_element(By.ID, "question").send_keys("What was the price of straw biomass?")
        Select(d.find_element(By.ID, "collection")).select_by_value("fresh")
        Select(d.find_element(By.ID, "arm")).select_by_visible_text("bm25")
        d.find_element(By.ID, "ask").click()
        wait(d, 180).until(lambda x: x.find_elements(By.CSS_SELECTOR, ".ask-run .answer-block, .ask-run .error"))
        img = wait(d, 60).until(lambda x: x.find_element(By.CSS_SELECTOR, ".ask-run ol.citations img.thumb"))
        wait(d, 60).until(lambda x: x.execute_script("const i = arguments[0]; return i.complete && i.naturalWidth > 100",
                                                     img))
        link = img.find_element(By.XPATH, "..").get_attribute("href")
        assert link.endswith("/image.png")
        d.save_screenshot(str(tmp_path / "thumbnail.png"))
        d.get(link)  # the whole page, in the browser's image view
        size = d.execute_script("const i = document.querySelector('img'); return i && i.naturalWidth")
        assert size and size > 256
    finally:
        d.quit()
