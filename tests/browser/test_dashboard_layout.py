"""Layout in a real headless Chromium (issue 28, a new user's screenshots): a run with a 3,800-character question
does not fill the Runs page (the list shows its start, the run page and the title attribute the whole), a
timestamp never wraps inside itself, and a collection whose documents have long paths keeps its documents
table inside the page (paths wrap at their separators, not a few characters per line)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.browser.conftest import logged_in_browser, RELAYRAG, TOKEN, run_dashboard, wait

LONG_QUESTION = ("Could you tell me, considering everything written in the handbook about the procedures that "
                 "apply to visitors, contractors and staff alike, " * 26 + "where is staff parking?")
DEEP = ("projects/facilities-and-operations-handbook-2026/north-campus-building-seven/"
        "appendices-and-supporting-material/operations")
LONG_NAME = "staff-parking-and-visitor-access-procedures-for-the-north-campus-final-revision.md"


@pytest.fixture(scope="module")
def layout_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    docs = tmp_path_factory.mktemp("docs")
    folder = docs / DEEP
    folder.mkdir(parents=True)
    (folder / LONG_NAME).write_text("# Parking and access\n\nStaff parking is in the basement garage on level B2. "
                                    "Visitors sign in at the reception desk.\n", encoding="utf-8")
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_DASHBOARD_TOKENS": TOKEN, "HF_HUB_OFFLINE": "1",
           "RELAYRAG_LLM": "none", "RELAYRAG_ENGINE": "embedded"}
    subprocess.run([str(RELAYRAG), "ingest", str(docs), "-c", "deep", "--no-progress"], env=env, check=True,
                   capture_output=True, timeout=600)
    subprocess.run([str(RELAYRAG), "ask", LONG_QUESTION, "-c", "deep"], env=env, check=True, capture_output=True,
                   timeout=600)
    with run_dashboard(home, env) as url:
        yield {"url": url, "home": home, "env": env}


@pytest.fixture
def browser(layout_server, tmp_path, request):
    with logged_in_browser(layout_server["url"], tmp_path / f"{request.node.name}-final.png") as d:
        yield d


def _overflow(d) -> int:
    return d.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")


def _line_height(el) -> float:
    return float(el.parent.execute_script(
        "const s = getComputedStyle(arguments[0]); return parseFloat(s.lineHeight) || 1.45 * parseFloat(s.fontSize)",
        el))


def test_a_long_question_is_clipped_in_the_list_and_timestamps_stay_on_one_line(browser, layout_server, tmp_path):
    from selenium.webdriver.common.by import By
    d = browser
    for width in (1400, 1000):
        d.set_window_size(width, 1000)
        d.get(layout_server["url"] + "/runs")
        row = d.find_element(By.CSS_SELECTOR, "#runs tr.run")
        d.save_screenshot(str(tmp_path / f"runs-{width}.png"))
        assert _overflow(d) <= 0, width
        q = row.find_element(By.CSS_SELECTOR, "td.question")
        assert len(q.text) < 400 and q.text.startswith(LONG_QUESTION[:80]) and "…" in q.text
        assert q.get_attribute("title") == LONG_QUESTION  # the whole question on hover
        assert q.size["height"] < 8 * _line_height(q), q.size  # not a screenful
        when = row.find_element(By.CSS_SELECTOR, ".ts")
        assert when.size["height"] < 1.6 * _line_height(when), (width, when.text, when.size)
        assert len(when.text) >= 16  # a whole date and time, not cut
    d.find_element(By.CSS_SELECTOR, "#runs tr.run td a").click()
    wait(d, 30).until(lambda x: x.find_elements(By.ID, "trace"))
    assert LONG_QUESTION in d.find_element(By.TAG_NAME, "main").text  # the run page shows all of it
    assert _overflow(d) <= 0


def test_long_document_paths_keep_the_documents_table_inside_the_page(browser, layout_server, tmp_path):
    from selenium.webdriver.common.by import By
    d = browser
    for width in (1400, 1000):
        d.set_window_size(width, 1000)
        d.get(layout_server["url"] + "/collections/deep")
        d.save_screenshot(str(tmp_path / f"collection-{width}.png"))
        assert _overflow(d) <= 0, width
        table = d.find_element(By.ID, "documents")
        main = d.find_element(By.TAG_NAME, "main")
        right = d.execute_script("const m = arguments[0], s = getComputedStyle(m); "
                                 "return m.getBoundingClientRect().right - parseFloat(s.paddingRight)", main)
        assert table.location["x"] + table.size["width"] <= right + 1, width  # no scrolling inside its box either
        src = d.find_element(By.CSS_SELECTOR, "#documents tr.doc td.source")
        assert src.get_attribute("title").endswith(LONG_NAME)
        code = src.find_element(By.TAG_NAME, "code")
        lines = code.size["height"] / _line_height(code)
        # the path wraps at its separators: a handful of lines, not one per few characters
        assert lines <= 6, (width, code.size, code.text)
        when = d.find_element(By.CSS_SELECTOR, "#documents tr.doc .ts")
        assert when.size["height"] < 1.6 * _line_height(when), (width, when.text, when.size)
