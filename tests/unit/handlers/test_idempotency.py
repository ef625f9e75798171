"""The idempotency key: the same for every run of a handler for one change, else different."""

from __future__ import annotations

from typing import Any

from anyop.handlers.causes import Reason
from anyop.handlers.idempotency import idempotency_key


def obj(generation: int = 1, uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"uid": uid, "generation": generation, "resourceVersion": "7"}}


CREATE = {"reason": Reason.CREATE, "old": None, "new": {"spec": {"a": 1}}}


def test_the_same_change_gets_the_same_key_whatever_else_the_body_has() -> None:
    first = idempotency_key("fn", obj(), CREATE)
    later = obj()
    later["metadata"]["resourceVersion"] = "9"  # our own progress writes since
    later["status"] = {"fn": "half"}
    assert idempotency_key("fn", later, dict(CREATE)) == first
    assert len(first) == 32
    assert int(first, 16) >= 0


def test_the_key_is_fixed_across_processes() -> None:
    # No clock, no random, no per-process hash seed: a known value.
    assert idempotency_key("fn", obj(), CREATE) == "2bfac96a47464423c078df30c940b6f0"


def test_another_object_handler_generation_or_change_gets_another_key() -> None:
    base = idempotency_key("fn", obj(), CREATE)
    update = {"reason": Reason.UPDATE, "old": {"spec": {"a": 1}}, "new": {"spec": {"a": 2}}}
    labels = {"reason": Reason.UPDATE, "old": {"metadata": {"labels": {"x": "1"}}}, "new": {}}
    others = [
        idempotency_key("fn", obj(uid="u2"), CREATE),
        idempotency_key("other", obj(), CREATE),
        idempotency_key("fn", obj(generation=2), CREATE),
        idempotency_key("fn", obj(), update),
        idempotency_key("fn", obj(), labels),  # the same generation, another change
    ]
    assert base not in others
    assert len(set(others)) == len(others)
