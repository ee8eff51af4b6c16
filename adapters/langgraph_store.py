"""``DualtrackStore``: LangGraph's ``BaseStore`` over the one client (``dualtrack[langgraph]``).

Items are memories of the unstructured track. The value's text field (named at
construction, ``content`` by default) is the memory's text, masked and indexed
like any memory; the rest of the value and the item's key and relative
namespace go into the memory's metadata under ``"langgraph"`` (masked like any
metadata). So:

- a namespace maps onto the user scope by the layout given at construction
  (``("memories", "{user_id}")``); one that names no user raises
  :class:`~adapters.errors.NamespaceWithoutUser`;
- ``put`` with a key already used in the namespace replaces that memory (the new
  one is written first, then the old one deleted); ``put`` with ``None`` deletes;
- ``get`` and ``delete`` go by key; ``search`` with a query is the hybrid search,
  without one the newest items first; filters compare value fields;
- the lifecycle policy (required, no default) is the constructor's, one for all
  namespaces or one per relative prefix; TTLs are the policy's, so LangGraph's
  per-item ``ttl`` is refused (``supports_ttl`` is false).

Finding an item by key reads the user's live memories (pages of 1,000): a store
for a few thousand items per user. ``abatch`` runs ``batch`` in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from adapters.namespaces import NamespaceLayout, PolicyByPrefix, check_label
from policies.errors import InvalidField
from policies.ttl import MemoryKind

if TYPE_CHECKING:
    from sdk.api import MemoryAPI

__all__ = ["METADATA_KEY", "DualtrackStore"]

METADATA_KEY = "langgraph"
"""The metadata entry of a memory the store wrote: ``{"namespace", "key", "value",
"created_at"}``, the namespace in relative form (no user id)."""

_PAGE = 1000
_MAX_HITS = 100


class DualtrackStore(BaseStore):
    """LangGraph's store over a :class:`~sdk.api.MemoryAPI` client (in process or remote).

    ``namespace`` lays out where the user stands (``("memories", "{user_id}")``: the
    user comes from the namespace the caller's config builds, never from model
    output); ``lifecycle_policy`` is required: a policy, or ``{relative prefix:
    policy}`` such as ``{("memories", "{user_id}"): IMPLICIT, ("memories", "{user_id}",
    "profile"): EXPLICIT}``. Users must exist (``client.profiles.ensure``).
    """

    supports_ttl = False

    def __init__(
        self,
        client: MemoryAPI,
        *,
        namespace: Sequence[str],
        lifecycle_policy: PolicyByPrefix,
        text_field: str = "content",
    ) -> None:
        self._client = client
        self._layout = NamespaceLayout.build(namespace, lifecycle_policy)
        self._text_field = check_label(text_field, "text_field")

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run each operation in order; the results in the same order."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the client is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidField(f"unknown store operation {type(op).__name__}", field="op")

    # ----------------------------------------------------------------- by key

    def _get(self, op: GetOp) -> Item | None:
        user = self._layout.user_of(op.namespace)
        relative = self._layout.relative(op.namespace)
        key = check_label(op.key, "key")
        found = [r for r in self._records(user) if _entry(r.metadata, relative, key)]
        return self._item(user, found[0]) if found else None

    def _put(self, op: PutOp) -> None:
        user = self._layout.user_of(op.namespace)
        relative = self._layout.relative(op.namespace)
        key = check_label(op.key, "key")
        if op.ttl is not None:
            raise InvalidField("items expire by their lifecycle policy: no ttl", field="ttl")
        old = [r for r in self._records(user) if _entry(r.metadata, relative, key)]
        if op.value is not None:
            self._write(user, relative, key, op, old)
        for record in old:
            self._client.memories.delete(user, record.id)

    def _write(
        self, user: str, relative: tuple[str, ...], key: str, op: PutOp, old: Sequence[Any]
    ) -> None:
        if op.index not in (None, [self._text_field]):
            raise InvalidField(
                f"items are indexed by their {self._text_field!r} field only", field="index"
            )
        value = dict(op.value or {})
        text = value.pop(self._text_field, None)
        if not isinstance(text, str):
            raise InvalidField(f"the value's {self._text_field!r} must be a string", field="value")
        now = datetime.now(UTC)
        created = old[-1].metadata[METADATA_KEY]["created_at"] if old else now.isoformat()
        entry = {"namespace": list(relative), "key": key, "value": value, "created_at": created}
        self._client.write(
            user,
            text,
            lifecycle_policy=self._layout.policy_for(relative),
            occurred_at=now,
            metadata={METADATA_KEY: entry},
            kind=MemoryKind.NOTE,
        )

    # ----------------------------------------------------------------- search

    def _search(self, op: SearchOp) -> list[SearchItem]:
        user = self._layout.user_of(op.namespace_prefix)
        prefix = self._layout.relative(op.namespace_prefix)
        wanted = op.offset + op.limit
        if op.query:
            fetch = min(_MAX_HITS, max(4 * wanted, 10))
            hits = self._client.search(user, op.query, limit=fetch)
            found = [
                self._item(user, h, text=h.text, score=h.score, updated=h.occurred_at)
                for h in hits
                if _under(h.metadata, prefix)
            ]
        else:
            found = [self._item(user, r) for r in self._records(user) if _under(r.metadata, prefix)]
        if op.filter:
            found = [item for item in found if _matches(item.value, op.filter)]
        return found[op.offset : wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefixes = [c for c in op.match_conditions or () if c.match_type == "prefix"]
        if not prefixes:
            self._layout.user_of(())  # refuses: listing spans every user
        user = self._layout.user_of(prefixes[0].path)
        seen: set[tuple[str, ...]] = set()
        for record in self._records(user):
            entry = record.metadata.get(METADATA_KEY)
            if isinstance(entry, dict):
                namespace = self._layout.absolute(entry["namespace"], user)
                if all(_condition(c, namespace) for c in op.match_conditions or ()):
                    seen.add(namespace[: op.max_depth] if op.max_depth else namespace)
        return sorted(seen)[op.offset : op.offset + op.limit]

    # ----------------------------------------------------------------- shapes

    def _records(self, user: str) -> Iterator[Any]:
        """The user's live memories, newest first, page by page."""
        offset = 0
        while True:
            page = self._client.memories.list(user, limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def _item(
        self,
        user: str,
        record: Any,
        *,
        text: str | None = None,
        score: float | None = None,
        updated: datetime | None = None,
    ) -> SearchItem:
        entry = record.metadata[METADATA_KEY]
        value = {**entry["value"], self._text_field: record.text if text is None else text}
        return SearchItem(
            namespace=self._layout.absolute(entry["namespace"], user),
            key=entry["key"],
            value=value,
            created_at=datetime.fromisoformat(entry["created_at"]),
            updated_at=updated or record.occurred_at,
            score=score,
        )


def _entry(metadata: Mapping[str, Any], relative: tuple[str, ...], key: str) -> bool:
    entry = metadata.get(METADATA_KEY)
    return isinstance(entry, dict) and entry.get("key") == key and _under(metadata, relative, True)


def _under(metadata: Mapping[str, Any], prefix: tuple[str, ...], exact: bool = False) -> bool:
    entry = metadata.get(METADATA_KEY)
    if not isinstance(entry, dict) or not isinstance(entry.get("namespace"), list):
        return False
    namespace = tuple(entry["namespace"])
    return namespace == prefix if exact else namespace[: len(prefix)] == prefix


def _condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if len(namespace) < len(path):
        return False
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))


_OPERATORS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _matches(value: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether ``value`` passes LangGraph's filter: equality, or ``{"$op": x}`` per field."""
    for field, expected in where.items():
        actual = value.get(field)
        if isinstance(expected, dict) and expected and all(k in _OPERATORS for k in expected):
            try:
                if not all(_OPERATORS[k](actual, v) for k, v in expected.items()):
                    return False
            except TypeError:
                return False
        elif isinstance(expected, dict) and any(str(k).startswith("$") for k in expected):
            raise InvalidField(f"unknown filter operator in {sorted(expected)}", field="filter")
        elif actual != expected:
            return False
    return True
