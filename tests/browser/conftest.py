"""Browser tests of the dashboard: Debian's headless Chromium driven by selenium through chromedriver,
against `relayrag dashboard` started by the test on 127.0.0.1 (readiness polled up to 60 s).

They run in their own session, `nox -s browser` (RELAYRAG_BROWSER_TESTS=1; `.ci/run` calls it; the browser
comes from `scripts/install-browser.sh`, apt's chromium + chromium-driver). Elsewhere they skip, saying
why; under nox a missing browser fails instead. Each test saves a screenshot in its tmp_path.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
RELAYRAG = Path(sys.executable).parent / "relayrag"
TOKEN = "browser-test-token-0123456789"
CHROMIUM = os.environ.get("RELAYRAG_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RELAYRAG_CHROMEDRIVER", "/usr/bin/chromedriver")
REQUIRED = os.environ.get("RELAYRAG_BROWSER_TESTS") == "1"


def _why_not() -> str | None:
    if not REQUIRED:
        return "browser tests run in their own session: nox -s browser (sets RELAYRAG_BROWSER_TESTS=1)"
    for path, what in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (Path(path).is_file() or shutil.which(path)):
            return f"{what} not found at {path}: bash scripts/install-browser.sh (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[browser]'"
    return None


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(autouse=True, scope="session")
def _browser_available():
    """Skip (with the reason) where the browser cannot run; under nox -s browser, fail instead."""
    reason = _why_not()
    if reason:
        if REQUIRED:
            pytest.fail(reason)
        pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def run_dashboard(home: Path, env: dict):
    """`relayrag dashboard` on a free port of 127.0.0.1 with `env`, its log in home/dashboard.log; yields its URL
    once /healthz answers (polled up to 60 s: CI's 2 cores are shared), and stops it (terminate, then kill)."""
    port = free_port()
    log = open(home / "dashboard.log", "w")
    proc = subprocess.Popen([str(RELAYRAG), "dashboard", "--port", str(port)], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"dashboard exited with {proc.returncode}: {(home / 'dashboard.log').read_text()}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).text == "ok":
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("dashboard not ready after 60 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`relayrag dashboard` on a free port, over a home with a small text collection `notes` ingested."""
    home = tmp_path_factory.mktemp("home")
    notes = tmp_path_factory.mktemp("notes")
    (notes / "bees.txt").write_text("Honey bees communicate the direction of flowers with a waggle dance. A colony "
                                    "can contain up to 60,000 worker bees in summer. The queen lays up to 2,000 "
                                    "eggs per day.", encoding="utf-8")
    (notes / "rail.md").write_text("# Rail gauge\n\nThe standard rail gauge is 1,435 millimetres. It is used by "
                                   "about 55 percent of the world's railway lines.", encoding="utf-8")
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_DASHBOARD_TOKENS": TOKEN, "HF_HUB_OFFLINE": "1",
           "RELAYRAG_LLM": "none", "RELAYRAG_ENGINE": "embedded"}
    subprocess.run([str(RELAYRAG), "ingest", str(notes), "-c", "notes", "--no-progress"], env=env, check=True,
                   capture_output=True, timeout=600)
    with run_dashboard(home, env) as url:
        yield {"url": url, "home": home, "env": env}


def make_driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which(CHROMIUM) or CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1100", "--disable-extensions", "--no-first-run"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which(CHROMEDRIVER) or CHROMEDRIVER), options=opts)


def login(d, url: str) -> None:
    """Sign in on `url`'s /login with the test token and wait until the dashboard leaves the login page."""
    from selenium.webdriver.common.by import By
    d.get(url + "/login")
    d.find_element(By.ID, "token").send_keys(TOKEN)
    d.find_element(By.ID, "login").click()
    wait(d, 30).until(lambda x: "/login" not in x.current_url)


@contextlib.contextmanager
def logged_in_browser(url: str, screenshot: Path):
    """A headless Chromium signed in on `url`; saves a screenshot of where it ended, then quits."""
    d = make_driver()
    d.set_page_load_timeout(60)
    try:
        login(d, url)
        yield d
    finally:
        d.save_screenshot(str(screenshot))
        d.quit()


@pytest.fixture
def driver(tmp_path, request):
    d = make_driver()
    d.set_page_load_timeout(60)
    yield d
    d.save_screenshot(str(tmp_path / f"{request.node.name}-final.png"))
    d.quit()


@pytest.fixture
def logged_in(driver, server):
    from selenium.webdriver.common.by import By
    driver.get(server["url"] + "/login")
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.ID, "login").click()
    wait(driver, 30).until(lambda d: "/login" not in d.current_url)
    return driver


def wait(driver, seconds: float = 120):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait
    # htmx swaps replace elements in place: an element found in one poll can be gone when it is read in the same
    # poll (the upload's document list refreshes when the ingest ends); that poll is retried, not a failure
    return WebDriverWait(driver, seconds, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))
