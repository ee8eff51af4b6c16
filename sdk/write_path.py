"""The write path of the unstructured track, one named stage after another.

    validate → analyse and mask → vault → embed → TTL → ledger → index feed → audit

- **validate**: the user scope, the lifecycle policy (required), text, ids,
  times and metadata; a bad item fails its batch before anything is written.
- **analyse and mask**: rules + NER tag entities and intent; PII is replaced
  by its mask in the text that will be stored, embedded and indexed, and in
  every string anywhere inside ``metadata`` (whatever the policy); the text and
  its metadata name at most ``MAX_PII_VALUES`` distinct values (``InvalidText``). Metadata
  keys are stored as given, so a key holding PII is refused; the key ``pii``
  is reserved for the references below.
- **vault**: the clear PII values of the text and the metadata go to the
  encrypted vault, referenced (once per value) from the fragment's
  ``metadata["pii"]``.
- **embed**: one batch call for the fragments and their session contexts
  (contextual indexing: the session date and the previous turns a reader of
  the fragment may also see).
- **TTL**: ``policies.ttl`` decides the lifetime from the policy, the kind and
  whether the user is frequent.
- **ledger**: one row per fragment in PostgreSQL, the system of record.
- **index feed**: the change is queued for a derived index in the same
  transaction (nothing to queue for pgvector).
- **audit**: one ``write`` entry per fragment in the audit log
  (``structured_memory.audit``), naming the agent and the user's pseudonym.

Vault, TTL, ledger, index feed and audit share one transaction per batch, which
holds the users' profiles ``FOR KEY SHARE`` in user order: writers never
block each other, an erasure waits for them, and a write for an unknown or
erased user raises :class:`UserNotFound`. A deadlock is retried a bounded
number of times, then raised as :class:`TransientFailure`.

Timings: :func:`observe_stages` tells an observer (a metrics histogram, a
benchmark) how long each stage of each committed batch took; the same timings
become child spans of the current span (:func:`sdk.tracing.stage_spans`).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from policies.audit import AuditAction
from policies.errors import InvalidField, InvalidInput, StoreUnavailable
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.outbox import OutboxOp
from policies.pii import PiiMatch, check_pii_values, find_pii
from policies.scope import UserScope
from policies.superseded import marker_for, unsay
from policies.temporary import TEMPORARY_NOTE
from policies.ttl import MemoryKind, TTLConfig, lifetime
from policies.validation import (
    check_json,
    check_session_id,
    check_text,
    check_timestamp,
)
from sandbox.repository import SandboxRepository
from sdk.feed import IndexFeed
from sdk.tracing import stage_spans
from structured_memory.audit import record_batch, trail
from structured_memory.database import Database
from structured_memory.pii.fields import mask_json
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.fragments import (
    FragmentLedger,
    Neighbour,
    NewFragment,
    frequent_users,
    hold_profiles,
    release_vault_entries,
)
from unstructured_memory.contextual import (
    combine_tokens,
    combine_vectors,
    context_text,
    indexed_terms,
)
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.summariser.amended import substitute
from unstructured_memory.summariser.replanned import (
    named_again,
    of_one_thing,
    on_the_same_thing,
    replanned_words,
)
from unstructured_memory.summariser.restated import restate
from unstructured_memory.summariser.summary import analyse_text
from unstructured_memory.summariser.topics import Topic
from unstructured_memory.tokenize import keyword_terms
from values.entities import Entity
from values.inputs import MemoryInput
from values.sessions import SessionSummary

__all__ = [
    "MAX_METADATA_BYTES",
    "RESTATED_RECORDS",
    "STAGES",
    "StageObserver",
    "Within",
    "WritePath",
    "observe_stages",
]

_log = logging.getLogger(__name__)

MAX_METADATA_BYTES = 16 * 1024
"""Largest ``metadata`` accepted, as UTF-8 JSON."""

RESTATED_RECORDS = 50
"""How many of the user's latest records a changed instruction is looked for in."""

_RECORDS = (MemoryKind.INTERACTION_RECORD.value, MemoryKind.NOTE.value)
"""The kinds an amendment rewrites: what sessions recorded."""

Within = Callable[[Connection, list[NewFragment]], list[NewFragment]]
"""Work joined to a write's transaction, after the vault and TTL stages and before the
ledger: it may adjust the fragments (their metadata) and write rows of its own; an error
it raises rolls the whole write back."""

STAGES = (
    "validate",
    "analyse and mask",
    "vault",
    "embed",
    "TTL",
    "ledger",
    "index feed",
    "audit",
)
"""The stages an observer hears of, in order (``embed`` includes the context lookup)."""

StageObserver = Callable[[str, float, int], None]
"""Told ``(stage, seconds, fragments)`` once per stage of each committed batch: a stage
of :data:`STAGES`, the seconds it took (summed over the batch's items and retries), the
batch's fragment count. It runs on the writing thread; what it raises is logged, not
raised."""


class _Observers:
    """The stage observers of this process (a tuple, replaced whole under the lock)."""

    def __init__(self) -> None:
        self.current: tuple[StageObserver, ...] = ()
        self.lock = threading.Lock()


_OBSERVERS = _Observers()


def observe_stages(observer: StageObserver) -> Callable[[], None]:
    """Report every write's stage timings in this process to ``observer`` until the
    returned function is called. Without observers the timings cost a few clock reads per
    item."""
    with _OBSERVERS.lock:
        _OBSERVERS.current = (*_OBSERVERS.current, observer)

    def stop() -> None:
        with _OBSERVERS.lock:
            _OBSERVERS.current = tuple(o for o in _OBSERVERS.current if o is not observer)

    return stop


def _report(spent: Mapping[str, float], fragments: int) -> None:
    for observer in _OBSERVERS.current:
        for stage in STAGES:
            if stage in spent:
                try:
                    observer(stage, spent[stage], fragments)
                except Exception:  # an observer's bug must not fail a committed write
                    _log.exception("a write stage observer failed")


@dataclass(frozen=True)
class _Item:
    """A fragment between stages: masked, not yet embedded; its PII and its context."""

    fragment: NewFragment
    pii: Sequence[PiiMatch]
    context: str | None = None
    context_ids: tuple[uuid.UUID, ...] = ()


_Embedded = tuple[list[float], list[str]]
"""A fragment's vector and index tokens, its context mixed in."""

_EMBED_CHUNK = 256
"""Items analysed, then embedded, at a time: their texts' tokens are still in the
tokenizer's cache (1,024 texts) when the embedder and the context tokens ask again."""


@dataclass
class _Turn:
    """A fragment of this call remembered for the contexts of the next ones."""

    id: uuid.UUID
    text: str
    scope: UserScope
    private: bool


def _entity_dicts(entities: Iterable[Entity]) -> list[dict[str, Any]]:
    """Entities as the ledger stores them (PII entities carry masked text)."""
    return [{"type": e.type, "text": e.text, "start": e.start, "end": e.end} for e in entities]


def _labelled(entities: Iterable[object]) -> list[tuple[str, str]]:
    """``(label, text)`` of a stored record's entities (their dicts)."""
    return [
        (str(e.get("type", "")), str(e.get("text", ""))) for e in entities if isinstance(e, dict)
    ]


def _context_scope(fragment: NewFragment) -> UserScope:
    """What every reader of ``fragment`` may see: its context is drawn from that only.

    A private fragment's readers are its agent; a public one's are all agents,
    so no private turn may lend it words. Either way, its sandbox or none.
    """
    agent = fragment.agent_id if fragment.private else None
    return UserScope(fragment.user_id, agent, fragment.sandbox_id)


class WritePath:
    """Runs the stages above for ``write_many`` and ``end_session``."""

    def __init__(
        self,
        *,
        db: Database,
        ledger: FragmentLedger,
        vault: PiiVault,
        embedder: Embedder,
        feed: IndexFeed,
        ttl: TTLConfig,
        sandboxes: SandboxRepository,
        scope_for: Callable[[str], UserScope],
        check_embedding_space: Callable[[], None],
        context_turns: int,
    ) -> None:
        self._db = db
        self._sandboxes = sandboxes
        self._ledger = ledger
        self._vault = vault
        self._embedder = embedder
        self._feed = feed
        self._ttl = ttl
        self._scope = scope_for
        self._check_space = check_embedding_space
        self._context_turns = context_turns

    # -- entry points ----------------------------------------------------------------------

    def rescoped(self, scope_for: Callable[[str], UserScope]) -> WritePath:
        """The same write path, turning user ids into scopes with ``scope_for``
        (another agent's client shares everything else)."""
        clone = copy.copy(self)
        clone._scope = scope_for
        return clone

    def write_batches(
        self,
        items: Sequence[MemoryInput],
        *,
        batch_size: int,
        advance: Callable[[int], None],
        within: Within | None = None,
    ) -> list[uuid.UUID]:
        """Write ``items``, a transaction per batch (each joined by ``within``); returns the
        ids in order."""
        self._check_space()
        ids: list[uuid.UUID] = []
        sessions: dict[tuple[str, str], deque[_Turn]] = {}
        for start in range(0, len(items), batch_size):
            batch, now, embedded, spent = self._prepare(items, start, batch_size, sessions)
            ids += self._store(batch, now, embedded, spent, within)
            advance(len(batch))
        return ids

    def _prepare(
        self,
        items: Sequence[MemoryInput],
        start: int,
        batch_size: int,
        sessions: dict[tuple[str, str], deque[_Turn]],
    ) -> tuple[list[_Item], datetime, list[_Embedded], dict[str, float]]:
        """Validate, analyse and embed one batch (stages timed); its items, time,
        embeddings and the timings."""
        now = datetime.now(UTC)
        clock = time.perf_counter
        spent = dict.fromkeys(("validate", "analyse and mask", "embed"), 0.0)
        ready: list[_Item] = []
        embedded: list[_Embedded] = []
        end = min(start + batch_size, len(items))
        for chunk in range(start, end, _EMBED_CHUNK):
            prepared = []
            for position in range(chunk, min(chunk + _EMBED_CHUNK, end)):
                try:
                    t0 = clock()
                    checked = self.validate(items[position], now)
                    t1 = clock()
                    prepared.append(self.analyse_and_mask(checked))
                    spent["analyse and mask"] += clock() - t1
                    spent["validate"] += t1 - t0
                except InvalidInput as exc:
                    exc.details.setdefault("item", position)
                    raise
            t0 = clock()
            with_context = self._with_contexts(prepared, sessions, now)
            ready += with_context
            embedded += self.embed(with_context)
            spent["embed"] += clock() - t0
        return ready, now, embedded, spent

    def write_record(
        self,
        scope: UserScope,
        summary: SessionSummary,
        turns: int,
        *,
        metadata: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
        within: Within | None = None,
    ) -> uuid.UUID:
        """Store a session's interaction record (IMPLICIT, kept 90 days) and return its id.

        In the same transaction: ``notes`` (masked texts, such as temporary intents)
        as IMPLICIT notes of the session, and ``within``. ``metadata`` is added to the
        record's.
        """
        self._check_space()
        fragment = self._fragment(
            scope,
            session_id=summary.session_id,
            kind=MemoryKind.INTERACTION_RECORD,
            policy=LifecyclePolicy.IMPLICIT,
            text=summary.summary_text,
            intent=summary.intent.value,
            occurred_at=summary.occurred_at,
            entities=summary.entities,
            metadata={
                "source": "end_session",
                "language": summary.language,
                "intent_confidence": summary.intent_confidence,
                "turns": turns,
                **(metadata or {}),
            },
        )
        items = [_Item(fragment, summary.pii)]
        for note in notes:
            words = keyword_terms(note)
            items.append(
                _Item(
                    replace(
                        fragment,
                        id=uuid.uuid4(),
                        kind=MemoryKind.NOTE.value,
                        text=note,
                        index_text=" ".join(words),
                        token_count=len(words),
                        entities=_entity_dicts(analyse_text(note).entities),
                        metadata={"source": "end_session", "note": TEMPORARY_NOTE},
                    ),
                    [],
                )
            )
        memory_id = self._store(items, datetime.now(UTC), within=within)[0]
        return memory_id

    def _fragment(
        self,
        scope: UserScope,
        *,
        session_id: str | None,
        kind: MemoryKind,
        policy: LifecyclePolicy,
        text: str,
        intent: str,
        occurred_at: datetime,
        entities: Iterable[Entity],
        metadata: dict[str, Any],
        private: bool = False,
    ) -> NewFragment:
        """A fragment of ``scope`` from a masked ``text``: its tokens, not yet embedded."""
        words = keyword_terms(text)
        return NewFragment(
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            private=private,
            session_id=session_id,
            sandbox_id=scope.sandbox_id,
            kind=kind.value,
            policy=policy,
            text=text,
            index_text=" ".join(words),
            token_count=len(words),
            intent=intent,
            occurred_at=occurred_at,
            expires_at=None,
            embedding=(),
            embedding_model=self._embedder.name,
            entities=_entity_dicts(entities),
            metadata=metadata,
        )

    # -- stages ----------------------------------------------------------------------------

    def validate(self, item: MemoryInput, now: datetime) -> tuple[MemoryInput, UserScope]:
        """Stage *validate*: scope, policy, text, ids, times, metadata."""
        scope = self._scope(item.user_id)
        require_policy(item.lifecycle_policy)
        if item.private and scope.agent_id is None:
            raise InvalidField("a private memory needs a client with an agent_id", field="private")
        check_text(item.text)
        if item.session_id is not None:
            check_session_id(item.session_id)
        check_timestamp(item.occurred_at, "occurred_at")
        if item.metadata is not None:
            if not isinstance(item.metadata, dict):
                raise InvalidField("metadata must be a JSON object", field="metadata")
            if "pii" in item.metadata:
                raise InvalidField(
                    "the metadata key 'pii' is reserved for vault references", field="metadata"
                )
            check_json(item.metadata, "metadata", max_bytes=MAX_METADATA_BYTES)
        return item, scope

    def analyse_and_mask(self, checked: tuple[MemoryInput, UserScope]) -> _Item:
        """Stage *analyse and mask*: entities, intent, the masked text and its tokens,
        the masked metadata."""
        item, scope = checked
        analysis = analyse_text(item.text)
        metadata, metadata_pii = mask_json(item.metadata or {}, "metadata")
        check_pii_values([*analysis.pii, *metadata_pii], "text")
        fragment = self._fragment(
            scope,
            private=item.private,
            session_id=item.session_id,
            kind=item.kind,
            policy=item.lifecycle_policy,
            text=analysis.masked_text,
            intent=analysis.intent.value,
            occurred_at=item.occurred_at or datetime.now(UTC),
            entities=analysis.entities,
            metadata=metadata,
        )
        return _Item(fragment, [*analysis.pii, *metadata_pii])

    def vault(self, conn: Connection, items: Sequence[_Item]) -> list[dict[str, Any]]:
        """Stage *vault*: seal the items' PII; each item's metadata referencing it.

        Values are stored in one global order (user, then the vault's
        ``lock_order``), so batches and releases sharing entries lock them in
        the same order.
        """
        wanted = sorted(
            {(i.fragment.user_id, m.kind.value, m.value) for i in items for m in i.pii},
            key=lambda k: (k[0], *self._vault.lock_order(k[1], k[2])),
        )
        refs = {
            key: self._vault.store(UserScope(key[0]), key[1], key[2], join=conn) for key in wanted
        }
        out = []
        for item in items:
            f = item.fragment
            vaulted = [
                {"vault_id": str(ref.id), "kind": ref.kind}
                for ref in dict.fromkeys(refs[(f.user_id, m.kind.value, m.value)] for m in item.pii)
            ]
            out.append({**f.metadata, "pii": vaulted} if vaulted else f.metadata)
        return out

    def embed(self, items: Sequence[_Item]) -> list[_Embedded]:
        """Stage *embed*: each fragment's vector and tokens, with its context mixed in."""
        contexts = [i.context for i in items if i.context is not None]
        vectors = self._embedder.embed_documents([i.fragment.text for i in items] + contexts)
        context_vectors = iter(vectors[len(items) :])
        out = []
        for item, own in zip(items, vectors[: len(items)], strict=False):
            vector, words = own, item.fragment.index_text.split()
            if item.context is not None:
                vector = combine_vectors(own, next(context_vectors))
                words = combine_tokens(words, keyword_terms(item.context))
            out.append((vector, words))
        return out

    def ttl(
        self, conn: Connection, fragments: Sequence[NewFragment], now: datetime
    ) -> list[tuple[datetime | None, int | None]]:
        """Stage *TTL*: each fragment's expiry and renewal period.

        Long-term memory follows ``policies.ttl`` (policy, kind, frequent user);
        a fragment written in a sandbox expires with its sandbox, which this
        stage holds open until commit (:class:`SandboxClosed` if it was closed,
        :class:`SandboxNotFound` if it is not the writing agent's).
        """
        users = {  # only where being a frequent user changes the lifetime is it asked
            f.user_id
            for f in fragments
            if f.sandbox_id is None
            and lifetime(f.policy, MemoryKind(f.kind), frequent_user=True, config=self._ttl)
            != lifetime(f.policy, MemoryKind(f.kind), frequent_user=False, config=self._ttl)
        }
        frequent = frequent_users(conn, users, now, self._ttl)
        boxes = {
            UserScope(f.user_id, f.agent_id, f.sandbox_id)
            for f in fragments
            if f.sandbox_id is not None
        }
        box_ends = {
            box: self._sandboxes.hold(conn, box, now)
            for box in sorted(boxes, key=lambda s: (s.user_id, s.agent_id or "", s.sandbox_id))
        }
        decided: list[tuple[datetime | None, int | None]] = []
        for f in fragments:
            if f.sandbox_id is not None:
                decided.append((box_ends[UserScope(f.user_id, f.agent_id, f.sandbox_id)], None))
                continue
            life = lifetime(
                f.policy, MemoryKind(f.kind), frequent_user=f.user_id in frequent, config=self._ttl
            )
            decided.append((life.expires_at(now), life.renew_days))
        return decided

    def ledger(self, conn: Connection, fragments: Sequence[NewFragment]) -> list[uuid.UUID]:
        """Stage *ledger*: insert the rows."""
        return self._ledger.insert(conn, fragments)

    def index_feed(self, conn: Connection, fragments: Sequence[NewFragment]) -> None:
        """Stage *index feed*: queue the upserts for a derived index."""
        self._feed.enqueue(conn, [(OutboxOp.UPSERT, f.user_id, f.id) for f in fragments])

    def audit(
        self,
        conn: Connection,
        fragments: Sequence[NewFragment],
        keys: Mapping[str, bytes] | None = None,
    ) -> None:
        """Stage *audit*: one ``write`` entry per fragment, per user in user order, in one
        call for the whole batch (``keys``: the users' audit keys already read)."""
        by_scope: dict[tuple[str, str | None], list[NewFragment]] = {}
        for f in fragments:
            by_scope.setdefault((f.user_id, f.agent_id), []).append(f)
        record_batch(
            conn,
            AuditAction.WRITE,
            [
                (
                    UserScope(user_id, agent_id),
                    f.id,
                    {"kind": f.kind, "policy": f.policy, "sandboxed": f.sandbox_id is not None},
                )
                for (user_id, agent_id), mine in sorted(by_scope.items(), key=lambda kv: kv[0][0])
                for f in mine
            ],
            keys=keys,
        )

    # -- forgetting ------------------------------------------------------------------------

    def forget(
        self,
        conn: Connection,
        scope: UserScope,
        gone: Sequence[uuid.UUID],
        vault_ids: Sequence[uuid.UUID],
        now: datetime,
    ) -> int:
        """After fragments were deleted or swept: release the vault entries nothing else
        references, and re-index the fragments whose context borrowed their words (so the
        words of a forgotten memory are searchable nowhere). Returns how many were
        re-indexed."""
        release_vault_entries(conn, scope, vault_ids)
        return self._reindex(conn, scope, self._ledger.neighbours(conn, scope, gone), now)

    def refresh_contexts(
        self, scope: UserScope, ids: Sequence[uuid.UUID], now: datetime
    ) -> frozenset[uuid.UUID]:
        """Re-index those of ``ids`` whose context holds a turn expired at ``now`` (a
        search met them) with the context of their turns live now, in a transaction of
        its own, then deliver all of ``ids`` to a derived index at once, beside the
        outbox (those another search re-indexed first too: its delivery may be behind).

        Returns the ids the index may still hold with the expired words: ``ids`` if the
        derived index could not take them now (the outbox delivers them later).
        """

        def unit() -> None:
            with self._db.transaction() as conn:
                self._reindex(conn, scope, self._ledger.stale(conn, scope, ids, now=now), now)

        self._db.retrying(unit)
        try:
            self._feed.deliver([(OutboxOp.UPSERT, scope.user_id, i) for i in ids])
        except StoreUnavailable as exc:
            _log.warning("re-indexed contexts left to the outbox: %s", exc.code)
            return frozenset(ids)
        return frozenset()

    def _reindex(
        self, conn: Connection, scope: UserScope, neighbours: Sequence[Neighbour], now: datetime
    ) -> int:
        """Re-index ``neighbours`` with the context of their session's turns visible to their
        readers and live at ``now``; queue them for a derived index; how many."""
        if not neighbours:
            return 0
        contexts = []
        for n in neighbours:
            reader = UserScope(n.user_id, n.agent_id if n.private else None, n.sandbox_id)
            turns = self._ledger.recent_turns(
                reader,
                n.session_id or "",
                until=n.occurred_at,
                now=now,
                limit=self._context_turns,
                before=n,
                join=conn,
            )
            contexts.append((turns, context_text(n.occurred_at, [t for _, t in turns])))
        vectors = self._embedder.embed_documents(
            [n.text for n in neighbours] + [c for _, c in contexts]
        )
        for n, own, context_vector, (turns, context) in zip(
            neighbours, vectors, vectors[len(neighbours) :], contexts, strict=False
        ):
            words = indexed_terms(n.text, context)
            self._ledger.reindex(
                conn,
                scope,
                n.id,
                index_text=" ".join(words),
                embedding=combine_vectors(own, context_vector),
                context_ids=[i for i, _ in turns],
            )
        self.index_feed_ids(conn, scope, [n.id for n in neighbours])
        return len(neighbours)

    def amend(self, conn: Connection, scope: UserScope, pairs: Sequence[tuple[str, str]]) -> int:
        """Rewrite the user's interaction records and notes that name a value the user
        corrected since (``(wrong, right)`` pairs): the wrong value replaced by the right
        one in text, entities, keyword terms and vector, and the derived index told. Values
        holding PII are never searched for. Returns how many records changed."""
        pairs = [(w, r) for w, r in pairs if not find_pii(w) and not find_pii(r)]
        rows = self._ledger.naming(conn, scope, [w for w, _ in pairs], _RECORDS)
        return self._rewrite(
            conn,
            scope,
            [
                (
                    fragment_id,
                    substitute(text, pairs),
                    [
                        {**e, "text": substitute(str(e.get("text", "")), pairs)}
                        if isinstance(e, dict)
                        else e
                        for e in entities
                    ],
                )
                for fragment_id, text, entities in rows
            ],
        )

    def restate(
        self,
        conn: Connection,
        scope: UserScope,
        topics: Sequence[Topic],
        olds: Sequence[str],
        news: Sequence[str],
        *,
        latest: int = RESTATED_RECORDS,
    ) -> int:
        """Rewrite the user's ``latest`` most recent interaction records and notes that
        state an instruction of ``topics`` the user gave, changed or withdrew since
        (``olds``: the instructions as they were; ``news``: as they are now), each such
        clause replaced by a marker
        (:func:`~unstructured_memory.summariser.restated.restate`); the derived index is
        told. Returns how many records changed."""

        def restated(text: str) -> str | None:
            lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
            return restate(text, topics, olds, news, lang=lang)

        seen = self._ledger.latest(conn, scope, _RECORDS, limit=latest)
        stale = [fragment_id for fragment_id, text in seen if restated(text) is not None]
        changed = [  # read again under the lock: a concurrent amendment may have come first
            (fragment_id, new, list(entities))
            for fragment_id, text, entities in self._ledger.locked(conn, scope, stale)
            if (new := restated(text)) is not None
        ]
        return self._rewrite(conn, scope, changed)

    def forget_detail(
        self,
        conn: Connection,
        scope: UserScope,
        naming: Sequence[str],
        then: Callable[[str], str],
        *,
        written: uuid.UUID,
        subjects: Sequence[tuple[str, str]] = (),
        said: str = "",
        heads: Sequence[str] = (),
        latest: int = RESTATED_RECORDS,
    ) -> int:
        """Rewrite by ``then`` the most recent of the user's ``latest`` records (not
        ``written``, this session's) that ``then`` changes and that holds every one of
        ``naming`` (the ids the session named) or, with none, is on a thing the session
        names again, or is the last record when it names none
        (:func:`~unstructured_memory.summariser.replanned.named_again`;
        ``subjects``: the session's ``(label, text)`` entities, ``said``: the user's words),
        or, failing those, is the only one stating a request by one of ``heads``
        (:func:`~unstructured_memory.summariser.summary.withdrawn_heads`: 价保不弄了 takes
        back the one price adjustment asked for, though the session named the free gift):
        the record of a request taken back since (``then``:
        :func:`~unstructured_memory.summariser.summary.taken_back`) says so and loses its
        expected date, though it stated the request in other words or the session named
        only the product. Returns how many records changed (0 or 1)."""
        seen = self._ledger.latest(conn, scope, _RECORDS, limit=latest)
        last = next((i for i, _ in seen if i != written), None)
        changed = [i for i, text in seen if i != written and then(text) != text]
        folded = [n.casefold() for n in naming]
        rows = {
            i: (text, entities) for i, text, entities in self._ledger.locked(conn, scope, changed)
        }
        for i in (i for i in changed if i in rows):  # newest first, still there
            text, entities = rows[i]
            named = _labelled(entities)
            if (
                all(n in text.casefold() for n in folded)
                if folded
                else named_again(named, subjects, said, last=i == last)
            ):
                return self._rewrite(conn, scope, [(i, then(text), list(entities))])
        stating = [i for i in rows if any(h in rows[i][0] for h in heads)]
        if not folded and len(stating) == 1:
            text, entities = rows[stating[0]]
            if of_one_thing(_labelled(entities)):
                return self._rewrite(conn, scope, [(stating[0], then(text), list(entities))])
        return 0

    def replan(
        self,
        conn: Connection,
        scope: UserScope,
        later: str,
        subjects: Sequence[tuple[str, str]],
        *,
        written: uuid.UUID,
        latest: int = RESTATED_RECORDS,
        referred: bool = False,
    ) -> int:
        """Rewrite the user's ``latest`` most recent interaction records and notes (not
        ``written``, the record of the session that changed a plan) on the same thing
        (:func:`~unstructured_memory.summariser.replanned.on_the_same_thing`; ``subjects``:
        the session's ``(label, text)`` entities; ``referred``: the user pointed back at an
        order without naming it): each plan value ``later`` (that record's
        text) replaced with another of its kind is shown as updated
        (:func:`~unstructured_memory.summariser.replanned.replanned_words`); the derived
        index is told. Returns how many records changed."""
        seen = self._ledger.latest(conn, scope, _RECORDS, limit=latest)
        last = next((i for i, _ in seen if i != written), None)
        stale = [i for i, text in seen if i != written and replanned_words(text, later)]
        changed = []
        for fragment_id, text, entities in self._ledger.locked(conn, scope, stale):
            named = _labelled(entities)
            words = replanned_words(text, later)  # read again under the lock
            same = on_the_same_thing(named, subjects, last=fragment_id == last, referred=referred)
            if words and same:
                changed.append((fragment_id, unsay(text, words, marker_for(text)), list(entities)))
        return self._rewrite(conn, scope, changed)

    def _rewrite(
        self,
        conn: Connection,
        scope: UserScope,
        rows: Sequence[tuple[uuid.UUID, str, Sequence[Any]]],
    ) -> int:
        """Store each ``(id, text, entities)`` as the fragment's new text, re-embedded and
        re-indexed, and tell the derived index; returns how many."""
        if not rows:
            return 0
        vectors = self._embedder.embed_documents([text for _, text, _ in rows])
        for (fragment_id, text, entities), vector in zip(rows, vectors, strict=True):
            self._ledger.rewrite(
                conn,
                scope,
                fragment_id,
                text=text,
                entities=entities,
                index_text=" ".join(keyword_terms(text)),
                embedding=vector,
            )
        self.index_feed_ids(conn, scope, [r[0] for r in rows])
        return len(rows)

    def index_feed_ids(self, conn: Connection, scope: UserScope, ids: Sequence[uuid.UUID]) -> None:
        """Queue upserts of changed fragments for a derived index."""
        self._feed.enqueue(conn, [(OutboxOp.UPSERT, scope.user_id, i) for i in ids])

    # -- plumbing --------------------------------------------------------------------------

    def _with_contexts(
        self, items: Sequence[_Item], sessions: dict[tuple[str, str], deque[_Turn]], now: datetime
    ) -> list[_Item]:
        """The items with their session contexts (contextual indexing), if they have a
        session.

        Previous turns come from earlier items of the same call, or from the
        ledger for the first item of a session in the call (one statement for
        all of them), and only from turns every reader of the fragment may see.
        """
        if self._context_turns == 0:
            return list(items)
        lookups: dict[tuple[str, str], tuple[UserScope, str, datetime]] = {}
        for item in items:
            f = item.fragment
            if f.session_id is not None and (key := (f.user_id, f.session_id)) not in sessions:
                lookups.setdefault(key, (_context_scope(f), f.session_id, f.occurred_at))
        if lookups:
            with self._db.reading() as conn:
                found = self._ledger.recent_turns_many(
                    conn, list(lookups.values()), now=now, limit=self._context_turns
                )
            for (key, (reader, _, _)), earlier in zip(lookups.items(), found, strict=True):
                sessions[key] = deque(_Turn(i, t, reader, False) for i, t in earlier)
        return [self._with_context(i, sessions) for i in items]

    def _with_context(self, item: _Item, sessions: dict[tuple[str, str], deque[_Turn]]) -> _Item:
        """The item with its context drawn from its session's previous turns (``sessions``
        holds every session of the item's batch)."""
        f = item.fragment
        if f.session_id is None:
            return item
        reader = _context_scope(f)
        previous = sessions[(f.user_id, f.session_id)]
        own = UserScope(f.user_id, f.agent_id, f.sandbox_id)
        seen = [
            t
            for t in previous
            if reader.may_see(
                user_id=t.scope.user_id,
                agent_id=t.scope.agent_id,
                private=t.private,
                sandbox_id=t.scope.sandbox_id,
            )
        ][-self._context_turns :]
        previous.append(_Turn(f.id, f.text, own, f.private))
        while len(previous) > 4 * self._context_turns:
            previous.popleft()
        return replace(
            item,
            context=context_text(f.occurred_at, [t.text for t in seen]),
            context_ids=tuple(t.id for t in seen),
        )

    def _store(
        self,
        items: Sequence[_Item],
        now: datetime,
        embedded: Sequence[_Embedded] | None = None,
        spent: dict[str, float] | None = None,
        within: Within | None = None,
    ) -> list[uuid.UUID]:
        """Embed (unless ``embedded``), then vault, TTL, ``within``, ledger and index feed
        in one transaction (retried); the stage timings (added to ``spent``) go to the
        observers after commit."""
        clock = time.perf_counter
        spent = {} if spent is None else spent

        def timed(stage: str, started: float) -> float:
            ended = clock()
            spent[stage] = spent.get(stage, 0.0) + ended - started
            return ended

        if embedded is None:
            t = clock()
            embedded = self.embed(items)
            timed("embed", t)

        def unit() -> list[uuid.UUID]:
            with self._db.transaction() as conn:
                keys = hold_profiles(conn, {i.fragment.user_id for i in items})
                with trail(conn, keys):  # ``within``'s entries and the writes': one statement
                    ids = stages(conn, keys)
                    t = clock()
                timed("audit", t)
                return ids

        def stages(conn: Connection, keys: Mapping[str, bytes]) -> list[uuid.UUID]:
            t = clock()
            metadata = self.vault(conn, items)
            t = timed("vault", t)
            lifetimes = self.ttl(conn, [i.fragment for i in items], now)
            timed("TTL", t)
            fragments = [
                replace(
                    item.fragment,
                    embedding=vector,
                    index_text=" ".join(words),
                    token_count=len(words),
                    expires_at=expires,
                    renew_days=renew_days,
                    context_ids=item.context_ids,
                    metadata=meta,
                )
                for item, (vector, words), meta, (expires, renew_days) in zip(
                    items, embedded, metadata, lifetimes, strict=True
                )
            ]
            if within is not None:
                fragments = within(conn, fragments)
            t = clock()
            ids = self.ledger(conn, fragments)
            t = timed("ledger", t)
            self.index_feed(conn, fragments)
            t = timed("index feed", t)
            self.audit(conn, fragments, keys)
            timed("audit", t)
            return ids

        ids = self._db.retrying(unit)
        self._feed.wake()
        if _OBSERVERS.current:
            _report(spent, len(items))
        stage_spans(spent, STAGES, len(items))
        return ids
