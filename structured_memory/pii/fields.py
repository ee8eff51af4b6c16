"""PII inside JSON fields: write ``metadata``, fact values, profile attributes.

Every string anywhere in the value (and every integer, as its digits: a
phone may arrive as ``13912345678``) is scanned with
:func:`policies.pii.mask_pii`; the clear values go to the vault and only
masked forms stay in the row, in one of two ways:

- **in place** (:func:`mask_json`, for a write's ``metadata``): each string is
  replaced by its masked form; the caller lists the references beside it
  (``metadata["pii"]``).
- **as leaves** (:func:`plan_json`, for fact values and profile attributes):
  a string holding PII becomes a *masked leaf*
  ``{"masked": "收货电话 138****8000", "pii": [{"vault_id": "…", "kind": "phone"}]}``,
  so the reference sits next to the words it masks. A masked leaf or a vault
  reference ``{"vault_id", "kind"}`` read back and written again is kept (a
  leaf's ``masked`` text is scanned again); anything else of that shape is
  scanned like any value.

Keys are stored as given and never masked: a key holding PII is refused
(:class:`InvalidField`, the key not echoed). Pure functions of values, but
for :func:`hold_references`; the vault is written only through the ``store``
callable of :meth:`JsonPlan.seal`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from policies.errors import InvalidField, RecordNotFound
from policies.pii import PiiKind, PiiMatch, check_pii_values, find_pii, mask_pii
from policies.scope import UserScope
from structured_memory.models import PiiVaultEntry, table_of
from structured_memory.scoping import owned

__all__ = [
    "JsonPlan",
    "Ref",
    "check_key",
    "hold_references",
    "is_masked_leaf",
    "is_reference",
    "mask_json",
    "plan_json",
    "references_in",
    "rewrite_references",
]

Ref = dict[str, str]
"""A vault reference as stored: ``{"vault_id": "<uuid>", "kind": "phone"}``."""

_KINDS = frozenset(k.value for k in PiiKind)


def is_reference(value: object) -> bool:
    """Whether ``value`` is a well-formed vault reference ``{"vault_id", "kind"}``."""
    if not (isinstance(value, dict) and value.keys() == {"vault_id", "kind"}):
        return False
    vault_id, kind = value["vault_id"], value["kind"]
    if not (isinstance(vault_id, str) and isinstance(kind, str) and kind in _KINDS):
        return False
    try:
        return str(uuid.UUID(vault_id)) == vault_id
    except ValueError:
        return False


def is_masked_leaf(value: object) -> bool:
    """Whether ``value`` is a masked leaf ``{"masked": str, "pii": [reference, ...]}``."""
    return (
        isinstance(value, dict)
        and value.keys() == {"masked", "pii"}
        and isinstance(value["masked"], str)
        and isinstance(value["pii"], list)
        and all(is_reference(r) for r in value["pii"])
    )


def _as_text(value: object) -> str | None:
    """A string, or an integer as JSON writes it (``13912345678`` may be a phone);
    ``None`` for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def check_key(key: Any, field: str) -> Any:
    """``key`` unless it holds PII (:class:`InvalidField`; keys are stored in clear).

    A key that is not a string is checked as JSON writes it (``json.dumps``)."""
    if find_pii(key if isinstance(key, str) else json.dumps(key)):
        raise InvalidField(
            f"a key of {field} holds personal data; keys are stored in clear, "
            "put the value under a plain key",
            field=field,
        )
    return key


def mask_json(value: Any, field: str) -> tuple[Any, list[PiiMatch]]:
    """``value`` with every string (and integer) holding PII replaced by its masked
    text, and the PII found (in order).

    Raises :class:`InvalidField` if a key holds PII.
    """
    found: list[PiiMatch] = []

    def walk(node: Any) -> Any:
        text = _as_text(node)
        if text is not None:
            masked, matches = mask_pii(text)
            found.extend(matches)
            return masked if matches else node
        if isinstance(node, dict):
            return {check_key(k, field): walk(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return node

    return walk(value), found


@dataclass(frozen=True)
class _Pending:
    """A string holding PII, masked, waiting for its vault references."""

    masked: str
    matches: tuple[PiiMatch, ...]
    held: tuple[Ref, ...] = ()


@dataclass(frozen=True)
class JsonPlan:
    """A JSON value with its PII masked, before the clear values are vaulted."""

    value: Any
    matches: tuple[PiiMatch, ...]

    def seal(self, store: Callable[[PiiMatch], Ref]) -> Any:
        """The value to store: each pending string a masked leaf of ``store``'s references.

        ``store`` is called once per distinct (kind, value), in that sorted
        order, so concurrent writers lock vault rows in one order.
        """
        first = {(m.kind.value, m.value): m for m in reversed(self.matches)}
        refs = {key: store(first[key]) for key in sorted(first)}

        def fill(node: Any) -> Any:
            if isinstance(node, _Pending):
                pii = [*node.held, *(refs[(m.kind.value, m.value)] for m in node.matches)]
                return {"masked": node.masked, "pii": _unique(pii)}
            if isinstance(node, dict):
                return {k: fill(v) for k, v in node.items()}
            if isinstance(node, list):
                return [fill(v) for v in node]
            return node

        return fill(self.value)


def _unique(refs: list[Ref]) -> list[Ref]:
    out: list[Ref] = []
    for r in refs:
        if r not in out:
            out.append(r)
    return out


def plan_json(value: Any, field: str) -> JsonPlan:
    """Mask every string of ``value`` holding PII (see the module docstring for the forms).

    Raises :class:`InvalidField` if a key holds PII, :class:`InvalidText` if the value
    names more than ``MAX_PII_VALUES`` distinct personal values.
    """
    found: list[PiiMatch] = []

    def scan(node: Any, text: str, held: tuple[Ref, ...] = ()) -> Any:
        masked, matches = mask_pii(text)
        if not matches and not held:
            return node
        found.extend(matches)
        return _Pending(masked, tuple(matches), held)

    def walk(node: Any) -> Any:
        text = _as_text(node)
        if text is not None:
            return scan(node, text)
        if is_reference(node):
            return node
        if is_masked_leaf(node):
            return scan(node, node["masked"], tuple(node["pii"]))
        if isinstance(node, dict):
            return {check_key(k, field): walk(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return node

    planned = walk(value)
    check_pii_values(found, field)
    return JsonPlan(planned, tuple(found))


def _walk_refs(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if is_reference(node):
            yield node
            return
        for v in node.values():
            yield from _walk_refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk_refs(v)


def references_in(value: Any) -> list[uuid.UUID]:
    """The vault ids every reference anywhere in ``value`` names."""
    return [uuid.UUID(r["vault_id"]) for r in _walk_refs(value)]


def hold_references(conn: Connection, scope: UserScope, ids: Iterable[uuid.UUID]) -> None:
    """Hold the user's vault entries ``ids`` (``FOR KEY SHARE``, in kind and blind-index
    order) until the transaction ends, so a concurrent release waits and then sees the
    reference being written; :class:`RecordNotFound` if one is not an entry of the user.
    """
    wanted = sorted(set(ids))
    if not wanted:
        return
    vault = table_of(PiiVaultEntry)
    found = conn.execute(
        select(vault.c.id)
        .where(owned(vault, scope), vault.c.id.in_(wanted))
        .order_by(vault.c.kind, vault.c.blind_mac, vault.c.id)
        .with_for_update(read=True, key_share=True)
    ).all()
    if len(found) != len(wanted):
        raise RecordNotFound("a vault reference names no entry of this user")


def rewrite_references(value: Any, moved: dict[str, str]) -> Any:
    """``value`` with references to the ids in ``moved`` pointing at their new ids
    (a masked leaf's references stay unique)."""
    if isinstance(value, dict):
        if is_reference(value):
            vault_id = value["vault_id"]
            return {**value, "vault_id": moved.get(vault_id, vault_id)}
        out = {k: rewrite_references(v, moved) for k, v in value.items()}
        if is_masked_leaf(out):
            out["pii"] = _unique(out["pii"])
        return out
    if isinstance(value, list):
        return [rewrite_references(v, moved) for v in value]
    return value
