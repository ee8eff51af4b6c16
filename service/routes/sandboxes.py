"""``/v1/sessions/{session_id}/sandbox``: open, fork, merge and discard a session's sandbox.

Open and fork return the sandbox; the client then names it in the
``X-Dualtrack-Sandbox`` header of the requests that work in it, merge and
discard included (required there).
"""

from service.operations import operation_router

__all__ = ["router"]

router = operation_router("sandboxes")
