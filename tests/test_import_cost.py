"""What importing the SDK costs: ``import sdk`` loads no NLP, numeric or HTTP stack, and the
remote client (``sdk.remote``) loads no database, NLP or numeric library at all, neither
when imported nor when it checks a call before sending it."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("jieba", "spacy", "numpy", "httpx", "weaviate", "fastapi")

ENGINE = ("sqlalchemy", "psycopg", "spacy", "jieba", "rjieba", "numpy", "re2")
"""What an agent service holding only the remote client must not load (``re2`` included:
it loads with the first PII check, not with the import)."""


def _loaded(code: str, watched: tuple[str, ...]) -> list[str]:
    """The top-level packages of ``watched`` a fresh interpreter holds after ``code``."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({watched!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    loaded: list[str] = json.loads(out.splitlines()[-1])
    return loaded


def test_importing_the_sdk_loads_none_of_the_heavy_packages() -> None:
    assert _loaded("import sdk", HEAVY) == []


def test_importing_the_remote_client_loads_no_engine() -> None:
    assert _loaded("import sdk.remote", ENGINE) == []
    assert _loaded("import sdk.remote_async", ENGINE) == []
    assert _loaded("from sdk import RemoteMemoryClient", ENGINE) == []


def test_the_values_the_wire_models_and_the_reports_load_no_engine() -> None:
    """Caller-facing values (a session's dialogue acts included), the REST bodies and the
    operator reports are modules of their own that hold no engine."""
    assert _loaded("import values, values.dialogue, sdk.wire, sdk.reports", ENGINE) == []


_CALLS = """
import uuid
from sdk import operations as ops
from sdk import LifecyclePolicy, MemoryKind, Turn

u = "u-1"
turns = [Turn("user", "退款到账了吗")]
ops.PROFILES_UPDATE.call(u, expected_version=1, timezone="Asia/Shanghai", attributes={"a": 1})
ops.DEVICES_REGISTER.call(u, device_id="dev-1", os="iOS", browser="Safari")
ops.LINKS_ADD.call(u, entity_type="order", entity_id="88231", role="owner",
                   effective_from=None, effective_to=None)
ops.LINKS_VALID_NOW.call(u, entity_type="refund")
ops.FACTS_PUT.call(u, key="k", value={"v": 1}, lifecycle_policy=LifecyclePolicy.EXPLICIT,
                   confidence=1.0, source="agent")
ops.WRITE.call(u, text="我喜欢微信通知", lifecycle_policy=LifecyclePolicy.IMPLICIT,
               session_id="s-1", occurred_at=None, metadata=None, kind=MemoryKind.NOTE,
               private=False)
ops.SEARCH.call(u, query="退款", limit=3, alpha=None, preset=None, intents=None,
                occurred_after=None, occurred_before=None, session_id="s-1")
ops.BUILD_CONTEXT.call(u, query="退款", max_tokens=600, records=5)
ops.END_SESSION.call(u, session_id="s-1", transcript=turns)
ops.APPEND_TURNS.call(u, session_id="s-1", turns=turns)
ops.SANDBOX_MERGE.call(u, session_id="s-1", sandbox_id=uuid.uuid4(), memory_ids=[uuid.uuid4()])
ops.FEEDBACK.call(u, memory_id=uuid.uuid4(), action="click")
ops.MEMORIES_LIST.call(u, limit=10, offset=0)
"""


def test_the_remote_checks_before_sending_load_no_database_or_nlp() -> None:
    """Building every kind of call runs the same checks as in process (ids, texts, policy,
    profile fields, PII in the fields kept in clear): RE2 loads for the PII checks, nothing
    of the engine does."""
    assert _loaded(_CALLS, ENGINE) == ["re2"]


def test_old_import_paths_give_the_same_objects() -> None:
    """The values moved to ``values`` (and the checks to ``policies``); the old paths
    re-export them for one release."""
    from policies.business import BusinessEntityType, check_entity_id
    from policies.profile_fields import validate_changes
    from policies.validation import check_device_field, check_source
    from sdk import context, schemas, verification
    from sdk.wire import HitOut
    from structured_memory import models, records
    from structured_memory.repositories import business_link, device, facts, fragments, profile
    from unstructured_memory import summariser
    from unstructured_memory.summariser import acts, entities, intent, outcome, summary, transcript
    from values import (
        BusinessState,
        Entity,
        FragmentRecord,
        Intent,
        MemoryContext,
        MemoryHit,
        Outcome,
        Profile,
        SessionSummary,
        Turn,
    )
    from values.dialogue import Act, ActKind, Correction, Dialogue, Utterance

    assert (schemas.MemoryHit, schemas.HitOut) == (MemoryHit, HitOut)
    assert (records.Profile, fragments.FragmentRecord) == (Profile, FragmentRecord)
    assert (summariser.Entity, entities.Entity, summariser.Turn, transcript.Turn) == (
        Entity,
        Entity,
        Turn,
        Turn,
    )
    assert (summary.SessionSummary, intent.Intent, outcome.Outcome) == (
        SessionSummary,
        Intent,
        Outcome,
    )
    assert (context.MemoryContext, verification.BusinessState) == (MemoryContext, BusinessState)
    assert (acts.Act, acts.ActKind, acts.Correction, acts.Dialogue, acts.Utterance) == (
        Act,
        ActKind,
        Correction,
        Dialogue,
        Utterance,
    )
    assert models.BusinessEntityType is BusinessEntityType
    assert business_link.check_entity_id is check_entity_id
    assert (device.check_device_field, facts.check_source) == (check_device_field, check_source)
    assert profile.validate_changes is validate_changes
