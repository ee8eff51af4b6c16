"""``/v1/links``: the token's user's business links (order, refund, supplier, ...)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response

from policies.errors import RecordNotFound
from sdk.wire import LinkCreate, LinkEnd
from service.deps import TokenFirstRoute, reader, writer
from values.records import BusinessLink

__all__ = ["router"]

router = APIRouter(prefix="/v1/links", tags=["links"], route_class=TokenFirstRoute)


@router.post("", response_model=BusinessLink, summary="Link the user to a business entity")
def add(caller: writer, body: LinkCreate) -> BusinessLink:
    """``effective_to`` absent: open-ended."""
    return caller.run(
        lambda m: m.links.add(
            caller.user_id,
            entity_type=body.entity_type,
            entity_id=body.entity_id,
            role=body.role,
            effective_from=body.effective_from,
            effective_to=body.effective_to,
        )
    )


@router.get(
    "", response_model=list[BusinessLink], summary="List the user's business links", name="list"
)
def list_links(caller: reader, valid_now: Annotated[bool, Query()] = False) -> list[BusinessLink]:
    """Every link, past, present and future; ``valid_now=true``: those valid at this moment."""
    if valid_now:
        return caller.run(lambda m: m.links.valid_now(caller.user_id))
    return caller.run(lambda m: m.links.list(caller.user_id))


@router.post("/{link_id}/end", response_model=BusinessLink, summary="Close a business link")
def end(caller: writer, link_id: uuid.UUID, body: LinkEnd) -> BusinessLink:
    """Close the link at ``at`` (default now); 404 ``record_not_found`` for another user's."""
    return caller.run(lambda m: m.links.end(caller.user_id, link_id, body.at))


@router.delete(
    "/{link_id}", status_code=204, response_class=Response, summary="Delete a business link"
)
def remove(caller: writer, link_id: uuid.UUID) -> Response:
    """204, or 404 if the user has no such link."""
    if not caller.run(lambda m: m.links.remove(caller.user_id, link_id)):
        raise RecordNotFound("no such link for this user")
    return Response(status_code=204)
