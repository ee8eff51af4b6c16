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
import math
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


def _urls(driver: Any) -> dict[str, str]:
    """The URL each section's numbers came from (its ``data-url``)."""
    urls: dict[str, str] = driver.execute_script(
        """
        return Object.fromEntries(Array.from(document.querySelectorAll("section[data-endpoint]"))
          .map(n => [n.dataset.endpoint, n.dataset.url]));
        """
    )
    return urls


def _shown_as_reported(driver: Any, base_url: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Every number on the page against the API's answer at the URL its section read;
    returns those answers and the page's numbers."""
    headers = {"Authorization": f"Bearer {OPS_TOKEN}"}
    urls = _urls(driver)
    assert set(urls) == set(ENDPOINTS)
    api = {
        name: httpx.get(f"{base_url}{url}", headers=headers, timeout=30).json()
        for name, url in urls.items()
    }
    cells = _cells(driver)
    assert {c["endpoint"] for c in cells} == set(ENDPOINTS)
    for cell in cells:
        expected = _at(api[cell["endpoint"]], cell["path"])
        shown = json.loads(cell["value"])
        where = f"{cell['endpoint']}:{cell['path']}"
        if cell["path"].endswith("age_s") and expected is not None:
            assert shown == pytest.approx(expected, abs=120), where  # a clock runs between
        else:
            assert shown == expected, where
    return api, cells


def _values(
    cells: list[dict[str, str]], endpoint: str, path: str, tag: str | None = None
) -> list[Any]:
    """The values shown at ``path`` of ``endpoint`` (in elements ``tag``, if given)."""
    return [
        json.loads(c["value"])
        for c in cells
        if c["endpoint"] == endpoint and c["path"] == path and (tag is None or c["tag"] == tag)
    ]


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

    api, cells = _shown_as_reported(browser, base_url)
    assert {u for u in _urls(browser).values() if "?" in u} == {
        "/v1/ops/expiry?days=30",
        "/v1/ops/activity?days=30",
        "/v1/ops/verifiers?days=30",
    }

    def values(endpoint: str, path: str, tag: str | None = None) -> list[Any]:
        return _values(cells, endpoint, path, tag)

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


def _bottom_labels(driver: Any, section: str) -> list[list[dict[str, Any]]]:
    """Per chart of ``section``: its category labels under the bars (text and x, in the
    SVG's own units), not the counts written above them."""
    charts: list[list[dict[str, Any]]] = driver.execute_script(
        """
        const svgs = document.querySelectorAll(`section[data-endpoint="${arguments[0]}"] svg.bars`);
        return Array.from(svgs).map(svg => Array.from(svg.querySelectorAll("text"))
          .filter(t => t.getAttribute("text-anchor") === "middle" && !t.classList.contains("value"))
          .map(t => ({text: t.textContent, x: parseFloat(t.getAttribute("x"))})));
        """,
        section,
    )
    return charts


def test_the_last_day_is_labelled_under_its_bar(
    browser: Any, base_url: str, mem: MemoryClient
) -> None:
    """The right-most date under a daily chart is the window's last day, under that day's
    bar (it used to be the label of an earlier day, the last labelled by the stride)."""
    mem.profiles.ensure(BUYER)
    mem.write(BUYER, "下周出差，暂不报销", lifecycle_policy=LifecyclePolicy.IMPLICIT)
    browser.get(f"{base_url}/ops#token={OPS_TOKEN}")
    assert _settled(browser) == "ready", _status(browser)
    headers = {"Authorization": f"Bearer {OPS_TOKEN}"}
    for endpoint in ("expiry", "activity", "verifiers"):
        days = httpx.get(f"{base_url}/v1/ops/{endpoint}", headers=headers, timeout=30).json()[
            "days"
        ]
        last = days[-1]["day"][5:]
        charts = _bottom_labels(browser, endpoint)
        assert charts, endpoint
        for labels in charts:
            rightmost = max(labels, key=lambda t: t["x"])
            assert rightmost["text"] == last, (endpoint, labels)
            left, width = browser.execute_script(
                """const svg = document.querySelector(
                     `section[data-endpoint="${arguments[0]}"] svg.bars`);
                   return [svg.dataset.plotLeft, svg.dataset.plotWidth].map(parseFloat);""",
                endpoint,
            )
            step = width / len(days)
            assert left + (len(days) - 1) * step <= rightmost["x"] <= left + len(days) * step


def _loads(driver: Any) -> int:
    return int(driver.find_element("tag name", "body").get_attribute("data-loads") or 0)


def _reloaded(driver: Any, after: int) -> None:
    """Wait until the page has drawn new numbers more than ``after`` times, and is ready."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 40).until(lambda d: _loads(d) > after)
    assert _settled(driver) == "ready", _status(driver)


def _bar_heights(driver: Any, section: str, chart: int = 0) -> dict[str, float]:
    """The drawn height of each rect of one chart of ``section``, by its data-path."""
    heights: dict[str, float] = driver.execute_script(
        """
        const svg = document.querySelectorAll(
          `section[data-endpoint="${arguments[0]}"] svg.bars`)[arguments[1]];
        return Object.fromEntries(Array.from(svg.querySelectorAll("rect[data-path]"))
          .map(r => [r.dataset.path, parseFloat(r.getAttribute("height"))]));
        """,
        section,
        chart,
    )
    return heights


def _seed_lifetimes(mem: MemoryClient) -> None:
    """A frequent user with an inferred fact unused for 10 days at confidence 0.35 (its
    4th decay step, due tomorrow, takes it below 0.3), three inferred notes of a passing
    user, explicit memories, and a session whose interaction record lives 90 days."""
    from sqlalchemy import text

    from unstructured_memory.summariser import Turn

    frequent, passing = "buyer-dashboard-4", "buyer-dashboard-5"
    for user in (frequent, passing):
        mem.profiles.ensure(user)
    mem.write_many(
        [
            MemoryInput(
                user_id=frequent,
                text="查订单的物流",
                lifecycle_policy=LifecyclePolicy.EXPLICIT,
                session_id=f"s-{i}",
            )
            for i in range(5)
        ],
        progress=False,
    )
    fact = mem.facts.put(
        frequent, "内容偏好", "图文", lifecycle_policy=LifecyclePolicy.IMPLICIT, confidence=0.35
    )
    with mem.admin.database.transaction() as conn:  # ten days unused, as a clock would leave it
        conn.execute(
            text(
                "UPDATE memory_fact SET last_used_at = last_used_at - interval '10 days'"
                " WHERE user_id = :user AND id = :id"
            ),
            {"user": frequent, "id": fact.id},
        )
    for note in ("订单 88231 想改地址", "退款 RF20260629001 进度", "prefers text over video"):
        mem.write(passing, note, lifecycle_policy=LifecyclePolicy.IMPLICIT)
    now = datetime.now(UTC)
    mem.end_session(
        passing,
        "s-record",
        [
            Turn("user", "我的订单 88231 还没发货", now),
            Turn("assistant", "已为您催促仓库，今天发出", now + timedelta(minutes=1)),
        ],
    )


def test_lifetimes_the_forecast_and_small_bars(
    browser: Any, base_url: str, mem: MemoryClient
) -> None:
    from selenium.webdriver.common.by import By

    _seed_lifetimes(mem)
    browser.get(f"{base_url}/ops#token={OPS_TOKEN}")
    assert _settled(browser) == "ready", _status(browser)
    month, cells = _shown_as_reported(browser, base_url)

    # each policy's lifetime, and what never expires
    kept = month["expiry"]["never_expiring"]
    assert kept["explicit"] >= 5  # the frequent user's five sessions
    assert _values(cells, "expiry", "never_expiring.explicit") == [kept["explicit"]]
    assert _values(cells, "expiry", "never_expiring_total") == [sum(kept.values())]
    lifetimes = [_values(cells, "expiry", f"ttl.{i}.days") for i in range(6)]
    assert lifetimes == [[None], [7], [30], [90], [None], [None]]
    text = browser.find_element(By.CSS_SELECTOR, "[data-lifetimes]").text
    assert "interaction record: 90 days, fixed" in text
    assert "frequent users: 30 days, renewed on use" in text

    # the forecast: the fact crosses 0.3 tomorrow
    assert _values(cells, "confidence", "forecast.total") == [1]
    assert _values(cells, "confidence", "forecast.days.1.facts", "rect") == [1]
    assert _values(cells, "confidence", "forecast.days.1.total", "text") == [1]

    # small bars: each has its count above it, and on a log scale a bar of 1 beside one of
    # 3 is drawn log(2)/log(4) as high as it, not a third
    days = month["expiry"]["days"]
    small = next(i for i, d in enumerate(days) if d["total"] == 1)
    large = max(range(len(days)), key=lambda i: days[i]["total"])
    assert days[large]["total"] == 3  # the passing user's notes (and nothing beside them)
    assert _values(cells, "expiry", f"days.{small}.total", "text") == [1]
    one, three = f"days.{small}.by_policy.implicit", f"days.{large}.by_policy.implicit"
    linear = _bar_heights(browser, "expiry")
    assert linear[one] / linear[three] == pytest.approx(1 / 3, rel=0.02)
    loads = _loads(browser)
    browser.find_element(By.ID, "log-scale").click()
    logged = _bar_heights(browser, "expiry")
    assert logged[one] / logged[three] == pytest.approx(math.log(2) / math.log(4), rel=0.02)
    assert logged[one] > linear[one]
    assert _loads(browser) == loads, "the scale redraws what was loaded, it fetches nothing"
    _shown_as_reported(browser, base_url)
    _screenshot(browser, "ops-dashboard-log-scale.png")


def test_the_90_day_view_and_auto_refresh(browser: Any, base_url: str, mem: MemoryClient) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _seed_lifetimes(mem)
    browser.get(f"{base_url}/ops#token={OPS_TOKEN}")
    assert _settled(browser) == "ready", _status(browser)
    month, _ = _shown_as_reported(browser, base_url)
    loads = _loads(browser)

    # 90 days: the interaction record expires on day 90, outside the 30-day window
    Select(browser.find_element(By.ID, "window")).select_by_value("90")
    _reloaded(browser, loads)
    quarter, cells = _shown_as_reported(browser, base_url)
    assert _urls(browser)["expiry"] == "/v1/ops/expiry?days=90"
    assert len(quarter["expiry"]["days"]) == 91
    assert len([c for c in cells if c["endpoint"] == "expiry" and c["tag"] == "td"]) == 91 * 5
    assert len([c for c in cells if c["endpoint"] == "activity" and c["tag"] == "td"]) == 90 * 3
    late = sum(d["by_policy"]["implicit"] for d in quarter["expiry"]["days"][85:])
    assert late >= 1
    assert quarter["expiry"]["total"] == month["expiry"]["total"] + late
    assert "next 90 days" in browser.find_element(By.ID, "expiry").text
    _screenshot(browser, "ops-dashboard-90-days.png")

    # auto-refresh: new numbers without a reload, shown with the interval; pausing stops it
    state = browser.find_element(By.ID, "refresh-state")
    assert state.get_attribute("data-refresh") == "on"
    assert "every 1 min" in state.text
    Select(browser.find_element(By.ID, "refresh")).select_by_value("10")
    assert "every 10 s · next in" in state.text
    loads = _loads(browser)
    mem.write("buyer-dashboard-5", "下周出差，暂不报销", lifecycle_policy=LifecyclePolicy.IMPLICIT)
    _reloaded(browser, loads)
    refreshed, cells = _shown_as_reported(browser, base_url)
    assert refreshed["expiry"]["total"] == quarter["expiry"]["total"] + 1
    assert _values(cells, "expiry", "total") == [refreshed["expiry"]["total"]]
    pause = browser.find_element(By.ID, "pause")
    pause.click()
    assert state.get_attribute("data-refresh") == "paused"
    assert "paused" in state.text
    assert (pause.text, pause.get_attribute("aria-pressed")) == ("Resume", "true")
    pause.click()
    assert state.get_attribute("data-refresh") == "on"
