"""The values a caller hands dualtrack and gets back, with no engine behind them.

Hits, records, contexts, sessions, entities, verifications and feedback
results are plain frozen dataclasses and pydantic models: they import no
database, NLP or numeric library, so the remote client (and an agent service
that only holds results) loads none. The tracks build them, the SDK returns
them, the remote client reads them from the REST service's JSON.

- ``values.records``: ``Profile``, ``Device``, ``BusinessLink``, ``Fact``,
  ``FragmentRecord``, ``VaultRef``
- ``values.hits``: ``MemoryHit``, ``SearchResults``
- ``values.inputs``: ``MemoryInput``
- ``values.context``: ``MemoryContext``, ``ContextItem``, ``Section``
- ``values.sessions``: ``Turn``, ``Role``, ``Intent``, ``Outcome``, ``Lang``,
  ``SessionSummary``, ``SessionRecord``, ``TurnsAppended``
- ``values.entities``: ``Entity``
- ``values.dialogue``: ``Act``, ``ActKind``, ``Correction``, ``Dialogue``, ``Utterance``
- ``values.verification``: ``BusinessState``, ``Verifier``, ``Verification``,
  ``VerificationStatus`` and the verifier errors
- ``values.feedback``: ``FeedbackResult``

REST request and response bodies are ``sdk.wire``'s; operator reports
``sdk.reports``'s.
"""

from values.context import ContextItem, MemoryContext, Section
from values.entities import Entity
from values.feedback import FeedbackResult
from values.hits import MemoryHit, SearchResults
from values.inputs import MemoryInput
from values.records import BusinessLink, Device, Fact, FragmentRecord, Profile, VaultRef
from values.sessions import (
    ROLES,
    Intent,
    Lang,
    Outcome,
    Role,
    SessionRecord,
    SessionSummary,
    Turn,
    TurnsAppended,
)
from values.verification import (
    BusinessState,
    Verification,
    VerificationStatus,
    Verifier,
    VerifierMissing,
    VerifierTimeout,
    VerifierUnavailable,
)

__all__ = [
    "ROLES",
    "BusinessLink",
    "BusinessState",
    "ContextItem",
    "Device",
    "Entity",
    "Fact",
    "FeedbackResult",
    "FragmentRecord",
    "Intent",
    "Lang",
    "MemoryContext",
    "MemoryHit",
    "MemoryInput",
    "Outcome",
    "Profile",
    "Role",
    "SearchResults",
    "Section",
    "SessionRecord",
    "SessionSummary",
    "Turn",
    "TurnsAppended",
    "VaultRef",
    "Verification",
    "VerificationStatus",
    "Verifier",
    "VerifierMissing",
    "VerifierTimeout",
    "VerifierUnavailable",
]
