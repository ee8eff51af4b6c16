"""``/v1/memories`` and ``/v1/search``: write, read, list, delete, search the token's user."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from policies.errors import RecordNotFound
from sdk.wire import HitOut, SearchBody, SearchOut, WriteRequest, WriteResponse
from service.deps import TokenFirstRoute, reader, writer
from service.metrics import metrics_of
from values.records import FragmentRecord

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["memories"], route_class=TokenFirstRoute)


@router.post("/memories", response_model=WriteResponse, status_code=201, summary="Write one memory")
def write(caller: writer, body: WriteRequest, request: Request) -> WriteResponse:
    """Store one memory under its (required) lifecycle policy."""
    memory_id = caller.run(
        lambda m: m.write(
            caller.user_id,
            body.text,
            lifecycle_policy=body.lifecycle_policy,
            session_id=body.session_id,
            occurred_at=body.occurred_at,
            metadata=body.metadata,
            kind=body.kind,
            private=body.private,
        )
    )
    metrics_of(request).writes.labels(body.lifecycle_policy.value).inc()
    return WriteResponse(memory_id=memory_id)


@router.get("/memories", response_model=list[FragmentRecord], summary="List memories", name="list")
def list_memories(
    caller: reader,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
) -> list[FragmentRecord]:
    """The user's visible memories, newest first."""
    return caller.run(lambda m: m.memories.list(caller.user_id, limit=limit, offset=offset))


@router.get(
    "/memories/{memory_id}", response_model=FragmentRecord, summary="Read a memory", name="get"
)
def get_memory(caller: reader, memory_id: uuid.UUID) -> FragmentRecord:
    """One visible memory; 404 ``record_not_found`` otherwise (another user's included)."""
    record = caller.run(lambda m: m.memories.get(caller.user_id, memory_id))
    if record is None:
        raise RecordNotFound("no such memory for this user")
    return record


@router.delete(
    "/memories/{memory_id}",
    status_code=204,
    response_class=Response,
    summary="Delete a memory",
    name="delete",
)
def delete_memory(caller: writer, memory_id: uuid.UUID) -> Response:
    """Delete one visible memory completely; 404 if there is none."""
    if not caller.run(lambda m: m.memories.delete(caller.user_id, memory_id)):
        raise RecordNotFound("no such memory for this user")
    return Response(status_code=204)


@router.post("/search", response_model=SearchOut, summary="Hybrid search")
def search(caller: reader, body: SearchBody, request: Request) -> SearchOut:
    """Hybrid search of the token's user (masked query, user-filtered)."""
    hits = caller.run(
        lambda m: m.search(
            caller.user_id,
            body.query,
            limit=body.limit,
            alpha=body.alpha,
            preset=body.preset,
            intents=body.intents,
            occurred_after=body.occurred_after,
            occurred_before=body.occurred_before,
            session_id=body.session_id,
        )
    )
    metrics_of(request).searches.labels(str(hits.degraded).lower()).inc()
    return SearchOut(hits=[HitOut.of(h) for h in hits], degraded=hits.degraded)
