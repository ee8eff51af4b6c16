"""Refuse request bodies over a size with 413, before a route reads them."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import error_body

__all__ = ["BodyLimit"]


class BodyLimit:
    """Pure ASGI: a declared or streamed body over ``max_bytes`` gets 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        refused = False

        async def limited() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    refused = True
                    return {"type": "http.disconnect"}
            return message

        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if refused and not started:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, limited, tracking)
        if refused and not started:
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            error_body("payload_too_large", f"the body is over {self.max_bytes} bytes")
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
