"""``/v1/devices``: register, list, verify and remove the token's user's devices."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from policies.errors import RecordNotFound
from sdk.wire import DeviceRegister, DeviceVerify
from service.deps import TokenFirstRoute, reader, writer
from values.records import Device

__all__ = ["router"]

router = APIRouter(prefix="/v1/devices", tags=["devices"], route_class=TokenFirstRoute)

Fingerprint = Annotated[str, Path(min_length=64, max_length=64, pattern="^[0-9a-fA-F]{64}$")]


@router.post("", response_model=Device, summary="Record a sign-in from a device")
def register(caller: writer, body: DeviceRegister) -> Device:
    """The device (untrusted until verified twice); registering again refreshes it."""
    return caller.run(
        lambda m: m.devices.register(
            caller.user_id, device_id=body.device_id, os=body.os, browser=body.browser
        )
    )


@router.get("", response_model=list[Device], summary="List the user's devices", name="list")
def list_devices(caller: reader) -> list[Device]:
    """Most recently active first."""
    return caller.run(lambda m: m.devices.list(caller.user_id))


@router.post(
    "/{fingerprint}/verify", response_model=Device, summary="Count a verification of a device"
)
def verify(caller: writer, fingerprint: Fingerprint, body: DeviceVerify) -> Device:
    """Trusted after the second success; 404 ``record_not_found`` for another user's device."""
    return caller.run(
        lambda m: m.devices.verify(caller.user_id, fingerprint, succeeded=body.succeeded)
    )


@router.delete(
    "/{fingerprint}", status_code=204, response_class=Response, summary="Forget a device"
)
def remove(caller: writer, fingerprint: Fingerprint) -> Response:
    """204, or 404 if the user has no such device."""
    if not caller.run(lambda m: m.devices.remove(caller.user_id, fingerprint)):
        raise RecordNotFound("no such device for this user")
    return Response(status_code=204)
