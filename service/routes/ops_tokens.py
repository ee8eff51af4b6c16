"""``/v1/ops/revocations``: refuse a token before it expires (``ops`` scope)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from sdk.wire import RevocationBody
from service.auth import TokenVerifier
from service.deps import TokenFirstRoute, ops_caller

__all__ = ["router"]

router = APIRouter(prefix="/v1/ops", tags=["ops"], route_class=TokenFirstRoute)


@router.post(
    "/revocations", status_code=204, response_class=Response, summary="Revoke a token by jti"
)
def revoke(caller: ops_caller, body: RevocationBody, request: Request) -> Response:
    """Refused from now (here at once, other pods within their refresh) until ``expires_at``."""
    caller.run(lambda m: m.admin.revoked_tokens.revoke(body.jti, body.expires_at))
    verifier: TokenVerifier = request.app.state.verifier
    verifier.forget_cache()
    return Response(status_code=204)
