"""``MemoryClient``: the one facade agents call.

Constructing a client does no I/O. The first use (or ``start()`` / ``with``)
starts the embedded PostgreSQL server when no DSN is set, builds the engine,
runs pending migrations when ``auto_migrate`` is on, and loads the PII key
ring. ``close()`` (or leaving the ``with`` block) releases the engine; the
embedded server stops when the last process using its data dir exits.

Operator work (sweep, decay, retokenise, the outbox, health, the ops statistics,
the stores) is ``mem.admin``'s (:mod:`sdk.admin`); :class:`~sdk.admin.Health` is
re-exported here for one release.
"""

from __future__ import annotations

import atexit
import threading
import uuid
import weakref
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from policies.audit import AuditAction
from policies.business import link_types
from policies.errors import InvalidField
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.outbox import OutboxOp
from policies.scope import UserScope
from policies.ttl import MemoryKind
from policies.validation import (
    MAX_QUERY_BYTES,
    check_json_depth,
    check_session_id,
    check_text,
    check_timestamp,
)
from sandbox.current import current as current_sandbox
from sdk.admin import Admin, Health
from sdk.progress import progress_bar
from sdk.settings import Settings
from sdk.structured import Devices, Facts, Links, Pii, Profiles
from sdk.tracing import span
from sdk.verification import Verifiers
from structured_memory.audit import record, record_erasure
from structured_memory.cross_user.erasure_vacuum import ErasureTrace, erasure_trace
from structured_memory.pii.dev_key_file import development_ring
from structured_memory.pii.keyring import KeyRing
from values.feedback import FeedbackResult
from values.hits import SearchResults
from values.inputs import MemoryInput
from values.records import FragmentRecord
from values.sessions import SessionRecord, TurnsAppended
from values.verification import Verification, Verifier

if TYPE_CHECKING:
    from sdk.memories import Memories
    from sdk.runtime import Runtime
    from sdk.sandboxes import Sandboxes, SandboxSession
    from sdk.session_path import SessionPath
    from unstructured_memory.profile.base import ProfileExtractor
    from values.context import MemoryContext
    from values.sessions import Turn

__all__ = ["Health", "MemoryClient"]


class MemoryClient:
    """Entry point of the SDK; a context manager owning its engine.

    A client that is never closed (a script, a notebook, an exception) is closed when it
    is collected or at interpreter exit, before the embedded server it started stops:
    pending renewals and index deliveries are written while the server still runs.
    """

    def __init__(self, settings: Settings, *, agent_id: str | None = None) -> None:
        self.settings = settings
        self.agent_id = agent_id
        self._runtime: Runtime | None = None
        self._extractor: ProfileExtractor | None = None
        self._lock = threading.Lock()
        self._verifiers = Verifiers(
            timeout_ms=settings.verifier_timeout_ms, max_workers=settings.verifier_max_workers
        )
        self._parent: MemoryClient | None = None
        self._closer: weakref.finalize[[], MemoryClient] | None = None

    def for_agent(self, agent_id: str | None) -> MemoryClient:
        """A client acting for ``agent_id`` that shares this one's engine, index, verifiers
        and extractor (what a service does per request); closing it closes nothing shared.

        Every memory it writes records ``agent_id``, and it sees other agents'
        private memories no more than a client of its own would.
        """
        if agent_id is not None:
            UserScope("probe", agent_id)  # validates the agent id like any scope does
        child = MemoryClient(self.settings, agent_id=agent_id)
        child._verifiers.close()
        child._verifiers = self._verifiers
        child._parent = self
        return child

    @classmethod
    def from_env(cls, *, agent_id: str | None = None, **overrides: Any) -> MemoryClient:
        """A client configured from ``DUALTRACK_*`` variables (plus ``overrides``).

        With no settings at all it uses the embedded PostgreSQL under
        ``.dualtrack/`` and a generated development PII key.
        """
        return cls(Settings.from_env(**overrides), agent_id=agent_id)

    def start(self) -> MemoryClient:
        """Connect (starting the embedded server if needed) and migrate; idempotent."""
        self._rt()
        return self

    def _rt(self) -> Runtime:
        if self._runtime is None and self._parent is not None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = self._parent._rt().rescoped(self.scope)
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    from sdk.runtime import Runtime  # loads jieba, spaCy, numpy: on first use

                    self._runtime = Runtime.build(self.settings, self._key_ring(), self.scope)
                    self._closer = _close_at_exit(self, self._runtime)
        return self._runtime

    def _key_ring(self) -> KeyRing:
        s = self.settings
        if s.pii_keys is not None:
            return KeyRing.parse(s.pii_keys.get_secret_value())
        if s.pii_key_file is not None:
            return KeyRing.load_or_create(s.pii_key_file)
        return development_ring(s.resolved_data_dir())

    def scope(self, user_id: str) -> UserScope:
        """The validated scope for ``user_id``: this client's agent id, and the sandbox of
        the current ``with mem.sandbox(...)`` block when it is this user's and agent's."""
        active = current_sandbox()
        box = None
        if active is not None and (active.user_id, active.agent_id) == (user_id, self.agent_id):
            box = active.sandbox_id
        return UserScope(user_id, self.agent_id, box)

    def sandbox(self, user_id: str, session_id: str) -> SandboxSession:
        """``with mem.sandbox(user_id, session_id) as sb:``: work in the session's sandbox.

        Opens (or resumes) it on entry; ``sb.fork()``, ``sb.merge(ids)``,
        ``sb.discard()``; see :mod:`sdk.sandboxes`.
        """
        from sdk.sandboxes import SandboxSession

        return SandboxSession(self.sandboxes, user_id, session_id)

    @property
    def sandboxes(self) -> Sandboxes:
        """Sandboxes by explicit id: open, fork, merge, discard, history, memories."""
        from sdk.sandboxes import Sandboxes

        rt = self._rt()
        return Sandboxes(
            db=rt.db,
            repo=rt.sandboxes,
            ledger=rt.ledger,
            feed=rt.feed,
            writes=rt.writes,
            scope_for=self.scope,
        )

    @property
    def profiles(self) -> Profiles:
        """Profiles with optimistic locking."""
        return Profiles(self._rt().profiles, self.scope)

    @property
    def devices(self) -> Devices:
        """Devices and their trust."""
        return Devices(self._rt().devices, self.scope)

    @property
    def links(self) -> Links:
        """Business links."""
        return Links(self._rt().links, self.scope)

    @property
    def facts(self) -> Facts:
        """Structured facts with lifecycle policies."""
        return Facts(self._rt().facts, self.scope)

    @property
    def pii(self) -> Pii:
        """The encrypted PII vault."""
        return Pii(self._rt().vault, self.scope)

    @property
    def admin(self) -> Admin:
        """The operator's surface over this client's runtime: sweep, decay, retokenise,
        drain the outbox, health, ops statistics, tokens, rate limits and the stores
        (see :mod:`sdk.admin`)."""
        return Admin(self._rt, self.settings, self._session_path)

    def write(
        self,
        user_id: str,
        text: str,
        *,
        lifecycle_policy: LifecyclePolicy,
        session_id: str | None = None,
        occurred_at: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        kind: MemoryKind = MemoryKind.NOTE,
        private: bool = False,
    ) -> uuid.UUID:
        """Store one memory under a lifecycle policy (required) and return its id.

        PII in ``text`` is masked in the stored text and kept encrypted in the
        vault. ``private`` hides the memory from other agents. Raises
        :class:`UserNotFound` for a user without a profile (create it with
        ``profiles.ensure``), :class:`InvalidInput` subclasses for bad input
        (nothing is written), :class:`StoreUnavailable` subclasses when
        PostgreSQL does not answer.
        """
        item = _input(
            user_id=user_id,
            text=check_text(text),
            lifecycle_policy=lifecycle_policy,
            session_id=session_id,
            occurred_at=occurred_at,
            metadata=metadata,
            kind=kind,
            private=private,
        )
        return self.write_many([item], progress=False)[0]

    def write_many(
        self, items: Iterable[MemoryInput], *, batch_size: int = 256, progress: bool = True
    ) -> list[uuid.UUID]:
        """Store many memories, a transaction per batch, with a progress bar.

        Every item of a batch is validated and analysed before the batch is
        written, so a bad item fails its batch whole (earlier batches stay
        written) and the error's ``details["item"]`` names its position.
        """
        if not isinstance(batch_size, int) or not 1 <= batch_size <= 10_000:
            raise _invalid("batch_size must be an integer in 1..10000", "batch_size")
        if not isinstance(items, Iterable):
            raise _invalid("items must be an iterable of MemoryInput", "items")
        pending = list(items)
        for position, item in enumerate(pending):
            if not isinstance(item, MemoryInput):
                raise _invalid(f"item {position} is not a MemoryInput", "items")
            if item.metadata is not None:
                try:
                    check_json_depth(item.metadata, "metadata")
                except InvalidField as exc:
                    exc.details["item"] = position
                    raise
        policies = {
            i.lifecycle_policy.value
            for i in pending
            if isinstance(i.lifecycle_policy, LifecyclePolicy)
        }
        with (
            span(
                "dualtrack.write",
                agent_id=self.agent_id,
                items=len(pending),
                batch_size=batch_size,
                policies=sorted(policies),
            ),
            progress_bar("writing memories", len(pending), enabled=progress) as advance,
        ):
            return self._rt().writes.write_batches(pending, batch_size=batch_size, advance=advance)

    def search(
        self,
        user_id: str,
        query: str,
        *,
        limit: int = 5,
        alpha: float | None = None,
        preset: str | None = None,
        intents: Iterable[str] | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        session_id: str | None = None,
        verify: bool = False,
    ) -> SearchResults:
        """Hybrid BM25 + vector search of the user's live memories, best first.

        PII in ``query`` is masked before it is embedded or sent to an index;
        a memory that held the same value is still found (blind index).
        ``alpha`` (0 keyword only ... 1 vector only) overrides the preset's.
        With ``verify``, each hit's ``verifications`` hold the live state of the
        business entities it names (see :meth:`verify_links`).
        Raises :class:`InvalidText` for an empty or oversized query and
        :class:`InvalidField` for a bad limit, alpha, preset or filter.
        """
        from sdk.search_path import SearchRequest

        rt = self._rt()
        request = SearchRequest(
            user_id=user_id,
            query=check_text(query, field="query", max_bytes=MAX_QUERY_BYTES),
            limit=limit,
            alpha=alpha,
            preset=preset,
            intents=intents,
            occurred_after=occurred_after,
            occurred_before=occurred_before,
            session_id=session_id,
            verify=verify,
        )
        with span("dualtrack.search", agent_id=self.agent_id):
            return rt.searches.search(
                request,
                verify_hits=lambda scope, hits: self._verifiers.verify_hits(scope, rt.links, hits),
            )

    def register_verifier(self, entity_type: str, fn: Verifier) -> None:
        """Ask ``fn(entity_type, entity_id)`` for the live state of links of ``entity_type``.

        ``fn`` returns a :class:`BusinessState`, or ``None`` when its system of
        record does not know the entity; it runs in this process only, in a
        pool of ``verifier_max_workers`` threads. Registering again replaces
        it. Raises :class:`InvalidField` for an unknown link type.
        """
        self._verifiers.register(entity_type, fn)

    def verify_links(
        self, user_id: str, *, entity_types: Iterable[str] | None = None
    ) -> list[Verification]:
        """The live state of each entity the user is linked to now (of ``entity_types``).

        All verifiers are asked at once; each answer is recorded on the links
        (a changed state refreshes them and goes to the audit log). An entity
        whose verifier raised, timed out (``verifier_timeout_ms``) or is not
        registered is ``unverified``, never served with its stored state as
        current. Raises :class:`UserNotFound` for an unknown user.
        """
        rt = self._rt()
        scope = self.scope(user_id)
        wanted = link_types(entity_types)
        links = [
            link
            for link in rt.links.valid_at(scope)
            if wanted is None or link.entity_type in wanted
        ]
        if not links:
            rt.profiles.get(scope)  # UserNotFound for an unknown user
        return self._verifiers.verify(scope, rt.links, links)

    def build_context(
        self, user_id: str, query: str, max_tokens: int = 600, *, records: int = 5
    ) -> MemoryContext:
        """The long-term memory block for the prompt, cut to ``max_tokens``.

        The profile always; then the user's facts, business items with their
        verified state, the ``records`` memories most relevant to ``query``
        (within the current sandbox, if any), and pending memories as questions.
        See :mod:`sdk.context`. Raises :class:`UserNotFound` for an unknown user
        and :class:`InvalidField` for a budget too small for the header.
        """
        from sdk.context import assemble

        rt = self._rt()
        scope = self.scope(user_id)
        profile = rt.profiles.get(scope)
        hits = self.search(user_id, query, limit=records)
        return assemble(
            profile,
            rt.facts.list(scope),
            self.verify_links(user_id),
            hits,
            reveal=lambda entry: rt.vault.reveal(scope, entry),
            max_tokens=max_tokens,
            degraded=hits.degraded,
        )

    def end_session(
        self, user_id: str, session_id: str, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """End the session; returns only once its record and profile update are durable.

        The session's turns not processed yet (kept by ``append_turns``) and the
        new ones of ``transcript`` (the whole session, or what followed the turns
        already given) become, in one transaction: an interaction record (rules +
        NER, every identifier said and the outcome the agent gave; IMPLICIT, kept
        90 days; PII vaulted and masked), temporary intents as IMPLICIT notes, the
        profile merge (``policies.profile_merge``) and the business links of the
        ids named. Called again with nothing new, it writes nothing and returns
        the last record. Raises :class:`UserNotFound` for an unknown user,
        :class:`InvalidText` when the session has no user text at all.
        """
        # a session's end writes long-term memory even inside a sandbox block: the
        # transcript given (after a fork, only what followed it) is what persists
        scope = self.scope(user_id).in_sandbox(None)
        session = check_session_id(session_id)
        turns = _turns(transcript, "transcript")
        with span("dualtrack.end_session", agent_id=self.agent_id, turns=len(turns)):
            return self._session_path().end(scope, session, turns)

    def append_turns(self, user_id: str, session_id: str, turns: Sequence[Turn]) -> TurnsAppended:
        """Keep a long session's new turns (IMPLICIT fragments of the session, searchable).

        Once ``settings.session_extract_every_turns`` turns are unprocessed, they are
        summarised into a record and merged into the profile as ``end_session``
        does, without ending the session (``.record``). A session without a new
        turn for ``settings.session_idle_minutes`` is ended by :meth:`sweep`. No
        turn is processed twice (a watermark per session).
        """
        scope = self.scope(user_id).in_sandbox(None)  # like end_session: long-term
        session = check_session_id(session_id)
        return self._session_path().append(scope, session, _turns(turns, "turns"))

    def _profile_extractor(self) -> ProfileExtractor:
        """The extractor of profile lines (shared with the parent of a :meth:`for_agent`)."""
        if self._parent is not None:
            return self._parent._profile_extractor()
        with self._lock:
            if self._extractor is None:
                from unstructured_memory.profile.registry import create_extractor

                s = self.settings
                self._extractor = create_extractor(s.profile_extractor, s.profile_extractor_config)
            return self._extractor

    def _session_path(self) -> SessionPath:
        from sdk.session_path import SessionConfig, SessionPath
        from structured_memory.repositories.learned_profile import LearnedProfileRepository
        from structured_memory.repositories.session import SessionRepository

        rt = self._rt()
        s = self.settings
        return SessionPath(
            db=rt.db,
            writes=rt.writes,
            sessions=SessionRepository(rt.db),
            learned=LearnedProfileRepository(rt.vault),
            links=rt.links,
            facts=rt.facts,
            extractor=self._profile_extractor(),
            config=SessionConfig(
                idle=timedelta(minutes=s.session_idle_minutes),
                every_turns=s.session_extract_every_turns,
                confirmations=s.preference_confirmations,
            ),
        )

    def feedback(self, user_id: str, memory_id: uuid.UUID | str, *, action: str) -> FeedbackResult:
        """Report a behaviour event on any memory of the user, fragment or fact, by id.

        ``action`` is ``click``, ``skip``, ``confirm``, ``reject`` or ``ignore``
        (weights in ``settings.confidence``): ``new = old * 0.95 + weight * 0.05``;
        below 0.3 the memory becomes ``pending_confirmation``, a confirm restores
        it to ``active`` at 0.6 or more, a reject retires it (no read returns it
        again). Audited. Raises :class:`InvalidField` for an unknown action or a
        malformed id, :class:`RecordNotFound` if no visible, live memory of the
        user has that id.
        """
        from sdk.feedback import give_feedback

        rt = self._rt()
        return give_feedback(
            rt.db,
            rt.feed,
            self.scope(user_id),
            memory_id,
            action=action,
            config=self.settings.confidence,
        )

    @property
    def memories(self) -> Memories:
        """Unstructured memories: ``get``, ``list`` and ``delete``."""
        return self._rt().memories

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything stored about the user, as JSON-ready data (PII decrypted for the user).

        The export is recorded in the audit log (counts only). Raises
        :class:`UserNotFound` if the user has no profile.
        """
        rt = self._rt()
        scope = self.scope(user_id)
        profile = rt.profiles.get(scope)
        memories: list[FragmentRecord] = []
        while batch := rt.memories.list(user_id, limit=1000, offset=len(memories)):
            memories += batch
        from structured_memory.repositories.learned_profile import LearnedProfileRepository

        with rt.db.transaction() as conn:
            learned = LearnedProfileRepository(rt.vault).load(conn, scope)
        exported = {
            "user_id": scope.user_id,
            "exported_at": datetime.now(UTC).isoformat(),
            "profile": {
                **profile.model_dump(mode="json"),
                "candidates": [  # preferences said, not yet confirmed (profile_candidate)
                    {
                        "slot": c.slot,
                        "value": c.value,
                        "sessions": list(c.sessions),
                        "first_seen": c.first_seen.isoformat(),
                        "last_seen": c.last_seen.isoformat(),
                    }
                    for c in learned.candidates.values()
                ],
            },
            "devices": [d.model_dump(mode="json") for d in rt.devices.list(scope)],
            "links": [link.model_dump(mode="json") for link in rt.links.list(scope)],
            "facts": [f.model_dump(mode="json") for f in rt.facts.list(scope)],
            "pii": [
                {"id": str(ref.id), "kind": ref.kind, "value": value}
                for ref, value in rt.vault.reveal_all(scope)
            ],
            "memories": [m.model_dump(mode="json") for m in memories],
        }
        counts = {k: len(v) for k, v in exported.items() if isinstance(v, list)}
        with rt.db.transaction() as conn:
            record(conn, scope, AuditAction.EXPORT, details=counts)
        return exported

    def forget_user(self, user_id: str) -> bool:
        """Erase everything stored about the user, in one transaction.

        The same transaction queues the removal of the user's data from a
        derived index, which the outbox worker applies, and records the erasure
        in the audit log under the user's pseudonym before its key is destroyed
        with the user: the log keeps pseudonymous entries only. A deadlock with
        a concurrent call (the cascade locks the user's rows) is retried. Once
        committed, the tables it touched are vacuumed, so their files keep no
        tuple of the user; this returns after that vacuum, at most
        ``erasure_vacuum_timeout_s`` later (a vacuum that fails is logged and
        left to the sweep: see :mod:`structured_memory.cross_user.erasure_vacuum`).
        """
        rt = self._rt()
        scope = self.scope(user_id)

        def unit() -> tuple[bool, ErasureTrace]:
            with rt.db.transaction() as conn:
                record_erasure(conn, scope)
                existed = rt.profiles.delete_user(scope, join=conn)
                rt.feed.enqueue(conn, [(OutboxOp.DROP_USER, scope.user_id, None)])
                trace = erasure_trace(conn)
            return existed, trace

        existed, trace = rt.db.retrying(unit)
        rt.feed.wake()
        if existed:
            rt.erasure_vacuum.after(trace)
        return existed

    def close(self) -> None:
        """Stop the outbox thread, close the index client, release the engine's connections.

        A client from :meth:`for_agent` only forgets its view: the stores are its parent's.
        """
        if self._parent is not None:
            self._runtime = None
            return
        self._verifiers.close()
        with self._lock:
            if self._extractor is not None:
                self._extractor.close()
                self._extractor = None
            if self._closer is not None:
                atexit.unregister(self._closer)
                self._closer()  # closes the runtime, once
                self._closer = None
            self._runtime = None

    def __enter__(self) -> MemoryClient:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _close_at_exit(client: MemoryClient, runtime: Runtime) -> weakref.finalize[[], MemoryClient]:
    """Close ``runtime`` when ``client`` is collected, or at exit before the embedded server
    stops: exit handlers run last registered first, and the server's were registered when
    the runtime started it (a ``weakref.finalize`` alone runs at exit in the order of the
    process's first finalizer, which may be after the server's stop)."""
    closer = weakref.finalize(client, runtime.close)
    atexit.register(closer)
    return closer


def _invalid(message: str, field: str) -> InvalidField:
    return InvalidField(message, field=field)


def _turns(turns: object, field: str) -> list[Turn]:
    """``turns`` as a list of :class:`Turn` with valid times (a naive time read as UTC) and
    texts (:func:`check_text`, empty allowed: empty turns are skipped), checked before
    anything is stored or digested."""
    from values.sessions import Turn

    if isinstance(turns, str | bytes) or not isinstance(turns, Iterable):
        raise _invalid(f"{field} must be a sequence of Turn", field)
    out = list(turns)
    if not all(isinstance(t, Turn) for t in out):
        raise _invalid(f"{field} must be a sequence of Turn", field)
    for position, turn in enumerate(out):
        when = turn.time
        if isinstance(when, datetime) and when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        check_timestamp(when, f"{field}[{position}].time")
        check_text(turn.text, field=f"{field}[{position}].text", allow_empty=True)
    return out


def _input(**fields: Any) -> MemoryInput:
    """A ``MemoryInput`` from keyword arguments; a wrong type is :class:`InvalidField`."""
    require_policy(fields["lifecycle_policy"])
    try:
        return MemoryInput(**fields)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        where = str(loc[0]) if loc else "input"  # the field only: keys below may be PII
        raise _invalid(f"{where} has the wrong type or value", where) from None
