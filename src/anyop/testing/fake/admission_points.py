"""Where a write meets admission, as in kube-apiserver: the mutating webhooks get the object
as decoded (defaulted, its ``managedFields`` set by the field manager) before the strategy
prepares it; the validating ones the object the strategy made, just before it is stored.

:class:`AdmissionPoints` is what the writes call at those points (in
:mod:`anyop.testing.fake.writes`): by default nothing happens there. The webhooks' own
(:mod:`anyop.testing.fake.webhook_calls`) stop a dry run at the first point, or put the
mutated object in its place.
"""

from __future__ import annotations

from typing import Any

from anyop.testing.fake.kinds import Kind

__all__ = ["AdmissionPoints", "WouldMutate"]

Body = dict[str, Any]


class WouldMutate(Exception):
    """Raised at the mutating point of a dry run: the object the mutating webhooks get."""

    def __init__(self, kind: Kind, obj: Body, *, old: Body | None) -> None:
        super().__init__(kind.kind)
        self.kind, self.obj, self.old = kind, obj, old


class AdmissionPoints:
    """What a write does at its admission points: nothing (no webhook concerns it)."""

    def mutating(self, kind: Kind, old: Body | None, obj: Body) -> Body:
        """The object to go on with, at the mutating point: ``obj`` as decoded (``old``: the
        object an update replaces, as stored; ``None`` on a create)."""
        return obj

    def made(self, kind: Kind) -> bool:
        """Whether the object an update of ``kind`` sends is made, at its mutating point (its
        webhooks called, if any): its ``resourceVersion`` precondition is checked then."""
        return True

    def owned(self, owners: list[Body] | None) -> list[Body] | None:
        """The ``managedFields`` entries the field manager made (before admission)."""
        return owners

    def validating(self, kind: Kind, obj: Body) -> None:
        """At the validating point of a create (before the storage refuses an existing name)."""
