"""The dashboard in headless Chromium (selenium, the distribution's chromium and
chromedriver): sign in with a token, every page's figures equal the store's, a member
sees only its own jobs, cancel works through its CSRF-protected form, a revoked token's
session ends at once. Screenshots of every page (desktop and phone widths) go to
GPUOPT_SCREENSHOTS when set (else the test's temporary directory)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and DRIVER.exists()),
    reason="needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium "
           "chromium-driver)")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    import uvicorn

    from gpuopt.orchestrator.api.app import build_app
    from gpuopt.orchestrator.api.context import ApiContext
    from gpuopt.orchestrator.api.users import add_user
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import open_store
    from tests.net import free_port
    from tests.orchestrator.api.seed import seed

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    now = datetime.now(UTC)
    ids = seed(store, now)
    tokens = {"alice": add_user(store, "alice", "nlp", False, now),
              "root": add_user(store, "root", None, True, now)}
    ctx = ApiContext(store=store, settings=Settings(), upload_root=tmp_path / "up",
                     session_secret=os.urandom(32))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(ctx), host="127.0.0.1", port=port,
                                           log_config=None, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield {"url": f"http://127.0.0.1:{port}", "store": store, "ids": ids,
               "tokens": tokens, "shots": Path(os.environ.get("GPUOPT_SCREENSHOTS")
                                               or tmp_path)}
    finally:
        server.should_exit = True
        thread.join(10)
        store.close()


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _sign_in(browser: Any, url: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/login")
    browser.find_element(By.NAME, "token").send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 20).until(lambda b: not b.current_url.endswith("/login"))


def _shot(browser: Any, shots: Path, name: str) -> None:
    shots.mkdir(parents=True, exist_ok=True)
    browser.set_window_size(1280, 1000)
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1280, min(max(height, 600), 4000))
    browser.save_screenshot(str(shots / f"{name}-desktop.png"))
    browser.set_window_size(390, 844)
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(390, min(max(height, 844), 6000))
    browser.save_screenshot(str(shots / f"{name}-phone.png"))
    browser.set_window_size(1280, 1000)


def _views(store: Any) -> dict[str, dict[str, Any]]:
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, list_jobs
    from gpuopt.orchestrator.views.jobs import job_view

    with store.session() as session:
        rows = list_jobs(session)
        attempts = attempts_of(session, [j.id for j in rows])
    now = datetime.now(UTC)
    return {j.id: job_view(j, attempts[j.id], now) for j in rows}


def test_every_page_shows_the_stores_figures(site: dict[str, Any], browser: Any) -> None:
    from selenium.webdriver.common.by import By

    from gpuopt.orchestrator.cli.tables import money

    url, ids, shots = site["url"], site["ids"], site["shots"]
    browser.get(url + "/")
    assert browser.current_url.endswith("/login")  # signed out: the sign-in page
    _shot(browser, shots, "login")
    _sign_in(browser, url, site["tokens"]["root"])
    assert browser.current_url == url + "/"
    views = _views(site["store"])
    rows = browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
    assert sorted(r.get_attribute("data-job") for r in rows) == sorted(ids.values())
    for row in rows:
        view = views[row.get_attribute("data-job")]
        assert row.find_element(By.CSS_SELECTOR, "[data-field=attempts]").text == \
            str(view["attempts"])
        if view["status"] != "running":  # a running job's cost grows each second
            assert row.find_element(By.CSS_SELECTOR, "[data-field=cost]").text == \
                money(view["cost"])
    _shot(browser, shots, "jobs")

    done = ids["alice_done"]
    browser.get(f"{url}/jobs/{done}")
    assert browser.find_element(By.ID, "cost").text == f"${money(views[done]['cost'])}"
    assert browser.find_element(By.ID, "on-demand").text == \
        f"${money(views[done]['on_demand_cost'])}"
    from decimal import Decimal

    from tests.orchestrator.api.seed import PRICES

    assert Decimal(views[done]["cost"]) == PRICES[0] * 1 + PRICES[1] * 2  # 1 h + 2 h held
    assert browser.find_element(By.ID, "progress").text == "1000/1000"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")) == 2
    assert "done: loss 0.98" in browser.find_element(By.ID, "log").text
    _shot(browser, shots, "job")
    browser.get(f"{url}/jobs/{ids['alice_live']}")
    assert "step 300 loss 1.21" in browser.find_element(By.ID, "log").text
    _shot(browser, shots, "job-running")

    browser.get(f"{url}/prices?gpu=A100-80GB&market=spot")
    from gpuopt.orchestrator.prices.current import current_offers_with_source
    from gpuopt.providers.offer_filter import OfferFilter

    latest = current_offers_with_source(site["store"], OfferFilter.build(
        gpu="A100-80GB", market="spot")).offers
    cells = browser.find_elements(By.CSS_SELECTOR, "#offers [data-field=price]")
    assert [c.text for c in cells] == [f"{o.price_per_hour:,.4f}" for o in latest]
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart path")
    _shot(browser, shots, "prices")

    browser.get(f"{url}/spend")
    from gpuopt.orchestrator.api.report_view import team_report
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.report.weeks import IsoWeek

    week = IsoWeek.containing(datetime.now(UTC), __import__("zoneinfo").ZoneInfo("UTC"))
    report = team_report(site["store"], Settings(), str(week), None, None, datetime.now(UTC))
    total = browser.find_element(By.CSS_SELECTOR, f"#weeks [data-week='{week}'] "
                                 "[data-field=total]").text
    # this week's total includes the running attempt, which grows: within a cent
    assert abs(float(total.replace(",", "")) - float(report.summary.total)) < 0.02
    assert len(browser.find_elements(By.CSS_SELECTOR, "#weeks tbody tr")) == 9
    nlp = browser.find_element(By.CSS_SELECTOR, "#by-team [data-key=nlp] [data-field=cost]")
    assert float(nlp.text.replace(",", "")) > 0
    _shot(browser, shots, "spend")


def test_a_member_sees_its_own_jobs_and_cancels_with_the_form(
        site: dict[str, Any], browser: Any) -> None:
    from selenium.webdriver.common.by import By

    url, ids = site["url"], site["ids"]
    _sign_in(browser, url, site["tokens"]["alice"])
    shown = {r.get_attribute("data-job")
             for r in browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")}
    assert shown == {ids["alice_done"], ids["alice_live"]}
    browser.get(f"{url}/jobs/{ids['bob_old']}")
    assert "belongs to bob" in browser.page_source
    browser.get(f"{url}/jobs/{ids['alice_live']}")
    browser.find_element(By.ID, "cancel").click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 20).until(
        lambda b: "cancellation requested by alice" in b.page_source)
    from gpuopt.orchestrator.store.jobs_repo import find_job

    with site["store"].session() as session:
        assert find_job(session, ids["alice_live"]).cancel_requested
    # a form without its CSRF token is refused
    browser.execute_script(
        "document.querySelector('form[action=\"/logout\"] input[name=csrf]').value='x';"
        "document.querySelector('form[action=\"/logout\"]').submit();")
    assert "CSRF" in browser.page_source
    # the cookie is HttpOnly and SameSite=Strict
    cookie = browser.get_cookie("gpuopt_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert site["tokens"]["alice"] not in cookie["value"]
    from gpuopt.orchestrator.api.users import revoke

    revoke(site["store"], "alice", datetime.now(UTC))
    browser.get(url + "/")
    assert browser.current_url.endswith("/login")
