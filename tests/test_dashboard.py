"""The ops dashboard end to end: a real uvicorn server on loopback, headless Chromium
driven by Selenium (Debian's ``chromium`` and ``chromium-driver``).

The page must show the numbers the API reports: every number it draws or lists
carries ``data-path`` (its place in the JSON of the section's endpoint) and
``data-value`` (the JSON value), and each is compared with the API's answer.
Screenshots go to ``tests/artifacts/`` (not committed). Without Chromium the
tests skip, except under CI, where they fail.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient, MemoryInput
from service import create_app
from service.settings import ServiceSettings
from service.tokens import mint

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).parent / "artifacts"
SERVICE = ServiceSettings(
    jwt_secret="dashboard-test-secret-0123456789abcdef",  # type: ignore[arg-type]
    rate_per_s=1000,
    rate_burst=1000,
)
ENDPOINTS = ["expiry", "confidence", "activity", "outbox", "tenants", "keys", "verifiers"]
BUYER = "buyer-dashboard-1"
OPS_TOKEN = mint(SERVICE, sub="oncall-1", agent="ops-console", scopes=["ops"])
USER_TOKEN = mint(SERVICE, sub=BUYER, agent="refund-agent", scopes=["memory:read"])


def _require_browser() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        reason = (
            f"headless Chromium is not installed ({', '.join(missing)} missing); "
            "install it with: apt-get install chromium chromium-driver"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture
def browser() -> Iterator[Any]:
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def base_url(mem: MemoryClient) -> Iterator[str]:
    """The service over the test database, served by uvicorn on a free loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(service=SERVICE, client=mem), log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start within 30 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def _settled(driver: Any, among: tuple[str, ...] = ("ready", "refused", "error")) -> str:
    """Wait until the page's ``data-state`` is one of ``among`` (loaded, refused, failed)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def state(d: Any) -> str | bool:
        value = d.find_element(By.TAG_NAME, "body").get_attribute("data-state")
        return value if value in among else False

    return str(WebDriverWait(driver, 30).until(state))


def _status(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    text: str = driver.find_element(By.ID, "status").text
    return text


def _cells(driver: Any) -> list[dict[str, str]]:
    """Every number on the page: its endpoint, JSON path, JSON value, element and text."""
    cells: list[dict[str, str]] = driver.execute_script(
        """
        return Array.from(document.querySelectorAll("section[data-endpoint] [data-path]"))
          .map(n => ({endpoint: n.closest("section").dataset.endpoint, path: n.dataset.path,
                      value: n.dataset.value, tag: n.tagName.toLowerCase(),
                      text: n.textContent}));
        """
    )
    return cells


def _at(data: Any, path: str) -> Any:
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def _screenshot(driver: Any, name: str) -> Path:
    """The whole page (beyond the window) as a PNG under ``tests/artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        },
    )
    path = ARTIFACTS / name
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def _seed(mem: MemoryClient) -> None:
    """Something in most charts: a sweep and a decay today; then three IMPLICIT memories,
    an EXPLICIT one, two facts pending confirmation, renewals by a search, a link."""
    implicit, explicit = LifecyclePolicy.IMPLICIT, LifecyclePolicy.EXPLICIT
    now = datetime.now(UTC)
    passing, frequent = "buyer-dashboard-2", "buyer-dashboard-3"
    for user in (passing, frequent):
        mem.profiles.ensure(user)
    mem.write(passing, "下周出差，暂不报销", lifecycle_policy=implicit)
    mem.facts.put(passing, "临时地址", "公司", lifecycle_policy=implicit)
    assert mem.admin.sweep(now=now + timedelta(days=8), vacuum=False).fragments == 1
    mem.write_many(  # five sessions: a frequent user, whose inferences live 30 days
        [
            MemoryInput(
                user_id=frequent,
                text="查订单的物流",
                lifecycle_policy=explicit,
                session_id=f"s-{i}",
            )
            for i in range(5)
        ],
        progress=False,
    )
    mem.facts.put(frequent, "内容偏好", "视频", lifecycle_policy=implicit)
    assert mem.admin.decay(now=now + timedelta(days=10)).decayed == 1
    mem.profiles.ensure(BUYER)
    for text in ("订单 88231 想改地址", "退款 RF20260629001 进度", "prefers text over video"):
        mem.write(BUYER, text, lifecycle_policy=implicit)
    mem.write(BUYER, "请记住我的邮箱是 a@b.com", lifecycle_policy=explicit)
    mem.facts.put(BUYER, "通知偏好", "微信", lifecycle_policy=implicit, confidence=0.2)
    mem.facts.put(BUYER, "内容偏好", "图文", lifecycle_policy=implicit, confidence=0.25)
    mem.search(BUYER, "订单 88231 改地址", limit=2)
    mem._rt().ledger.renewals.flush()  # uses land within renewal_flush_s; now, for the test
    mem.links.add(BUYER, entity_type="order", entity_id="88231", role="owner")


def test_the_dashboard_shows_what_the_api_reports(
    browser: Any, base_url: str, mem: MemoryClient
) -> None:
    _seed(mem)
    browser.get(f"{base_url}/ops#token={OPS_TOKEN}")
    assert _settled(browser) == "ready", _status(browser)
    assert "token=" not in browser.current_url  # the fragment is dropped at once
    stored = browser.execute_script("return sessionStorage.getItem('dualtrack.ops.token')")
    assert stored == OPS_TOKEN

    headers = {"Authorization": f"Bearer {OPS_TOKEN}"}
    api = {
        name: httpx.get(f"{base_url}/v1/ops/{name}", headers=headers, timeout=30).json()
        for name in ENDPOINTS
    }
    cells = _cells(browser)
    assert {c["endpoint"] for c in cells} == set(ENDPOINTS)
    for cell in cells:
        expected = _at(api[cell["endpoint"]], cell["path"])
        shown = json.loads(cell["value"])
        where = f"{cell['endpoint']}:{cell['path']}"
        if cell["path"].endswith("age_s") and expected is not None:
            assert shown == pytest.approx(expected, abs=120), where  # a clock runs between
        else:
            assert shown == expected, where

    def values(endpoint: str, path: str, tag: str | None = None) -> list[Any]:
        return [
            json.loads(c["value"])
            for c in cells
            if c["endpoint"] == endpoint and c["path"] == path and (tag is None or c["tag"] == tag)
        ]

    busy = next(i for i, d in enumerate(api["expiry"]["days"]) if d["by_policy"]["implicit"])
    implicit_path = f"days.{busy}.by_policy.implicit"
    assert api["expiry"]["days"][busy]["by_policy"]["implicit"] == 5  # 3 memories, 2 facts
    assert values("expiry", implicit_path, "rect") == [5]  # the stacked bar
    assert values("expiry", implicit_path, "td") == [5]  # and the table
    assert values("expiry", "total") == [api["expiry"]["total"]] == [6]  # and 1 in 30 days
    assert len([c for c in cells if c["endpoint"] == "expiry" and c["tag"] == "td"]) == 31 * 5
    assert values("confidence", "pending.total") == [2]
    pending_bars = [
        c for c in cells if c["tag"] == "rect" and c["path"].endswith("pending_confirmation")
    ]
    assert sum(json.loads(c["value"]) for c in pending_bars) == 2
    assert len([c for c in cells if c["endpoint"] == "activity" and c["tag"] == "td"]) == 30 * 3
    assert values("activity", "renewals") == [api["activity"]["renewals"]]
    assert api["activity"]["renewals"] >= 2
    today = api["activity"]["days"][-1]
    assert today["sweeps"] >= 2  # the audit log holds other tests' too
    assert today["decays"] >= 1
    assert values("activity", f"days.{len(api['activity']['days']) - 1}.sweeps", "rect") == [
        today["sweeps"]
    ]
    assert values("keys", "active_key_age_days", "rect") == [0]
    assert values("keys", "rotation_days", "line") == [90]
    assert values("verifiers", "links.unchecked") == [1, 1]  # the split bar and the table
    assert values("outbox", "pending") == [0]
    assert values("tenants", "hot") == [0]
    assert "not applicable" in browser.find_element("id", "tenants").text
    for secret in ("88231", "RF20260629001", "a@b.com", "微信", BUYER):
        assert secret not in browser.page_source

    path = _screenshot(browser, "ops-dashboard.png")
    assert path.stat().st_size > 20_000


def test_the_dashboard_refuses_without_an_ops_token(browser: Any, base_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{base_url}/ops")
    assert _settled(browser) == "refused"
    assert "refused (401" in _status(browser).lower()
    assert _cells(browser) == []

    browser.get(f"{base_url}/ops#token={USER_TOKEN}")  # a valid token, without the ops scope
    browser.refresh()
    assert _settled(browser) == "refused"
    assert "refused (403" in _status(browser).lower()
    assert _cells(browser) == []
    _screenshot(browser, "ops-dashboard-refused.png")

    field = browser.find_element(By.ID, "token")  # pasting a valid one loads the data
    field.send_keys(OPS_TOKEN)
    browser.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    assert _settled(browser, ("ready", "error")) == "ready", _status(browser)
    assert _cells(browser) != []
