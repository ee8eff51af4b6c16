"""``/v1/profile``: PUT creates the token's user (the only way a user comes to exist),
GET reads it, PATCH updates it under ``If-Match`` (optimistic locking)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from policies.errors import ConcurrentModificationError, InvalidField
from service.deps import TokenFirstRoute, reader, writer
from service.errors import error_body
from values.records import Profile

__all__ = ["router"]

router = APIRouter(prefix="/v1/profile", tags=["profile"], route_class=TokenFirstRoute)


class ProfilePatch(BaseModel):
    """The fields a PATCH may change (all optional)."""

    model_config = ConfigDict(extra="forbid")

    timezone: str | None = Field(default=None, max_length=64)
    language: str | None = Field(default=None, max_length=16)
    notification_preference: dict[str, bool] | None = None
    attributes: dict[str, Any] | None = None
    profile_summary: str | None = Field(default=None, max_length=4096)


def _tagged(profile: Profile, response: Response) -> Profile:
    response.headers["ETag"] = f'"{profile.version}"'
    return profile


@router.put("", response_model=Profile, summary="Create the token's user (idempotent)")
def ensure(caller: writer, response: Response) -> Profile:
    """The profile, created with defaults if the user is new."""
    return _tagged(caller.run(lambda m: m.profiles.ensure(caller.user_id)), response)


@router.get("", response_model=Profile, summary="Read the token's profile")
def get(caller: reader, response: Response) -> Profile:
    """404 ``user_not_found`` until PUT created the user."""
    return _tagged(caller.run(lambda m: m.profiles.get(caller.user_id)), response)


@router.patch(
    "",
    response_model=Profile,
    responses={412: {"description": "version_conflict: If-Match is not the current version"}},
    summary="Update the profile if If-Match carries its current version",
)
def patch(
    caller: writer,
    body: ProfilePatch,
    response: Response,
    if_match: Annotated[str, Header(max_length=32)],
) -> Any:
    """412 ``version_conflict`` with ``current_version`` when the version is stale."""
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
