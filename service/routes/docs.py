"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) from this package's own files: they render
with no network beyond this service.

``service/static/docs/`` holds swagger-ui-dist 5.35.0 (``swagger-ui-bundle.js``,
``swagger-ui.css``) and redoc 2.5.4 (``bundles/redoc.standalone.js``) as npm ships them,
with their licences; one change: ReDoc's footer logo, an image from Redocly's CDN, is
``data:,`` (its component hides a logo that fails to load). The pages take no token;
Swagger UI's Authorize button takes the Bearer token for its calls.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse

from policies.errors import RecordNotFound

__all__ = ["ASSETS", "router"]

router = APIRouter(tags=["docs"], include_in_schema=False)

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
}
"""The files the pages load, all from ``/docs/static/``."""

_NO_ICON = "data:,"
"""No favicon: FastAPI's default one is fetched from its website."""


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _openapi_url(request: Request) -> str:
    app: FastAPI = request.app
    return f"{_base(request)}{app.openapi_url}"


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI over the schema."""
    app: FastAPI = request.app
    return get_swagger_ui_html(
        openapi_url=_openapi_url(request),
        title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{_base(request)}/docs/static/swagger-ui-bundle.js",
        swagger_css_url=f"{_base(request)}/docs/static/swagger-ui.css",
        swagger_favicon_url=_NO_ICON,
        oauth2_redirect_url=f"{_base(request)}/docs/oauth2-redirect",
        swagger_ui_parameters={"validatorUrl": None},
    )


@router.get("/docs/oauth2-redirect")
def swagger_ui_redirect() -> HTMLResponse:
    """Swagger UI's OAuth2 redirect page (FastAPI's own)."""
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    """ReDoc over the schema, without Google Fonts."""
    app: FastAPI = request.app
    return get_redoc_html(
        openapi_url=_openapi_url(request),
        title=f"{app.title} - ReDoc",
        redoc_js_url=f"{_base(request)}/docs/static/redoc.standalone.js",
        redoc_favicon_url=_NO_ICON,
        with_google_fonts=False,
    )


@router.get("/docs/static/{name}")
def asset(name: str) -> Response:
    """One of :data:`ASSETS` (only those)."""
    media = ASSETS.get(name)
    if media is None:
        raise RecordNotFound("no such asset")
    body = resources.files("service").joinpath("static", "docs", name).read_bytes()
    return Response(body, media_type=media, headers={"Cache-Control": "public, max-age=86400"})
