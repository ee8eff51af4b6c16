"""``/v1/facts``: the token's user's keyed structured memories."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from policies.errors import RecordNotFound
from sdk.wire import FactPut
from service.deps import TokenFirstRoute, reader, writer
from values.records import Fact

__all__ = ["router"]

router = APIRouter(prefix="/v1/facts", tags=["facts"], route_class=TokenFirstRoute)

Key = Annotated[str, Path(min_length=1, max_length=128)]


@router.put("/{key:path}", response_model=Fact, summary="Create or replace a fact")
def put(caller: writer, key: Key, body: FactPut) -> Fact:
    """PII in ``value`` is vaulted and stored masked; SENSITIVE takes only a vault reference."""
    return caller.run(
        lambda m: m.facts.put(
            caller.user_id,
            key,
            body.value,
            lifecycle_policy=body.lifecycle_policy,
            confidence=body.confidence,
            source=body.source,
        )
    )


@router.get("", response_model=list[Fact], summary="List the user's live facts", name="list")
def list_facts(caller: reader) -> list[Fact]:
    """Every live fact of the user."""
    return caller.run(lambda m: m.facts.list(caller.user_id))


@router.get("/{key:path}", response_model=Fact, summary="Read one fact")
def get(caller: reader, key: Key) -> Fact:
    """The live fact (reading an IMPLICIT one renews its TTL); 404 ``record_not_found``."""
    fact = caller.run(lambda m: m.facts.get(caller.user_id, key))
    if fact is None:
        raise RecordNotFound("no such fact for this user")
    return fact


@router.delete("/{key:path}", status_code=204, response_class=Response, summary="Delete a fact")
def delete(caller: writer, key: Key) -> Response:
    """204, or 404 if the user has no such fact."""
    if not caller.run(lambda m: m.facts.delete(caller.user_id, key)):
        raise RecordNotFound("no such fact for this user")
    return Response(status_code=204)
