"""Every error the SDK raises, importable from one place (and from ``sdk``).

The tree, rooted in :class:`DualtrackError` (each class has a stable
``code`` and the HTTP status the service answers with)::

    DualtrackError                       internal, 500
    ├── InvalidInput                     400: nothing was written
    │   ├── InvalidUserId
    │   ├── InvalidText                  empty, too long, invalid UTF-8, NUL
    │   ├── InvalidField                 a bad field, id, time, metadata, limit
    │   └── PolicyMissing                a write that names no lifecycle policy
    ├── NotFound                         404
    │   ├── UserNotFound                 no profile (create it with profiles.ensure)
    │   ├── RecordNotFound
    │   └── SandboxNotFound              not a sandbox of this user and agent
    ├── Conflict                         409
    │   ├── ConcurrentModificationError  optimistic-lock version mismatch
    │   ├── AuditLogImmutable            an UPDATE, DELETE or TRUNCATE of the audit log
    │   └── SandboxClosed                the session's sandbox was forked or discarded
    ├── Unauthorized                     401: no token, or a bad, expired or revoked one
    ├── Forbidden                        403: the token lacks the route's scope
    ├── PayloadTooLarge                  413: the body is over the service's limit
    ├── RateLimited                      429: the agent is over its rate (retry_after_s)
    ├── DecryptionError                  tampered ciphertext or wrong key
    ├── EmbedderError                    the embedding endpoint answered nonsense
    ├── ConfigurationError               bad settings or key ring
    │   ├── EmbeddingDimensionMismatch   the embedder differs from the stored vectors
    │   └── SchemaMismatch               503: the schema is not one this release serves
    └── StoreUnavailable                 503: retry later
        ├── DatabaseUnavailable
        ├── IndexUnavailable
        ├── EmbedderUnavailable
        ├── TransientFailure             a deadlock that outlasted the retries
        └── ServiceUnavailable           the REST service did not answer (remote client)

``TokenUserMismatch`` (an ``InvalidField``) is the remote client refusing a call
whose user is not its token's. The four HTTP errors are defined here, not in the
service, so an agent using the remote client catches them as it catches the rest.
"""

from policies.errors import (
    AuditLogImmutable,
    ConcurrentModificationError,
    ConfigurationError,
    Conflict,
    DatabaseUnavailable,
    DecryptionError,
    DualtrackError,
    IndexUnavailable,
    InvalidField,
    InvalidInput,
    InvalidText,
    InvalidUserId,
    NotFound,
    PolicyMissing,
    RecordNotFound,
    SchemaMismatch,
    StoreUnavailable,
    TransientFailure,
    UserNotFound,
    error_class_for_code,
)
from sandbox.errors import SandboxClosed, SandboxNotFound
from unstructured_memory.errors import (
    EmbedderError,
    EmbedderUnavailable,
    EmbeddingDimensionMismatch,
)

__all__ = [
    "AuditLogImmutable",
    "ConcurrentModificationError",
    "ConfigurationError",
    "Conflict",
    "DatabaseUnavailable",
    "DecryptionError",
    "DualtrackError",
    "EmbedderError",
    "EmbedderUnavailable",
    "EmbeddingDimensionMismatch",
    "Forbidden",
    "IndexUnavailable",
    "InvalidField",
    "InvalidInput",
    "InvalidText",
    "InvalidUserId",
    "NotFound",
    "PayloadTooLarge",
    "PolicyMissing",
    "RateLimited",
    "RecordNotFound",
    "SandboxClosed",
    "SandboxNotFound",
    "SchemaMismatch",
    "ServiceUnavailable",
    "StoreUnavailable",
    "TokenUserMismatch",
    "TransientFailure",
    "Unauthorized",
    "UserNotFound",
    "error_class_for_code",
]


class ServiceUnavailable(StoreUnavailable):
    """The dualtrack service could not be reached, timed out, or answered without its
    error format (a proxy's 502, say); the call may be retried."""

    code = "service_unavailable"


class TokenUserMismatch(InvalidField):
    """The remote client was asked to act for a user other than its token's ``sub``;
    nothing was sent."""

    code = "token_user_mismatch"


class Unauthorized(DualtrackError):
    """No token, or one that is forged, expired, not yet valid, revoked or malformed."""

    code = "unauthorized"
    http_status = 401


class Forbidden(DualtrackError):
    """A valid token without the scope the route needs."""

    code = "forbidden"
    http_status = 403


class PayloadTooLarge(DualtrackError):
    """The request body is over the service's ``DUALTRACK_MAX_BODY_BYTES``."""

    code = "payload_too_large"
    http_status = 413


class RateLimited(DualtrackError):
    """The agent is over its rate; ``details["retry_after_s"]`` says when to retry."""

    code = "rate_limited"
    http_status = 429
