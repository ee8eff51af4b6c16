"""Business verification: the live state of a user's orders, refunds, returns and tickets.

A business link mirrors a system of record, so what is stored about it is a
lead, not an answer. A caller registers a :class:`Verifier` per link type
(``mem.register_verifier("refund", fn)``, in-process only); before business
items are served (``mem.verify_links``, ``mem.search(..., verify=True)``) each
entity the user is linked to is asked for its live state:

- ``verified``: the system of record reported a state, the same as the one
  stored (or the first one);
- ``changed``: it reported another state; the link is refreshed and the
  change is written to the audit log;
- ``unknown``: the verifier returned ``None`` (the system of record does not
  know the entity);
- ``unverified``: no answer: the verifier raised, timed out, is not
  registered, or the entity is not linked to the user (it is then never
  asked). :attr:`Verification.error` says which, as a typed error.

Only ``verified`` and ``changed`` carry a :attr:`Verification.state`; the
stored state stays in :attr:`Verification.previous_state`, so a stale value is
never presented as current. Verifiers run concurrently in a pool of
``verifier_max_workers`` threads, and a round waits at most
``verifier_timeout_ms`` for all of them together: whatever has not answered by
then (running or still queued) is ``unverified``, and its late answer is
dropped. A verifier that never returns keeps its pool thread (and holds up
the interpreter's exit, which joins pool threads); give verifiers their own
client timeouts.

The values (:class:`BusinessState`, :class:`Verification`, :class:`VerificationStatus`,
:class:`Verifier`, the verifier errors) are ``values.verification``'s, and
``ENTITY_LINK_TYPES`` and ``link_types`` ``policies.business``'s; all are
re-exported here for one release.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from policies.business import ENTITY_LINK_TYPES, BusinessEntityType, link_types
from policies.errors import DualtrackError, InvalidField, RecordNotFound
from policies.pii import mask_pii
from policies.scope import UserScope
from policies.validation import check_choice
from structured_memory.repositories.business_link import (
    BusinessLinkRepository,
    PriorState,
    StateCheck,
)
from values.records import BusinessLink
from values.verification import (
    MAX_STATE_CHARS,
    BusinessState,
    Verification,
    VerificationStatus,
    Verifier,
    VerifierMissing,
    VerifierTimeout,
    VerifierUnavailable,
)

if TYPE_CHECKING:
    from values.hits import SearchResults

__all__ = [
    "ENTITY_LINK_TYPES",
    "BusinessState",
    "Verification",
    "VerificationStatus",
    "Verifier",
    "VerifierMissing",
    "VerifierTimeout",
    "VerifierUnavailable",
    "Verifiers",
    "link_types",
]

_log = logging.getLogger(__name__)

_Key = tuple[str, str]
_Answer = BusinessState | None | DualtrackError


class Verifiers:
    """The registered verifiers and the bounded pool that calls them (one per client)."""

    def __init__(self, *, timeout_ms: int, max_workers: int) -> None:
        self._fns: dict[str, Verifier] = {}
        self._timeout_s = timeout_ms / 1000
        self._max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def register(self, entity_type: str, fn: Verifier) -> None:
        """Use ``fn`` for links of ``entity_type`` from now on (replacing any before)."""
        kind = check_choice(BusinessEntityType, entity_type, "entity_type")
        if not callable(fn):
            raise InvalidField("a verifier must be callable", field="fn")
        with self._lock:
            self._fns[kind] = fn

    def verify(
        self, scope: UserScope, repo: BusinessLinkRepository, links: Iterable[BusinessLink]
    ) -> list[Verification]:
        """Verify the entities of ``links`` (the scope's own), record the outcomes on
        them, and return one :class:`Verification` per entity, in link order."""
        by_key: dict[_Key, list[BusinessLink]] = {}
        for link in links:
            by_key.setdefault((link.entity_type, link.entity_id), []).append(link)
        answers = self._ask(list(by_key))
        at = datetime.now(UTC)
        checks = [
            StateCheck(
                entity_type=key[0],
                entity_id=key[1],
                link_ids=tuple(link.id for link in by_key[key]),
                state=answer.state if isinstance(answer, BusinessState) else None,
                outcome=_outcome(answer),
            )
            for key, answer in answers.items()
            if not isinstance(answer, VerifierMissing)
        ]
        prior = repo.record_checks(scope, checks, at)
        return [
            _verification(key, answers[key], prior.get(key) or _prior(found), at)
            for key, found in by_key.items()
        ]

    def verify_hits(
        self, scope: UserScope, repo: BusinessLinkRepository, hits: SearchResults
    ) -> SearchResults:
        """Attach to each hit the verification of every business entity it names.

        Only entities the scope's user is linked to (now) are asked; any other
        is ``unverified`` with :class:`RecordNotFound`.
        """
        named = [_business_keys(hit.entities) for hit in hits]
        keys = list(dict.fromkeys(k for ks in named for k in ks))
        found = {
            (v.entity_type, v.entity_id): v
            for v in self.verify(scope, repo, repo.linked(scope, keys))
        }
        for key in keys:
            if key not in found:
                found[key] = Verification(
                    entity_type=key[0],
                    entity_id=key[1],
                    status=VerificationStatus.UNVERIFIED,
                    error=RecordNotFound("the user has no business link to this entity"),
                )
        for position, hit in enumerate(hits):
            hits[position] = replace(hit, verifications=tuple(found[k] for k in named[position]))
        return hits

    def close(self) -> None:
        """Stop the pool without waiting for running verifiers (a later use starts a new one)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="dualtrack-verifier"
                )
            return self._pool

    def _ask(self, keys: Sequence[_Key]) -> dict[_Key, _Answer]:
        """Each entity's answer: all verifiers at once, waiting at most the timeout."""
        answers: dict[_Key, _Answer] = {}
        pending: dict[Future[_Answer], _Key] = {}
        with self._lock:
            fns = dict(self._fns)
        for key in keys:
            fn = fns.get(key[0])
            if fn is None:
                answers[key] = VerifierMissing("no verifier is registered for this link type")
            else:
                pending[self._executor().submit(_call, fn, *key)] = key
        if pending:
            done, late = wait(pending, timeout=self._timeout_s)
            for future in late:
                future.cancel()
                kind = pending[future][0]
                _log.warning("the %s verifier did not answer in time", kind)
                answers[pending[future]] = VerifierTimeout(
                    f"the {kind} verifier did not answer in time", entity_type=kind
                )
            for future in done:
                answers[pending[future]] = future.result()
        return {key: answers[key] for key in keys}


def _call(fn: Verifier, entity_type: str, entity_id: str) -> _Answer:
    """Run one verifier; any failure becomes a typed error (logged without values)."""
    try:
        answer = fn(entity_type, entity_id)
    except Exception as exc:
        _log.warning("the %s verifier raised %s", entity_type, type(exc).__name__)
        return VerifierUnavailable(
            f"the {entity_type} verifier raised {type(exc).__name__}", entity_type=entity_type
        )
    if answer is None:
        return None
    if not isinstance(answer, BusinessState):
        _log.warning("the %s verifier answered with a %s", entity_type, type(answer).__name__)
        return VerifierUnavailable(
            f"the {entity_type} verifier did not answer with a BusinessState",
            entity_type=entity_type,
        )
    detail = None if answer.detail is None else mask_pii(answer.detail)[0]
    return BusinessState(mask_pii(answer.state)[0][:MAX_STATE_CHARS], detail, answer.as_of)


def _outcome(answer: _Answer) -> str:
    if isinstance(answer, DualtrackError):
        return answer.code
    return "unknown" if answer is None else "verified"


def _prior(links: Sequence[BusinessLink]) -> PriorState:
    """The stored state of an entity as read with its links (most recently verified)."""
    verified = [link for link in links if link.verified_at is not None]
    if not verified:
        return PriorState(state=None, verified_at=None, ok=links[0].verification_ok)
    last = max(verified, key=lambda link: link.verified_at or datetime.min)
    return PriorState(last.verified_state, last.verified_at, last.verification_ok)


def _verification(key: _Key, answer: _Answer, prior: PriorState, at: datetime) -> Verification:
    result = Verification(
        entity_type=key[0],
        entity_id=key[1],
        status=VerificationStatus.UNVERIFIED,
        previous_state=prior.state,
        previous_verified_at=prior.verified_at,
    )
    if isinstance(answer, DualtrackError):
        return replace(result, error=answer)
    if answer is None:
        return replace(result, status=VerificationStatus.UNKNOWN)
    changed = prior.state is not None and prior.state != answer.state
    return replace(
        result,
        status=VerificationStatus.CHANGED if changed else VerificationStatus.VERIFIED,
        state=answer.state,
        detail=answer.detail,
        as_of=answer.as_of,
        verified_at=at,
    )


def _business_keys(entities: Iterable[Mapping[str, object]]) -> list[_Key]:
    """The (link type, id) of each business entity a memory names, once each, in order."""
    keys: list[_Key] = []
    for entity in entities:
        kind = ENTITY_LINK_TYPES.get(str(entity.get("type")))
        text = entity.get("text")
        if kind is not None and isinstance(text, str) and text:
            keys.append((kind, text))
    return list(dict.fromkeys(keys))
