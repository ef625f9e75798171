"""The idempotency key of a handler's run: the same for every attempt at the same change.

A handler may run more than once for one change: after a retry, or when the operator crashed
between the handler's side effect and the write of its outcome (RELIABILITY.md §5 row 31;
anyop, like Kopf, handles at least once). The key lets the handler's side effect dedupe: pass it
to an external system as its idempotency key, or name what the handler creates after it.

The key is derived from what every such attempt sees alike, and only from that: the object's
uid, the handler's id, the object's generation, the cause's reason and the essences it changes
from and to. Nothing of the process (no clock, no random) goes into it, so the next process
derives the same key for the same change. A different change (another generation, another
essence) gets another key, even a change of labels only, which leaves the generation as it is.

Caveats:
    Changes that do not move the generation (labels, annotations) and come back to a state
    handled before get that change's key again: labels ``x`` to ``y``, back to ``x``, then to
    ``y`` again is the first change's key. And a change made while a handler still retries is
    a new change: the retries after it get a new key. Where that matters, make the key of the
    side effect from the key and what the side effect itself is about.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["idempotency_key"]


def idempotency_key(handler_id: str, body: Mapping[str, Any], change: Mapping[str, Any]) -> str:
    """The key of a handler's run for one change of one object (32 hex digits). Pure.

    Args:
        handler_id: The handler's id (a sub-handler's is its full id).
        body: The object's body (its uid and generation are read).
        change: What the cause is: ``reason``, ``old`` and ``new`` (a field handler's narrowed
            ones); any JSON-serialisable values.
    """
    metadata = body.get("metadata") or {}
    identity = {
        "uid": metadata.get("uid"),
        "handler": handler_id,
        "generation": metadata.get("generation"),
        "reason": str(change.get("reason")),
        "old": change.get("old"),
        "new": change.get("new"),
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
