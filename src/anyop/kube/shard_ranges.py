"""Shard selectors (``shardSelector``, KEP-5866): ranges of the hash of ``metadata.uid``.

Pure. kube-apiserver 1.36 with its ``ShardedListAndWatch`` feature gate keeps, in lists and
watch-streams, only the objects whose 64-bit FNV-1a hash of ``metadata.uid`` falls in one of the
selector's ranges (start inclusive, end exclusive, over ``[0, 2**64)``). A typed list echoes the
selector in ``metadata.shardInfo``; a list of custom resources does not, so whether a server
honours a selector is told by the objects it sends: one outside the ranges says it does not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

__all__ = ["HASH_SPACE", "ShardRanges", "shard_selector", "uid_hash"]

HASH_SPACE = 1 << 64
"""The end of the hash space (exclusive): ``0x10000000000000000``."""


def uid_hash(value: str) -> int:
    """The 64-bit FNV-1a hash of the value's UTF-8 bytes, as kube-apiserver's ``shardRange()``
    hashes ``metadata.uid``."""
    hashed = 0xCBF29CE484222325  # the offset basis
    for byte in value.encode():
        hashed = (hashed ^ byte) * 0x100000001B3  # the prime; the low 64 bits are kept at the end
    return hashed & 0xFFFFFFFFFFFFFFFF


def shard_selector(ranges: Iterable[tuple[int, int]]) -> str:
    """The ``shardSelector`` of these hash ranges of ``metadata.uid``, as kube-apiserver parses
    it: ``shardRange(object.metadata.uid, '0x…', '0x…') || …`` with 16-digit bounds
    (``0x10000000000000000`` for the end of the space)."""
    return " || ".join(
        f"shardRange(object.metadata.uid, '0x{start:016x}', '0x{end:016x}')"
        for start, end in ranges
    )


@dataclasses.dataclass(frozen=True)
class ShardRanges:
    """A share of the objects: ranges of the hash of their uid.

    Attributes:
        ranges: ``(start, end)`` pairs, start inclusive, end exclusive, sorted.
    """

    ranges: tuple[tuple[int, int], ...]

    @property
    def selector(self) -> str:
        """The ``shardSelector`` that asks the API server for these objects only."""
        return shard_selector(self.ranges)

    def holds(self, uid: str) -> bool:
        """Whether the object with this uid is in the share."""
        hashed = uid_hash(uid)
        return any(start <= hashed < end for start, end in self.ranges)
