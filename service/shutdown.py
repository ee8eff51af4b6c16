"""How a service process ends: on SIGTERM (and SIGHUP, handled as SIGTERM) with ``SystemExit``.

uvicorn shuts down gracefully on SIGTERM, then raises it again under the handler that
was installed before it ran; the default one kills the process without its exit
handlers, leaving the embedded PostgreSQL it started running and registered. Under
:func:`exit_cleanly_on_signals` the process exits (status 0) and its exit handlers stop it.
"""

from __future__ import annotations

import signal
from types import FrameType

__all__ = ["exit_cleanly_on_signals"]


def exit_cleanly_on_signals() -> None:
    """Let SIGTERM and SIGHUP end this process with ``SystemExit(0)`` (see the module)."""

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGHUP, lambda signum, frame: signal.raise_signal(signal.SIGTERM))
