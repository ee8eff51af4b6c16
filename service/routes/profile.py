"""``/v1/profile``: PUT creates the token's user (the only way a user comes to exist),
GET reads it, PATCH updates it under ``If-Match`` (optimistic locking); every answer
carries the profile's version as its ``ETag``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header, Response
from fastapi.responses import JSONResponse

from policies.errors import ConcurrentModificationError, InvalidField
from sdk.wire import ProfilePatch
from service.deps import reader, writer
from service.errors import error_body
from service.operations import operation_router
from values.records import Profile

__all__ = ["router"]


def _tagged(profile: Profile, response: Response) -> Profile:
    response.headers["ETag"] = f'"{profile.version}"'
    return profile


def _ensure(caller: writer, response: Response) -> Profile:
    return _tagged(caller.run(lambda m: m.profiles.ensure(caller.user_id)), response)


def _get(caller: reader, response: Response) -> Profile:
    return _tagged(caller.run(lambda m: m.profiles.get(caller.user_id)), response)


def _patch(
    caller: writer,
    body: ProfilePatch,
    response: Response,
    if_match: Annotated[str, Header(max_length=32)],
) -> Any:
    raw = if_match.strip().removeprefix("W/").strip('"')
    if not raw.isdigit() or not 1 <= int(raw) <= 2**31:
        raise InvalidField("If-Match must carry the profile version", field="If-Match")
    changes = body.model_dump(exclude_none=True)
    try:
        updated = caller.run(
            lambda m: m.profiles.update(caller.user_id, expected_version=int(raw), **changes)
        )
    except ConcurrentModificationError as exc:
        content = error_body(exc.code, exc.message)
        content["error"]["current_version"] = exc.details.get("current_version")
        return JSONResponse(content, status_code=412)
    return _tagged(updated, response)


router = operation_router(
    "profile",
    endpoints={"profiles.ensure": _ensure, "profiles.get": _get, "profiles.update": _patch},
)
