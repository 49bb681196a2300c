"""Feedback in Chromium: 👍 under a fresh answer, 👎 with a reason and the correct answer on the run page (it
replaces the 👍), and the Feedback page listing the verdict with the share of 👎, filtered."""

from __future__ import annotations

from tests.browser.conftest import wait
from tests.browser.test_dashboard import _ask, _by


def _text(d, element_id: str) -> str:
    """The element's text now (htmx swaps it whole: a held element reference would go stale)."""
    return d.execute_script("var e = document.getElementById(arguments[0]); return e ? e.textContent : '';",
                            element_id)


def test_verdicts_from_the_answer_and_the_run_page_show_on_the_feedback_page(logged_in, server, tmp_path):
    By = _by()
    from selenium.webdriver.support.ui import Select
    d = logged_in
    run = _ask(d, server["url"], "How many worker bees live in a colony in summer?", "notes")
    block = run.find_element(By.CSS_SELECTOR, ".answer-block")
    run_id = block.get_attribute("data-run")
    fb = wait(d, 30).until(lambda x: x.find_element(By.ID, f"feedback-{run_id}"))  # loaded by htmx
    fb.find_element(By.CSS_SELECTOR, "button.fb-up").click()
    wait(d, 30).until(lambda x: "saved: 👍" in _text(x, f"feedback-{run_id}"))
    d.save_screenshot(str(tmp_path / "up.png"))

    d.get(f"{server['url']}/runs/{run_id}")
    wait(d, 30).until(lambda x: "your verdict: 👍" in _text(x, f"feedback-{run_id}"))
    fb = d.find_element(By.ID, f"feedback-{run_id}")
    fb.find_element(By.CSS_SELECTOR, "summary.fb-down").click()
    form = fb.find_element(By.CSS_SELECTOR, "form")
    Select(form.find_element(By.NAME, "reason")).select_by_value("wrong")
    form.find_element(By.NAME, "answer").send_keys("60,000")
    form.find_element(By.NAME, "doc").send_keys("bees.txt")
    form.find_element(By.CSS_SELECTOR, "button.fb-send").click()
    wait(d, 30).until(lambda x: "saved: 👎 (wrong)" in _text(x, f"feedback-{run_id}"))
    d.save_screenshot(str(tmp_path / "down.png"))

    d.get(f"{server['url']}/feedback")
    rows = d.find_elements(By.CSS_SELECTOR, "#verdicts tr")[1:]
    assert len(rows) == 1 and "👎" in rows[0].text and "60,000" in rows[0].text and "bees.txt" in rows[0].text
    share = d.find_element(By.ID, "share-collection").text
    assert "notes 1 1 100 %" in " ".join(share.split())
    Select(d.find_element(By.NAME, "verdict")).select_by_value("up")
    d.find_element(By.CSS_SELECTOR, "#feedback-filters button").click()
    wait(d, 30).until(lambda x: "verdict=up" in x.current_url)
    assert "no verdicts yet" in d.find_element(By.ID, "verdicts").text  # the 👍 was replaced, not kept
    d.save_screenshot(str(tmp_path / "feedback-page.png"))


def test_verdicts_given_on_the_command_line_are_counted_not_hidden_silently(logged_in, server, tmp_path):
    """Issue 28: after `relayrag feedback RUN up` the token's Feedback page said only "no verdicts (yours only)".
    It now says how many verdicts from elsewhere it does not show, from where, and why."""
    import json
    import subprocess

    from tests.browser.conftest import RELAYRAG
    By = _by()
    env = server["env"]
    asked = subprocess.run([str(RELAYRAG), "ask", "How many eggs does the queen lay per day?", "-c", "notes", "--json"],
                           env=env, check=True, capture_output=True, text=True, timeout=300)
    run_id = json.loads(asked.stdout)["run_id"]
    subprocess.run([str(RELAYRAG), "feedback", run_id, "up"], env=env, check=True, capture_output=True, timeout=120)
    d = logged_in
    d.get(f"{server['url']}/feedback")
    box = d.find_element(By.ID, "hidden-verdicts").text
    d.save_screenshot(str(tmp_path / "feedback-hidden.png"))
    assert "not shown" in box and "1 from the command line or a terminal chat" in box, box
    assert "RELAYRAG_ADMIN_TOKENS" in box
    assert run_id not in d.find_element(By.ID, "verdicts").get_attribute("innerHTML")  # counted, not listed
    assert "thumbs-down" in d.find_element(By.XPATH, "//h2[contains(., 'Share of')]").text
