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
    │   └── RecordNotFound
    ├── Conflict                         409
    │   ├── ConcurrentModificationError  optimistic-lock version mismatch
    │   ├── AuditLogImmutable            an UPDATE, DELETE or TRUNCATE of the audit log
    │   └── SandboxClosed                the session's sandbox was forked or discarded
    ├── DecryptionError                  tampered ciphertext or wrong key
    ├── EmbedderError                    the embedding endpoint answered nonsense
    ├── ConfigurationError               bad settings or key ring
    │   ├── EmbeddingDimensionMismatch   the embedder differs from the stored vectors
    │   └── SchemaMismatch               503: the schema is not one this release serves
    └── StoreUnavailable                 503: retry later
        ├── DatabaseUnavailable
        ├── IndexUnavailable
        ├── EmbedderUnavailable
        └── TransientFailure             a deadlock that outlasted the retries
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
from sandbox.errors import SandboxClosed
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
    "IndexUnavailable",
    "InvalidField",
    "InvalidInput",
    "InvalidText",
    "InvalidUserId",
    "NotFound",
    "PolicyMissing",
    "RecordNotFound",
    "SandboxClosed",
    "SchemaMismatch",
    "StoreUnavailable",
    "TransientFailure",
    "UserNotFound",
    "error_class_for_code",
]
