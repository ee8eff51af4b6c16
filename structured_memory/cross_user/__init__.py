"""Operations that span users, on purpose: one module per job.

Everything else in dualtrack is confined to one :class:`~policies.scope.UserScope`;
the functions here are for operators, workers and identity resolution, and their
callers (the CLI, the ops API, the outbox worker) check the ops role before calling
them. Their statements run on connections from :mod:`.marking`, which mark them with
the ``dualtrack_cross_user`` execution option: the only statements on user tables
allowed to lack the user predicate (a test checks).

- :mod:`.pii_lookup`: the users holding a PII value (blind index only);
- :mod:`.rotation`: re-wrap data keys under the active ring key, move old entries;
- :mod:`.vault_repair`: merge duplicate vault entries, index old entries exactly;
- :mod:`.device_rekey`: key the device fingerprints written before revision 0013;
- :mod:`.sweep`: delete expired memories, then vacuum every user table;
- :mod:`.erasure_vacuum`: the vacuum an erasure runs on the tables it touched;
- :mod:`.ann_flags`: flag large users' memories for the approximate index;
- :mod:`.decay`: the daily confidence decay of inferred memories;
- :mod:`.reindex`: the ledger rows the outbox worker, ``reindex`` and ``retokenise`` read;
- :mod:`.idle_sessions`: sessions to end, users to set cold;
- :mod:`.stats`: the ops dashboard's read-only counts.

Callers import from the job's module or from this package; both name the same objects.
"""

from structured_memory.cross_user.ann_flags import flag_large_scopes
from structured_memory.cross_user.decay import DecayReport, count_decay_due, decay_inferred
from structured_memory.cross_user.device_rekey import (
    DeviceRekeyReport,
    count_unkeyed_devices,
    rekey_devices,
)
from structured_memory.cross_user.erasure_vacuum import (
    ErasureTrace,
    ErasureVacuum,
    VacuumOutcome,
    erasure_trace,
)
from structured_memory.cross_user.idle_sessions import IdleSession, idle_sessions, idle_users
from structured_memory.cross_user.marking import CROSS_USER, cross_user_transaction
from structured_memory.cross_user.pii_lookup import find_user_ids_by_pii
from structured_memory.cross_user.reindex import (
    count_fragments,
    fragments_for_index,
    iter_fragment_users,
    iter_fragments_for_index,
)
from structured_memory.cross_user.rotation import (
    RotationReport,
    count_unreadable,
    pending_rotation,
    rotate_keys,
)
from structured_memory.cross_user.stats import (
    DayCount,
    ExpiringCount,
    LevelCount,
    PendingQueue,
    confidence_levels,
    daily_audit_counts,
    expiring_per_day,
    pending_confirmations,
    renewals_per_day,
    verification_states,
)
from structured_memory.cross_user.sweep import (
    SWEPT,
    USER_TABLES,
    Forgotten,
    SweepReport,
    VacuumedTable,
    count_expired,
    sweep_expired,
    vacuum_user_tables,
)
from structured_memory.cross_user.vault_repair import (
    VaultRepairReport,
    count_vault_repairs,
    repair_vault,
)

__all__ = [
    "CROSS_USER",
    "SWEPT",
    "USER_TABLES",
    "DayCount",
    "DecayReport",
    "DeviceRekeyReport",
    "ErasureTrace",
    "ErasureVacuum",
    "ExpiringCount",
    "Forgotten",
    "IdleSession",
    "LevelCount",
    "PendingQueue",
    "RotationReport",
    "SweepReport",
    "VacuumOutcome",
    "VacuumedTable",
    "VaultRepairReport",
    "confidence_levels",
    "count_decay_due",
    "count_expired",
    "count_fragments",
    "count_unkeyed_devices",
    "count_unreadable",
    "count_vault_repairs",
    "cross_user_transaction",
    "daily_audit_counts",
    "decay_inferred",
    "erasure_trace",
    "expiring_per_day",
    "find_user_ids_by_pii",
    "flag_large_scopes",
    "fragments_for_index",
    "idle_sessions",
    "idle_users",
    "iter_fragment_users",
    "iter_fragments_for_index",
    "pending_confirmations",
    "pending_rotation",
    "rekey_devices",
    "renewals_per_day",
    "repair_vault",
    "rotate_keys",
    "sweep_expired",
    "vacuum_user_tables",
    "verification_states",
]
