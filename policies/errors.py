"""The one error tree of dualtrack.

Every error that crosses a package boundary is a :class:`DualtrackError` with a
stable machine-readable ``code`` and the HTTP status the service answers with::

    DualtrackError                       (code "internal", 500)
    ├── InvalidInput                     (400)
    │   ├── InvalidUserId
    │   ├── InvalidText                  empty, too long, invalid UTF-8, NUL, too much PII
    │   ├── InvalidField                 an unknown or ill-typed field
    │   └── PolicyMissing                a write that names no lifecycle policy
    ├── NotFound                         (404)
    │   ├── UserNotFound
    │   └── RecordNotFound               a device, link, fact or vault entry
    ├── Conflict                         (409)
    │   ├── ConcurrentModificationError  optimistic-lock version mismatch
    │   └── AuditLogImmutable            an UPDATE, DELETE or TRUNCATE of the audit log
    ├── DecryptionError                  (500) tampered ciphertext or wrong key
    ├── ConfigurationError               (500) bad settings or key ring
    │   └── SchemaMismatch               (503) the database schema is outside the range
    │                                    this code serves: run `dualtrack migrate`
    └── StoreUnavailable                 (503)
        ├── DatabaseUnavailable
        ├── IndexUnavailable
        └── TransientFailure             a deadlock or serialization failure that
                                         persisted through the SDK's retries

Each class registers its ``code`` when it is defined; a duplicate code is a
programming error caught at import. Lower-level driver errors are translated
where the driver is called, chained with ``from``. Messages never carry PII.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AuditLogImmutable",
    "ConcurrentModificationError",
    "ConfigurationError",
    "Conflict",
    "DatabaseUnavailable",
    "DecryptionError",
    "DualtrackError",
    "IndexUnavailable",
    "InvalidField",
    "InvalidInput",
    "InvalidText",
    "InvalidUserId",
    "NotFound",
    "PolicyMissing",
    "RecordNotFound",
    "SchemaMismatch",
    "StoreUnavailable",
    "TransientFailure",
    "UserNotFound",
    "error_class_for_code",
]

_BY_CODE: dict[str, type[DualtrackError]] = {}


class DualtrackError(Exception):
    """Root of every dualtrack error: a stable ``code`` and an ``http_status``."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__:
            if cls.code in _BY_CODE:
                raise RuntimeError(f"duplicate error code {cls.code!r}")
            _BY_CODE[cls.code] = cls

    def to_dict(self) -> dict[str, Any]:
        """The JSON body the service returns for this error."""
        return {"code": self.code, "message": self.message, "details": self.details}


_BY_CODE[DualtrackError.code] = DualtrackError


def error_class_for_code(code: str) -> type[DualtrackError]:
    """The error class registered under ``code``; ``DualtrackError`` if unknown."""
    return _BY_CODE.get(code, DualtrackError)


class InvalidInput(DualtrackError, ValueError):
    """The caller sent something we refuse; nothing was written."""

    code = "invalid_input"
    http_status = 400


class InvalidUserId(InvalidInput):
    """A user id that is empty, too long or has characters outside the allowed set."""

    code = "invalid_user_id"


class InvalidText(InvalidInput):
    """Text that is empty, over the size limit, not valid UTF-8, holds NUL, or names more
    distinct personal values than one text may (``policies.pii.MAX_PII_VALUES``)."""

    code = "invalid_text"


class InvalidField(InvalidInput):
    """An unknown field, a value of the wrong type, or a value outside its domain."""

    code = "invalid_field"


class PolicyMissing(InvalidInput, TypeError):
    """A write that names no lifecycle policy (there is no default policy)."""

    code = "policy_missing"


class NotFound(DualtrackError, LookupError):
    """The thing asked for does not exist (for this user)."""

    code = "not_found"
    http_status = 404


class UserNotFound(NotFound):
    """No profile exists for the user id."""

    code = "user_not_found"


class RecordNotFound(NotFound):
    """No device, link, fact or vault entry with that id exists for the user."""

    code = "record_not_found"


class Conflict(DualtrackError):
    """The request conflicts with the current state."""

    code = "conflict"
    http_status = 409


class ConcurrentModificationError(Conflict):
    """Optimistic locking failed: the row's version is not the expected one."""

    code = "version_conflict"


class AuditLogImmutable(Conflict):
    """The audit log is append-only: its triggers refused an UPDATE, DELETE or TRUNCATE."""

    code = "audit_log_immutable"


class DecryptionError(DualtrackError):
    """A ciphertext failed authentication: it was tampered with, or the key is wrong."""

    code = "decryption_failed"


class ConfigurationError(DualtrackError):
    """Settings, key ring or backend configuration are invalid."""

    code = "configuration_error"


class SchemaMismatch(ConfigurationError):
    """The database schema is older than this code needs, or a later release's schema that
    does not declare this code compatible (``structured_memory.migrate``)."""

    code = "schema_mismatch"
    http_status = 503


class StoreUnavailable(DualtrackError):
    """A backing store did not answer."""

    code = "store_unavailable"
    http_status = 503


class DatabaseUnavailable(StoreUnavailable):
    """PostgreSQL could not be reached or refused the connection."""

    code = "database_unavailable"


class IndexUnavailable(StoreUnavailable):
    """The search index (Weaviate) could not be reached."""

    code = "index_unavailable"


class TransientFailure(StoreUnavailable):
    """A deadlock or serialization failure that outlasted the SDK's bounded retries.

    Nothing was written; the same call may be retried as it is.
    """

    code = "transient_failure"
