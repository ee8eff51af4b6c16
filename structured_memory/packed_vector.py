"""Vectors sent to PostgreSQL in pgvector's binary format.

pgvector's SQLAlchemy type binds a vector as text (``[0.0123,...]``): formatting 1,024
floats takes about 0.4 ms, more than the rest of a row's insert. A :class:`PackedVector`
is packed once with :mod:`struct` (a few µs) and sent as a binary parameter of unknown
type, which the server reads with the column's own receive function (``vector_recv``).
The stored float4 values are the same: both ways round each double to the nearest
float4.

Bind it with :data:`PACKED_VECTOR` (``bindparam(..., type_=PACKED_VECTOR)``) where the
server knows the parameter is a ``vector`` (an ``INSERT`` into a vector column).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import Dumper
from sqlalchemy.types import UserDefinedType

__all__ = ["PACKED_VECTOR", "PackedVector"]


class PackedVector:
    """A vector in pgvector's binary format: dimension, a reserved zero, big-endian float4s."""

    __slots__ = ("data",)

    def __init__(self, values: Sequence[float]) -> None:
        self.data = struct.pack(f">HH{len(values)}f", len(values), 0, *values)


class _PackedVectorDumper(Dumper):
    """Sends a :class:`PackedVector` as it is, binary, its type left to the server."""

    format = pq.Format.BINARY

    def dump(self, obj: Any) -> bytes:
        data: bytes = obj.data
        return data


psycopg.adapters.register_dumper(PackedVector, _PackedVectorDumper)  # connections made later


class _PackedVectorType(UserDefinedType[PackedVector]):
    """A bound parameter passed to the driver untouched (no text formatting)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"


PACKED_VECTOR = _PackedVectorType()
"""The SQLAlchemy type of a :class:`PackedVector` parameter."""
