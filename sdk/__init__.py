"""The dualtrack SDK: ``MemoryClient`` is the one facade agents call.

Everything a caller touches is importable from here: the client and its
settings, the lifecycle policy and memory kind, the input and result types,
the records the structured track returns, and every error::

    from sdk import MemoryClient, LifecyclePolicy, MemoryInput, Turn, UserNotFound

The values and errors load with the package and import no engine; the
in-process client, its settings and health (SQLAlchemy, psycopg, the
summariser) and the remote clients (httpx) load when first named, so
``import sdk.remote`` costs no database or NLP library.
"""

from typing import TYPE_CHECKING

from policies.confidence import FeedbackAction, MemoryStatus
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.api import MemoryAPI
from sdk.errors import (
    AuditLogImmutable,
    ConcurrentModificationError,
    ConfigurationError,
    Conflict,
    DatabaseUnavailable,
    DecryptionError,
    DualtrackError,
    EmbedderError,
    EmbedderUnavailable,
    EmbeddingDimensionMismatch,
    Forbidden,
    IndexUnavailable,
    InvalidField,
    InvalidInput,
    InvalidText,
    InvalidUserId,
    NotFound,
    PayloadTooLarge,
    PolicyMissing,
    RateLimited,
    RecordNotFound,
    SandboxClosed,
    SandboxNotFound,
    SchemaMismatch,
    ServiceUnavailable,
    StoreUnavailable,
    TokenUserMismatch,
    TransientFailure,
    Unauthorized,
    UserNotFound,
)
from unstructured_memory.plugins import lazy_exports
from values.feedback import FeedbackResult
from values.hits import MemoryHit, SearchResults
from values.inputs import MemoryInput
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile, VaultRef
from values.sessions import SessionRecord, Turn, TurnsAppended
from values.verification import (
    BusinessState,
    Verification,
    VerificationStatus,
    Verifier,
    VerifierMissing,
    VerifierTimeout,
    VerifierUnavailable,
)

if TYPE_CHECKING:
    from sdk.admin import Admin, Health
    from sdk.client import MemoryClient
    from sdk.remote import RemoteMemoryClient
    from sdk.remote_async import AsyncRemoteMemoryClient
    from sdk.settings import Settings
    from structured_memory.repositories.outbox import OutboxLag

__all__ = [
    "Admin",
    "AsyncRemoteMemoryClient",
    "AuditLogImmutable",
    "BusinessLink",
    "BusinessState",
    "ConcurrentModificationError",
    "ConfigurationError",
    "Conflict",
    "DatabaseUnavailable",
    "DecryptionError",
    "Device",
    "DualtrackError",
    "EmbedderError",
    "EmbedderUnavailable",
    "EmbeddingDimensionMismatch",
    "Fact",
    "FeedbackAction",
    "FeedbackResult",
    "Forbidden",
    "FragmentRecord",
    "Health",
    "IndexUnavailable",
    "InvalidField",
    "InvalidInput",
    "InvalidText",
    "InvalidUserId",
    "LifecyclePolicy",
    "MemoryAPI",
    "MemoryClient",
    "MemoryHit",
    "MemoryInput",
    "MemoryKind",
    "MemoryStatus",
    "NotFound",
    "OutboxLag",
    "PayloadTooLarge",
    "PolicyMissing",
    "Profile",
    "RateLimited",
    "RecordNotFound",
    "RemoteMemoryClient",
    "SandboxClosed",
    "SandboxNotFound",
    "SchemaMismatch",
    "SearchResults",
    "ServiceUnavailable",
    "SessionRecord",
    "Settings",
    "StoreUnavailable",
    "TokenUserMismatch",
    "TransientFailure",
    "Turn",
    "TurnsAppended",
    "Unauthorized",
    "UserNotFound",
    "VaultRef",
    "Verification",
    "VerificationStatus",
    "Verifier",
    "VerifierMissing",
    "VerifierTimeout",
    "VerifierUnavailable",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "MemoryClient": "sdk.client",
        "Admin": "sdk.admin",
        "Health": "sdk.admin",
        "Settings": "sdk.settings",
        "OutboxLag": "structured_memory.repositories.outbox",
        "RemoteMemoryClient": "sdk.remote",
        "AsyncRemoteMemoryClient": "sdk.remote_async",
    },
)
