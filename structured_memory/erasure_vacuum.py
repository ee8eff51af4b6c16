"""Moved to :mod:`structured_memory.cross_user.erasure_vacuum`; this path re-exports it
for one release."""

from structured_memory.cross_user.erasure_vacuum import (
    ErasureTrace,
    ErasureVacuum,
    VacuumOutcome,
    erasure_trace,
)

__all__ = ["ErasureTrace", "ErasureVacuum", "VacuumOutcome", "erasure_trace"]
