"""Session end: the interaction record and the profile update, durable together.

Three triggers process a session's turns, each turn once:

- ``end_session(user, session, transcript)``: an explicit end;
- ``append_turns(user, session, turns)``: turns kept as they come (IMPLICIT
  fragments of the session); once ``session_extract_every_turns`` of them are
  unprocessed, they are processed at once (a long session gets a record every
  N turns);
- the idle sweep (``mem.admin.sweep``): a session without a new fragment
  for ``session_idle_minutes`` is ended.

Processing the turns after the session's watermark is one transaction: the
record (rules + NER summary, or the chat extractor's sentence; IMPLICIT, kept
90 days; PII vaulted and masked), the temporary intents as IMPLICIT notes of
the session (7 days), the profile merge (``policies.profile_merge``: facts
newest first, preferences after repeated confirmation, direct instructions at
once, audited as ``profile_update``), the user's instructions that no profile
field holds as explicit facts (and those they withdrew deleted), the business
links of the ids named (orders, refunds, returns, exchanges, tickets, work
orders; ``BUSINESS``, for their verifiers), the amendments a correction makes
to what earlier sessions stored (a wrong id's link ended, the records naming
it rewritten with the right one), and the watermark. Either all of it is
stored or none: a crash or an error leaves the watermark where it was, and the
next trigger processes the same turns again. Extraction (which may call a chat
model) runs before the transaction, and a watermark that moved meanwhile makes
the work start over from the new one (bounded), so two triggers never both
record the same turns.

The transcript given to ``end_session`` is either the whole session (its first
turns those the session already knows: recognised by a digest of their masked
text) or what follows them; turns are counted without empty ones.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Final, cast

from sqlalchemy import Connection

from policies.births import ENDS_PREGNANCY, PREGNANCY
from policies.business import ENTITY_LINK_TYPES
from policies.errors import (
    ConcurrentModificationError,
    DualtrackError,
    InvalidField,
    InvalidText,
    UserNotFound,
)
from policies.lifecycle import LifecyclePolicy
from policies.pii import check_pii_values, find_pii, mask_pii
from policies.profile_merge import ChangeKind, Merged, Observation, ObservationKind
from policies.scope import UserScope
from policies.superseded import marker_for
from sdk.context import replaced, unsaid
from sdk.tracing import annotate, span
from sdk.write_path import WritePath
from structured_memory.cross_user import idle_sessions
from structured_memory.database import Database
from structured_memory.repositories.business_link import BusinessLinkRepository
from structured_memory.repositories.facts import FactRepository
from structured_memory.repositories.fragments import NewFragment
from structured_memory.repositories.learned_profile import LearnedProfileRepository
from structured_memory.repositories.session import (
    TURN_SOURCE,
    EndedBy,
    SessionMark,
    SessionRepository,
    StoredTurn,
    chain_digest,
)
from unstructured_memory.profile.base import Extraction, ProfileExtractor
from unstructured_memory.profile.revoked import voided
from unstructured_memory.summariser.acts import Utterance, ids_after_error, mistyped
from unstructured_memory.summariser.replanned import REFERS_BACK, changes_plan
from unstructured_memory.summariser.summary import (
    summarise,
    taken_back,
    withdrawn_heads,
)
from unstructured_memory.summariser.topics import NOTE, TOPICS, Topic
from values.inputs import MemoryInput
from values.sessions import ROLES, Role, SessionRecord, SessionSummary, Turn, TurnsAppended

__all__ = ["MAX_APPEND_TURNS", "SessionConfig", "SessionPath"]

_log = logging.getLogger(__name__)

MAX_APPEND_TURNS: Final = 1000
"""Most turns one ``append_turns`` call takes."""

_TOPICS: Final = {t.key: t for t in TOPICS if not t.context}
"""The topics an instruction names, whose older statements a change makes stale."""

_ONE_VALUE: Final = {t.key: t for t in TOPICS if t.key in ("city", "vehicle", "occupation")}
"""Facts about the user that hold one value at a time: news of one replaces an agent's."""


def _replaces(key: str, former: str, now: str) -> bool:
    """Whether ``now`` (the user's news on fact topic ``key``) replaces ``former`` (an
    agent's value of it): it affirms none of the words naming ``former``
    (:func:`~sdk.context.replaced`: 丰田卡罗拉 by 卡罗拉 too, 杭州滨江 by 杭州)."""
    named, _ = replaced([(key, "", [former])])
    left, _ = replaced([(key, now, [former])])
    return bool(named) and set(left) == set(named)


_ATTEMPTS: Final = 5
"""How often processing starts over when the watermark moved under it."""


@dataclass(frozen=True)
class SessionConfig:
    """When sessions are processed, and how preferences are confirmed."""

    idle: timedelta
    every_turns: int
    confirmations: int


def _check_session(session_id: str) -> None:
    if not session_id.strip():
        raise InvalidText("session_id is empty", field="session_id")


def _masked(turns: Sequence[Turn]) -> list[tuple[str, str]]:
    return [(t.role, mask_pii(t.text)[0]) for t in turns]


def _kept(turns: Sequence[Turn], field: str) -> list[Turn]:
    """The non-empty turns; :class:`InvalidText` if together they name more than
    ``MAX_PII_VALUES`` distinct personal values (each is vaulted)."""
    kept = [t for t in turns if t.text.strip()]
    check_pii_values((m for t in kept for m in find_pii(t.text)), field)
    return kept


def _has_user_text(turns: Sequence[Turn]) -> bool:
    return any(t.role == "user" and t.text.strip() for t in turns)


_SET: Final = frozenset({ChangeKind.FACT_SET, ChangeKind.PREFERENCE_SET})
"""Merge changes that give a slot a new value (the old one kept as :attr:`Stable.formerly`)."""


class SessionPath:
    """Runs the triggers above for ``MemoryClient``."""

    def __init__(
        self,
        *,
        db: Database,
        writes: WritePath,
        sessions: SessionRepository,
        learned: LearnedProfileRepository,
        links: BusinessLinkRepository,
        facts: FactRepository,
        extractor: ProfileExtractor,
        config: SessionConfig,
    ) -> None:
        self._db = db
        self._writes = writes
        self._sessions = sessions
        self._learned = learned
        self._links = links
        self._facts = facts
        self._extractor = extractor
        self._config = config

    # -- triggers ----------------------------------------------------------------------------

    def end(self, scope: UserScope, session_id: str, transcript: Sequence[Turn]) -> SessionRecord:
        """End the session: process its unprocessed turns and those of ``transcript`` that
        are new; returns the record written (or, when nothing was new, the last one).

        Raises :class:`InvalidText` when the session has no user text to record at all.
        """
        _check_session(session_id)
        turns = _kept(transcript, "transcript")
        for attempt in range(1, _ATTEMPTS + 1):
            seen = self._sessions.get(scope, session_id)
            known = seen.turns if len(turns) >= seen.turns > 0 else 0
            if known and chain_digest("", _masked(turns[:known])) != seen.digest:
                known = 0  # not the session's first turns: what follows them
            try:
                record = self._process(
                    scope, session_id, seen, turns[known:], EndedBy.EXPLICIT, transcript=turns
                )
            except ConcurrentModificationError as exc:
                if not exc.details.get("session_moved") or attempt == _ATTEMPTS:
                    raise
                continue
            assert record is not None  # an explicit end records, or raises
            return record
        raise AssertionError("unreachable")

    def append(self, scope: UserScope, session_id: str, turns: Sequence[Turn]) -> TurnsAppended:
        """Keep ``turns`` as IMPLICIT fragments of the session; process the unprocessed ones
        once ``every_turns`` of them have gathered.

        The turns are stored first, in a transaction of their own. Processing that
        fails then (the database, another trigger winning every race) is logged by
        error code and leaves the turns unprocessed for the next trigger; the kept
        turns are returned all the same, so a caller never sends them twice.
        """
        _check_session(session_id)
        kept = _kept(turns, "turns")
        if len(kept) > MAX_APPEND_TURNS:
            raise InvalidField(f"at most {MAX_APPEND_TURNS} turns per call", field="turns")
        ids: list[uuid.UUID] = []
        if kept:
            masked = _masked(kept)

            def number(conn: Connection, fragments: list[NewFragment]) -> list[NewFragment]:
                before = self._sessions.append(conn, scope, session_id, masked)
                return [
                    replace(f, metadata={**f.metadata, "turn": before.turns + i})
                    for i, f in enumerate(fragments)
                ]

            items = [
                MemoryInput(
                    user_id=scope.user_id,
                    text=t.text,
                    lifecycle_policy=LifecyclePolicy.IMPLICIT,
                    session_id=session_id,
                    occurred_at=t.time.replace(tzinfo=UTC)
                    if t.time is not None and t.time.tzinfo is None
                    else t.time,
                    metadata={"source": TURN_SOURCE, "role": t.role},
                )
                for t in kept
            ]
            ids = self._writes.write_batches(
                items, batch_size=len(items), advance=lambda _: None, within=number
            )
        record = None
        for _ in range(_ATTEMPTS):
            try:
                seen = self._sessions.get(scope, session_id)
                if seen.turns - seen.processed >= self._config.every_turns:
                    record = self._process(scope, session_id, seen, [], None)
                break
            except ConcurrentModificationError as exc:
                if not exc.details.get("session_moved"):
                    _log.warning("appended turns left for the next trigger: %s", exc.code)
                    break
            except DualtrackError as exc:
                _log.warning("appended turns left for the next trigger: %s", exc.code)
                break
        return TurnsAppended(ids, record)

    def sweep_idle(self, now: datetime) -> int:
        """End every session idle since ``now - idle``; returns how many were ended.

        A session that fails (its user erased meanwhile, a store error) is left for
        the next sweep and logged by error code; one that moved on meanwhile is skipped.
        """
        ended = 0
        for idle in idle_sessions(self._db, now - self._config.idle):
            scope = UserScope(idle.user_id, idle.agent_id)
            try:
                seen = self._sessions.get(scope, idle.session_id)
                if seen.ended_at is None:
                    self._process(scope, idle.session_id, seen, [], EndedBy.IDLE)
                    ended += 1
            except ConcurrentModificationError:
                continue  # new turns arrived: no longer idle
            except UserNotFound:
                continue  # erased meanwhile
            except DualtrackError as exc:
                _log.warning("idle session left for the next sweep: %s", exc.code)
        return ended

    # -- the work ----------------------------------------------------------------------------

    def _process(
        self,
        scope: UserScope,
        session_id: str,
        seen: SessionMark,
        new: list[Turn],
        end: EndedBy | None,
        *,
        transcript: Sequence[Turn] = (),
    ) -> SessionRecord | None:
        """Record the turns after the watermark (stored ones, then ``new``) and merge the
        profile, in one transaction.

        Without user text in them there is no record: the watermark still moves
        and ``end`` still ends the session; an explicit end then returns the last
        record (:meth:`_last_record`, checked before anything is written), others
        ``None``.
        """
        stored = self._sessions.stored_turns(scope, session_id, seen.processed, seen.turns)
        turns = [*_as_turns(stored), *new]
        digest = chain_digest(seen.digest, _masked(new))
        total = seen.turns + len(new)

        def advance(conn: Connection, record_id: uuid.UUID | None) -> None:
            self._sessions.advance(
                conn,
                scope,
                session_id,
                seen=seen.position,
                turns=total,
                digest=digest,
                record_id=record_id,
                ended_by=end,
            )

        if not _has_user_text(turns):
            last = None
            if end is EndedBy.EXPLICIT:
                last = self._last_record(scope, session_id, seen, transcript)
            if total != seen.turns or end is not None:
                with self._db.transaction() as conn:
                    advance(conn, None)
            return last
        with span("summarise", turns=len(turns)):
            summary = summarise(scope.user_id, session_id, turns)
        with span("extract"):
            extraction = self._extractor.extract(turns, summary)
            annotate(extractor=extraction.source, fallback=bool(extraction.fallback))
        if extraction.record_text:
            summary = replace(summary, summary_text=extraction.record_text)
        observations = [*extraction.observations, *_stored_addresses(stored, session_id)]
        corrected, slipped = self._corrected(scope, turns, summary)
        withdrawn = taken_back(summary.dialogue)
        named_ids = sorted({e.text for e in summary.entities if e.type in ENTITY_LINK_TYPES})[:1]
        notes = [o.value for o in observations if o.kind is ObservationKind.TEMPORARY]
        user_text = "\n".join(t.text for t in turns if t.role == "user")
        subjects = [(e.type, e.text) for e in summary.entities]
        keys = {
            (ENTITY_LINK_TYPES[e.type], e.text)
            for e in summary.entities
            if e.type in ENTITY_LINK_TYPES
        } | slipped

        def within(conn: Connection, fragments: list[NewFragment]) -> list[NewFragment]:
            advance(conn, fragments[0].id)
            merged = self._learned.merge(
                conn, scope, observations, confirmations=self._config.confirmations
            )
            self._instruct(conn, scope, extraction)
            self._unsay_replaced(conn, scope, merged, {i.key for i in extraction.instructions})
            if changes_plan(user_text):  # a plan of an earlier session changed: its values
                self._writes.replan(
                    conn,
                    scope,
                    summary.summary_text,
                    subjects,
                    written=fragments[0].id,
                    referred=REFERS_BACK.search(user_text) is not None,
                )
            # values said wrong, in earlier sessions too: their links end
            self._links.add_missing(
                conn, scope, sorted(keys), then_end={wrong for wrong, _ in corrected}
            )
            if corrected:
                self._writes.amend(conn, scope, corrected)
            if withdrawn:  # a request of an earlier session taken back: the record on it
                self._writes.forget_detail(
                    conn,
                    scope,
                    named_ids,
                    withdrawn,
                    written=fragments[0].id,
                    subjects=subjects,
                    said=user_text,
                    heads=withdrawn_heads(summary.dialogue),
                )
            return fragments

        memory_id = self._writes.write_record(
            scope,
            summary,
            len(turns),
            metadata={
                "session_turns": [seen.processed, total],
                "outcomes": [o.value for o in summary.outcomes],
                "extractor": extraction.source,
                **({"fallback": extraction.fallback} if extraction.fallback else {}),
                "ended_by": end.value if end is not None else None,
            },
            notes=notes,
            within=within,
        )
        return SessionRecord(memory_id=memory_id, summary=summary)

    def _instruct(self, conn: Connection, scope: UserScope, extraction: Extraction) -> None:
        """The session's instructions set as explicit facts and the topics it took back
        deleted; earlier records stating an instruction changed since are restated."""
        restated: dict[str, Topic] = {}  # what earlier records may state otherwise
        olds: list[str] = []
        for key in extraction.withdrawn:
            former = self._facts.delete_within(conn, scope, key)
            if key in _TOPICS:  # a one-off or a note of it goes too
                restated[key] = _TOPICS[key]
                olds += [] if former is None else [str(former.value)]
        for key in self._voided(conn, scope, extraction):
            former = self._facts.delete_within(conn, scope, key)
            restated[key if key in _TOPICS else NOTE.key] = _TOPICS.get(key, NOTE)
            olds += [] if former is None else [str(former.value)]
        for instruction in extraction.instructions:
            former = self._facts.replace_within(
                conn,
                scope,
                instruction.key,
                instruction.text,
                lifecycle_policy=LifecyclePolicy.EXPLICIT,
                source="session",
            )
            if instruction.key in _TOPICS and (former is None or former.value != instruction.text):
                restated[instruction.key] = _TOPICS[instruction.key]
                olds += [] if former is None else [str(former.value)]
        olds += self._others_of(conn, scope, extraction, restated)
        if restated:
            news = [i.text for i in extraction.instructions]
            self._writes.restate(conn, scope, list(restated.values()), olds, news)

    def _others_of(
        self,
        conn: Connection,
        scope: UserScope,
        extraction: Extraction,
        restated: dict[str, Topic],
    ) -> list[str]:
        """The values of the facts stored under another key naming the topic of one of the
        session's instructions (an agent's ``delivery_dropoff`` when the user now says where
        to leave parcels: :meth:`Topic.keys`), deleted: the instruction is the newest word.
        So is the user's news of a fact that has one value (the car they drive, the city
        they live in, their work: :data:`_ONE_VALUE`) against an agent's fact on it naming
        none of what the news says (``vehicle: 丰田卡罗拉`` when the user now drives a 极氪),
        and a birth against an agent's fact stating the pregnancy; the learned slot keeps the
        news."""
        topics = [_TOPICS[i.key] for i in extraction.instructions if i.key in _TOPICS]
        news = {
            o.key: o.value
            for o in extraction.observations
            if o.kind is ObservationKind.FACT and o.key in _ONE_VALUE
        }
        born = any(o.replaces == ENDS_PREGNANCY for o in extraction.observations)
        if not topics and not news and not born:
            return []
        olds: list[str] = []
        for fact in self._facts.live_within(conn, scope):
            if not isinstance(fact.value, str):
                continue
            topic = next((t for t in topics if t.key != fact.key and t.keys(fact.key)), None)
            if topic is not None:
                self._facts.delete_within(conn, scope, fact.key)
                restated[topic.key] = topic
                olds.append(fact.value)
            elif fact.source != "session" and (
                any(
                    _ONE_VALUE[key].keys(fact.key) and _replaces(key, fact.value, now)
                    for key, now in news.items()
                )
                or (born and PREGNANCY.search(fact.value) is not None)  # 孕28周: a baby now
            ):
                self._facts.delete_within(conn, scope, fact.key)
        return olds

    def _voided(self, conn: Connection, scope: UserScope, extraction: Extraction) -> list[str]:
        """The keys of the instructions and notes of earlier sessions the user voided
        (:attr:`Extraction.revoked`, :func:`~unstructured_memory.profile.revoked.voided`);
        never one this session writes."""
        if not extraction.revoked:
            return []
        written = {i.key for i in extraction.instructions}
        held = [
            (f.key, f.value)
            for f in self._facts.live_within(conn, scope)
            if f.source == "session" and isinstance(f.value, str) and f.key not in written
        ]
        return voided(extraction.revoked, held)

    def _unsay_replaced(
        self, conn: Connection, scope: UserScope, merged: Merged, written: set[str]
    ) -> None:
        """The user's notes of earlier sessions that name a value this merge replaced (a
        city moved from, a channel switched from: :func:`~sdk.context.replaced`) show it as
        replaced, the rest of their words kept (物流有动静[已更新]通知我就行); the notes this
        session wrote (``written``) say what holds now."""
        changed = {c.slot for c in merged.changes if c.kind in _SET}
        state = merged.state
        words, channels = replaced(
            (slot, stable.value, stable.formerly)
            for part in (state.facts, state.preferences)
            for slot, stable in part.items()
            if slot in changed
        )
        if not words and not channels:
            return
        for fact in self._facts.live_within(conn, scope):
            if fact.key in written or fact.source != "session" or not isinstance(fact.value, str):
                continue
            shown = unsaid(fact.value, words, channels, marker_for(fact.value))
            if shown != fact.value:
                self._facts.replace_within(
                    conn,
                    scope,
                    fact.key,
                    shown,
                    lifecycle_policy=LifecyclePolicy(fact.policy),
                    source="session",
                )

    def _corrected(
        self, scope: UserScope, turns: Sequence[Turn], summary: SessionSummary
    ) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
        """``(wrong, right)`` of the session's corrections, and of each id the user gave
        after a word of error with nothing of this session to put right and the id linked
        now (of its type, if it has one) it is a slip of: an earlier session's
        (``昨天那个单号我看串了，应该是 7719534`` after 7719354); with the links those ids
        call for, ``(type, right)``."""
        pairs = summary.dialogue.pairs([turns[i].text for i in summary.turn_index])
        utterances = [
            Utterance(turns[i].role, turns[i].text, ents)
            for i, ents in zip(summary.turn_index, summary.turn_entities, strict=False)
        ]
        said = ids_after_error(utterances, summary.dialogue)
        linked = self._links.valid_at(scope) if said else []
        here = {e.text for e in summary.entities} | {r for _, r in said}
        slips = [
            (link.entity_type, link.entity_id, right)
            for label, right in said
            for link in linked
            if link.entity_type == ENTITY_LINK_TYPES.get(label, link.entity_type)
            and link.entity_id not in here  # said in this session too: no slip of it
            and mistyped(link.entity_id, right)
        ]
        return pairs + [(w, r) for _, w, r in slips], {(t, r) for t, _, r in slips}

    def _last_record(
        self, scope: UserScope, session_id: str, seen: SessionMark, transcript: Sequence[Turn]
    ) -> SessionRecord:
        """Nothing new to record: the session's last record, with a summary of its turns
        (the ones kept, else ``transcript``), not stored again; :class:`InvalidText` when
        the session has no record."""
        if seen.last_record_id is None:
            summarise(scope.user_id, session_id, transcript)  # raises for a bad transcript
            raise InvalidText("the session has nothing to record", field="transcript")
        turns = _as_turns(self._sessions.stored_turns(scope, session_id, 0, seen.turns))
        if not _has_user_text(turns):
            turns = list(transcript)
        if not _has_user_text(turns):
            raise InvalidText("nothing new to record in this session", field="transcript")
        return SessionRecord(
            memory_id=seen.last_record_id, summary=summarise(scope.user_id, session_id, turns)
        )


def _as_turns(stored: Sequence[StoredTurn]) -> list[Turn]:
    return [Turn(cast(Role, s.role), s.text, s.occurred_at) for s in stored if s.role in ROLES]


def _stored_addresses(stored: Sequence[StoredTurn], session_id: str) -> list[Observation]:
    """Address facts of the user's stored turns: masked, with the vault id of the value."""
    return [
        Observation(
            ObservationKind.FACT,
            "address",
            masked,
            session_id,
            s.occurred_at if s.occurred_at.tzinfo else s.occurred_at.replace(tzinfo=UTC),
            ref=f"address:{vault_id}",
        )
        for s in stored
        if s.role == "user"
        for masked, vault_id in s.addresses
    ]
