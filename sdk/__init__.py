"""The dualtrack SDK: ``MemoryClient`` is the one facade agents call.

Everything a caller touches is importable from here: the client and its
settings, the lifecycle policy and memory kind, the input and result types,
the records the structured track returns, and every error::

    from sdk import MemoryClient, LifecyclePolicy, MemoryInput, Turn, UserNotFound
"""

from typing import TYPE_CHECKING

from policies.confidence import FeedbackAction, MemoryStatus
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.api import MemoryAPI
from sdk.client import Health, MemoryClient
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
from sdk.schemas import (
    FeedbackResult,
    MemoryHit,
    MemoryInput,
    SearchResults,
    SessionRecord,
    TurnsAppended,
)
from sdk.settings import Settings
from sdk.verification import (
    BusinessState,
    Verification,
    VerificationStatus,
    Verifier,
    VerifierMissing,
    VerifierTimeout,
    VerifierUnavailable,
)
from structured_memory.pii.vault import VaultRef
from structured_memory.records import BusinessLink, Device, Fact, Profile
from structured_memory.repositories.fragments import FragmentRecord
from structured_memory.repositories.outbox import OutboxLag
from unstructured_memory.plugins import lazy_exports
from unstructured_memory.summariser.transcript import Turn

if TYPE_CHECKING:
    from sdk.remote import RemoteMemoryClient
    from sdk.remote_async import AsyncRemoteMemoryClient

__all__ = [
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

# The remote clients load httpx (and the summariser's types) only when asked for.
__getattr__ = lazy_exports(
    __name__,
    {
        "RemoteMemoryClient": "sdk.remote",
        "AsyncRemoteMemoryClient": "sdk.remote_async",
    },
)
