"""The OpenAPI document as a contract clients are generated from.

- **Security**: one HTTP Bearer scheme, :data:`BEARER`; every route whose caller
  needs a token requires it, so a generated client takes the token once.
- **Operation ids**: :func:`operation_id`, ``<tag>_<route name>``
  (``memories_search``, ``sessions_end``), the app's one id function.
- **Errors**: :class:`ContractRoute` declares the error answers a route can give,
  each with :class:`~service.errors.ErrorBody` (the one error format the exception
  handlers send, 422 included: never FastAPI's ``HTTPValidationError``) and the
  stable codes of that status, read from the error tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from fastapi import params
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer

from policies.errors import DualtrackError
from sdk.errors import ServiceUnavailable, TokenUserMismatch
from service.errors import ErrorBody

__all__ = ["BEARER", "ContractRoute", "error_responses", "operation_id"]

BEARER = HTTPBearer(
    scheme_name="bearer",
    bearerFormat="JWT",
    description=(
        "A JWT whose `sub` is the user and `azp` (or `client_id`) the agent; its `scope` "
        "claim holds `memory:read`, `memory:write`, `memory:erase`, `account:export`, `ops`."
    ),
    auto_error=False,
)
"""The token scheme as OpenAPI names it. It only declares: the gate reads and checks the
``Authorization`` header itself, before the body, with the error bodies of
:mod:`service.errors` (HTTPBearer would answer its own)."""

_HTTP_CODES = {
    404: ["not_found"],
    405: ["method_not_allowed"],
    412: ["version_conflict"],
    422: ["invalid_input"],
}
"""Codes the handlers answer outside the error tree's statuses (Starlette's, validation, and
the profile's stale If-Match)."""

_CLIENT_SIDE = {ServiceUnavailable.code, TokenUserMismatch.code}
"""Codes only the remote client raises, never the service."""

_SUMMARY = {
    400: "Bad input; nothing was written",
    401: "No token, or a bad, expired or revoked one",
    403: "The token lacks the route's scope",
    404: "Not found (the user, the record or the X-Dualtrack-Sandbox sandbox)",
    409: "Conflict with the current state",
    412: "If-Match is not the current version (`current_version` tells it)",
    413: "The body is over the service's limit",
    422: "The request does not match the schema",
    429: "Over a rate limit (see Retry-After)",
    500: "Unexpected error (its message is never passed on)",
    503: "A store is unavailable or the schema is not served: retry later",
}


_NOT_REST: Final = ("adapters.", "service.mcp")
"""Modules whose errors no REST route answers with (the framework adapters', the MCP
server's own): the document is the same whatever the process imported."""


def _codes(status: int) -> list[str]:
    """The stable codes of ``status``: every error class answering with it, and the
    handlers' own."""
    found: list[str] = []
    pending: list[type[DualtrackError]] = [DualtrackError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        own = (
            "code" in cls.__dict__
            and cls.code not in _CLIENT_SIDE
            and not cls.__module__.startswith(_NOT_REST)
        )
        if own and cls.http_status == status and cls.code not in found:
            found.append(cls.code)
    return sorted(found + [c for c in _HTTP_CODES.get(status, []) if c not in found])


def error_responses(statuses: Iterable[int]) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of ``statuses``: the error body and the codes of each."""
    answers: dict[int | str, dict[str, Any]] = {}
    for status in sorted(set(statuses)):
        listed = ", ".join(f"`{c}`" for c in _codes(status))
        answers[status] = {"model": ErrorBody, "description": f"{_SUMMARY[status]}: {listed}"}
    return answers


def operation_id(route: APIRoute) -> str:
    """``<tag>_<name>``: the route's one tag and its name (``memories_search``)."""
    if len(route.tags) != 1:
        raise ValueError(f"route {route.path} needs exactly one tag, has {route.tags}")
    tag = route.tags[0]
    return f"{getattr(tag, 'value', tag)}_{route.name}"


def _tree(dependant: Dependant) -> Iterable[Dependant]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _tree(sub)


def _has_body(dependant: Dependant) -> bool:
    return any(d.body_params for d in _tree(dependant))


def _validated(dependant: Dependant) -> bool:
    """Whether FastAPI validates part of the request (its handler answers 422): a body
    or any parameter (FastAPI's own rule for declaring a 422)."""
    return any(
        d.body_params or d.path_params or d.query_params or d.header_params or d.cookie_params
        for d in _tree(dependant)
    )


class ContractRoute(APIRoute):
    """A route whose error answers are declared in the schema: 500 always, 422 when FastAPI
    validates part of the request, 413 with a body, and :meth:`caller_errors` (none here).
    An explicit ``responses`` entry wins (an error one without a model gets the error
    body)."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Any],
        *,
        responses: dict[int | str, dict[str, Any]] | None = None,
        dependencies: Sequence[params.Depends] | None = None,
        **kwargs: Any,
    ) -> None:
        dependant = get_dependant(path=path, call=endpoint)
        for depends in dependencies or ():
            if depends.dependency is not None:
                dependant.dependencies.append(get_dependant(path=path, call=depends.dependency))
        statuses = {500, *self.caller_errors(dependant)}
        if _validated(dependant):
            statuses.add(422)
        if _has_body(dependant):
            statuses.add(413)
        declared = error_responses(statuses)
        for status, answer in (responses or {}).items():
            errs = int(status) >= 400 and "model" not in answer and "content" not in answer
            declared[status] = {"model": ErrorBody, **answer} if errs else answer
        super().__init__(
            path,
            endpoint,
            responses=declared,
            dependencies=dependencies,
            **kwargs,
        )

    def caller_errors(self, dependant: Dependant) -> set[int]:
        """The statuses the route's caller check can answer (a subclass's concern)."""
        return set()
