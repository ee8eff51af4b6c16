"""The service's errors and the one JSON error format, ``{"error": {"code", "message"}}``.

Every :class:`DualtrackError` maps to its own ``http_status`` and ``code``;
request validation becomes 422 ``invalid_input``; anything unexpected becomes
500 ``internal`` without its message (it could hold a value). This is the
single lookup the service needs: the SDK's error tree carries the rest, the
four HTTP errors included (``sdk.errors``: the remote client raises them too).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from policies.errors import DualtrackError
from sdk.errors import Forbidden, PayloadTooLarge, RateLimited, Unauthorized

__all__ = [
    "ErrorBody",
    "ErrorDetail",
    "Forbidden",
    "PayloadTooLarge",
    "RateLimited",
    "Unauthorized",
    "error_body",
    "error_response",
    "install_error_handlers",
]

_log = logging.getLogger(__name__)


class ErrorDetail(BaseModel):
    """What went wrong: a stable code and a message free of user data."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="Stable error code, e.g. `user_not_found`.")
    message: str
    current_version: int | None = Field(
        default=None, description="The profile's version, on `version_conflict` only."
    )


class ErrorBody(BaseModel):
    """The one error format of every error answer."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorDetail


def error_body(code: str, message: str) -> dict[str, Any]:
    """The one error format."""
    return {"error": {"code": code, "message": message}}


def error_response(exc: DualtrackError) -> JSONResponse:
    """The answer to ``exc``: its status, the error body, ``Retry-After`` for a 429 and
    ``WWW-Authenticate`` for a 401."""
    headers: dict[str, str] = {}
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(max(1, round(float(exc.details.get("retry_after_s", 1)))))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    body = error_body(exc.code, exc.message)
    version = exc.details.get("current_version")
    if version is not None:
        body["error"]["current_version"] = version
    return JSONResponse(body, status_code=exc.http_status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Translate every error the routes can meet into the one format."""

    async def dualtrack(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DualtrackError)
        return error_response(exc)

    async def validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ())[:2]) or "request"
        return JSONResponse(
            error_body("invalid_input", f"{where}: {first.get('type', 'invalid')}"),
            status_code=422,
        )

    async def http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        from service.middleware.metrics import route_template  # the middleware imports us

        # the route template, never the path: it may hold a session id or a fact key
        _log.error("unexpected %s on %s", type(exc).__name__, route_template(request.scope))
        return JSONResponse(error_body("internal", "internal error"), status_code=500)

    app.add_exception_handler(DualtrackError, dualtrack)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http)
    app.add_exception_handler(Exception, unexpected)
