"""Swagger UI and ReDoc render from the package's own files: headless Chromium loads
``/docs`` and ``/redoc`` from a live server and every resource the pages fetch comes from
that server (no CDN, no fonts, no validator badge)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from sdk import MemoryClient
from service import create_app
from service.routes.docs import ASSETS
from tests.live_service import served
from tests.test_dashboard import browser  # noqa: F401  (fixture)
from tests.test_service import SERVICE


@pytest.fixture
def base_url(mem: MemoryClient) -> Iterator[str]:
    with served(create_app(service=SERVICE, client=mem)) as url:
        yield url


def _foreign(driver: Any, base_url: str) -> list[str]:
    names: list[str] = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    origin = urlsplit(base_url).netloc
    return [n for n in names if urlsplit(n).scheme != "data" and urlsplit(n).netloc != origin]


def test_swagger_ui_renders_every_operation_from_local_assets(
    browser: Any,  # noqa: F811
    base_url: str,
) -> None:
    browser.get(f"{base_url}/docs")
    WebDriverWait(browser, 30).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= 40
    )
    assert browser.find_elements(By.CSS_SELECTOR, ".btn.authorize"), "the Bearer scheme's button"
    ids = {e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR, ".opblock")}
    assert any("memories_search" in (i or "") for i in ids), ids
    assert _foreign(browser, base_url) == []


def test_redoc_renders_from_local_assets(browser: Any, base_url: str) -> None:  # noqa: F811
    browser.get(f"{base_url}/redoc")
    WebDriverWait(browser, 30).until(
        lambda d: "Hybrid search" in d.find_element(By.TAG_NAME, "body").text
    )
    assert "Write one memory" in browser.find_element(By.TAG_NAME, "body").text
    assert _foreign(browser, base_url) == []


def test_the_pages_name_only_local_files(base_url: str) -> None:
    for page in ("/docs", "/redoc"):
        html = httpx.get(f"{base_url}{page}").text
        assert "http://" not in html, page
        assert "https://" not in html, page
    for name, media in ASSETS.items():
        answer = httpx.get(f"{base_url}/docs/static/{name}")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith(media)
    assert httpx.get(f"{base_url}/docs/static/..%2Fops.html").status_code == 404
