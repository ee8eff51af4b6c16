"""Search indexes of the unstructured track behind the ``FragmentIndex`` protocol."""

from unstructured_memory.index.base import (
    Delete,
    DropUser,
    FragmentIndex,
    IndexedFragment,
    IndexHit,
    IndexOp,
    SearchFilters,
    SearchQuery,
    Upsert,
)
from unstructured_memory.index.registry import INDEXES, create_index

__all__ = [
    "INDEXES",
    "Delete",
    "DropUser",
    "FragmentIndex",
    "IndexHit",
    "IndexOp",
    "IndexedFragment",
    "SearchFilters",
    "SearchQuery",
    "Upsert",
    "create_index",
]
