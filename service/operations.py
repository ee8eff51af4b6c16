"""The REST routes of :data:`sdk.operations.OPERATIONS`, one generic handler an operation.

:func:`operation_router` builds the router of a tag: each operation becomes a route
with its method, path, name, summary, description, status and answer model; its
caller needs the operation's scope (:mod:`service.deps`); the handler takes the path
and query parameters and the body, hands them to the SDK as keyword arguments
(:meth:`~sdk.wire.Body.sdk_args`), and answers the operation's answer model (404
``record_not_found`` for a missing record, 204 for a delete). A route module adds
only what is its own (metrics, a header), by ``observe`` or a whole ``endpoint``.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response

from policies.errors import InvalidField, RecordNotFound
from sdk._remote_base import SANDBOX_HEADER
from sdk.operations import OPERATIONS, Operation
from service.auth import Scope
from service.deps import Caller, TokenFirstRoute, eraser, exporter, reader, writer

__all__ = ["PATH_PARAMS", "Observe", "operation_router"]

PATH_PARAMS: dict[str, Any] = {
    "session_id": Annotated[str, Path(min_length=1, max_length=128)],
    "fingerprint": Annotated[str, Path(min_length=64, max_length=64, pattern="^[0-9a-fA-F]{64}$")],
    "key": Annotated[str, Path(min_length=1, max_length=128)],
    "memory_id": uuid.UUID,
    "link_id": uuid.UUID,
}
"""The type of each path parameter of the contract, by name."""

_CALLERS: dict[Scope, Any] = {
    Scope.READ: reader,
    Scope.WRITE: writer,
    Scope.ERASE: eraser,
    Scope.EXPORT: exporter,
}

Observe = Callable[[Request, Any, Any], None]
"""``observe(request, body, result)`` after a successful SDK call (metrics)."""

_KW = inspect.Parameter.KEYWORD_ONLY


def _named(caller: Caller) -> uuid.UUID:
    if caller.sandbox_id is None:
        raise InvalidField(f"{SANDBOX_HEADER} must name the sandbox", field=SANDBOX_HEADER)
    return caller.sandbox_id


def _handler(op: Operation[Any], observe: Observe | None) -> Callable[..., Any]:
    def handle(caller: Caller, **params: Any) -> Any:
        body = params.pop("body", None)
        request = params.pop("request", None)
        arguments = {**params, **(body.sdk_args() if body is not None else {})}
        if op.sandbox:
            arguments["sandbox_id"] = _named(caller)
        result = caller.run(lambda m: op.run(m, caller.user_id, arguments))
        if op.missing is not None and (result is None or result is False):
            raise RecordNotFound(op.missing)
        if observe is not None:
            observe(request, body, result)
        if op.status == 204:
            return Response(status_code=204)
        return result if op.answer is None else op.answer(result)

    parameters = [inspect.Parameter("caller", _KW, annotation=_CALLERS[Scope(op.scope)])]
    parameters += [
        inspect.Parameter(name, _KW, annotation=PATH_PARAMS[name]) for name in op.path_params
    ]
    parameters += [
        inspect.Parameter(
            q.name, _KW, annotation=Annotated[q.kind, Query(ge=q.ge, le=q.le)], default=q.default
        )
        for q in op.query
    ]
    if op.body is not None:
        parameters.append(inspect.Parameter("body", _KW, annotation=op.body))
    if observe is not None:
        parameters.append(inspect.Parameter("request", _KW, annotation=Request))
    handle.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    handle.__name__ = handle.__qualname__ = op.route
    handle.__doc__ = op.doc
    return handle


def operation_router(
    tag: str,
    *,
    observe: Mapping[str, Observe] | None = None,
    endpoints: Mapping[str, Callable[..., Any]] | None = None,
) -> APIRouter:
    """The routes of the operations tagged ``tag``, in the table's order; ``endpoints``
    replace the generic handler of the operations they name (the route is the table's)."""
    router = APIRouter(tags=[tag], route_class=TokenFirstRoute)
    for op in OPERATIONS:
        if op.tag != tag:
            continue
        endpoint = (endpoints or {}).get(op.name) or _handler(op, (observe or {}).get(op.name))
        empty: dict[str, Any] = {"response_class": Response} if op.status == 204 else {}
        router.add_api_route(
            op.path,
            endpoint,
            methods=[op.method],
            response_model=op.response,
            status_code=None if op.status == 200 else op.status,
            summary=op.summary,
            description=inspect.cleandoc(op.doc),
            name=op.route,
            responses=dict(op.responses) or None,
            **empty,
        )
    return router
