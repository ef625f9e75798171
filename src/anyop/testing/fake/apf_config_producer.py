"""kube-apiserver's API Priority and Fairness config producer (``pkg/registry/flowcontrol``'s
ensurer), as the fake runs it: once a minute of the fake's clock, at the first request after
the minute (:meth:`FakeCluster.respond <anyop.testing.fake.cluster.FakeCluster.respond>`; a
store starts with what its first pass at the server's start leaves), it makes the bootstrap
FlowSchemas and PriorityLevelConfigurations right again:

1. The suggested ones, then the mandatory ones (``exempt`` and ``catch-all``), each kind's
   levels before its FlowSchemas, in kube-apiserver's order: a missing one is created; one
   whose spec it updates (always for a mandatory one; for a suggested one, where its
   ``apf.kubernetes.io/autoupdate-spec`` annotation says true, or, without a boolean there, at
   its generation 1) gets the bootstrap spec back where it differs, and the annotation is set
   to what was decided where it says otherwise (``"true"`` or ``"false"``).
2. Every other FlowSchema, then every other level, whose annotation says true is deleted (in
   the order of their names, where Go's informer cache gives its own).

Its writes are the field manager ``api-priority-and-fairness-config-producer-v1``'s. A write
that fails ends the pass (kept in the store's ``controller_errors``), as the Go ensurer's
error ends its own; a conflicting update waits for the next pass. The decisions are pure
(:func:`revision`, :func:`unwanted`); :func:`produce` writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from anyop.testing.fake import deletions, writes
from anyop.testing.fake.bootstrap import flow_control_configuration
from anyop.testing.fake.flowcontrol_internal import flow_schema_spec, level_spec, semantic
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.store import Ref, Store

__all__ = ["AUTO_UPDATE", "MANAGER", "PERIOD", "produce", "revision", "unwanted"]

Body = dict[str, Any]
MANAGER = "api-priority-and-fairness-config-producer-v1"
"""The field manager of the producer's writes."""
AUTO_UPDATE = "apf.kubernetes.io/autoupdate-spec"
"""The annotation that says whether the producer keeps an object's spec as bootstrapped."""
PERIOD = 60.0
"""Seconds between the producer's passes (``wait.PollImmediateUntil(time.Minute, ...)``)."""

_GROUP = "flowcontrol.apiserver.k8s.io"
_LEVELS, _SCHEMAS = "PriorityLevelConfiguration", "FlowSchema"
_PLURALS = {_LEVELS: "prioritylevelconfigurations", _SCHEMAS: "flowschemas"}
_SUGGESTED = {
    _LEVELS: ("system", "node-high", "leader-election", "workload-high", "workload-low",
              "global-default"),
    _SCHEMAS: ("system-nodes", "system-node-high", "probes", "system-leader-election",
               "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts",
               "service-accounts", "global-default"),
}  # fmt: skip
_MANDATORY = {_LEVELS: ("catch-all", "exempt"), _SCHEMAS: ("exempt", "catch-all")}
_TRUE = frozenset(("1", "t", "T", "TRUE", "true", "True"))
_FALSE = frozenset(("0", "f", "F", "FALSE", "false", "False"))


def _go_bool(value: Any) -> bool | None:
    """``strconv.ParseBool``'s answer, ``None`` where it refuses the text."""
    if value in _TRUE:
        return True
    return False if value in _FALSE else None


def _annotation(obj: Mapping[str, Any]) -> Any:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(AUTO_UPDATE)


def _spec_equalish(kind: str, bootstrap: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether the current spec is the bootstrap one as ``equality.Semantic`` compares them (an
    exempt level's ``spec.exempt`` numbers are the current ones' to choose)."""
    if kind == _SCHEMAS:
        return bool(
            semantic(flow_schema_spec(bootstrap.get("spec") or {}))
            == semantic(flow_schema_spec(current.get("spec") or {}))
        )
    expected = semantic(level_spec(bootstrap.get("spec") or {}))
    actual = semantic(level_spec(current.get("spec") or {}))
    if bootstrap["metadata"]["name"] == "exempt":
        if actual["Exempt"] is None:
            return False
        expected = {**expected, "Exempt": actual["Exempt"]}
    return bool(expected == actual)


def revision(
    kind: str, current: Mapping[str, Any], bootstrap: Mapping[str, Any], *, mandatory: bool
) -> Body | None:
    """The object the producer writes over an existing bootstrap one (``kind`` is
    ``FlowSchema`` or ``PriorityLevelConfiguration``), or ``None`` where it leaves it."""
    said = _go_bool(_annotation(current))
    auto = mandatory or (said if said is not None else current["metadata"].get("generation") == 1)
    annotate = said != auto  # (also where it is missing, or no boolean)
    respec = auto and not _spec_equalish(kind, bootstrap, current)
    if not (annotate or respec):
        return None
    revised: Body = json_copy(dict(current))
    if respec:
        revised["spec"] = json_copy(bootstrap["spec"])
    if annotate:
        metadata = revised["metadata"]
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   AUTO_UPDATE: "true" if auto else "false"}  # fmt: skip
    return revised


def unwanted(objects: Iterable[Mapping[str, Any]], wanted: Iterable[str]) -> list[str]:
    """The names of the objects the producer deletes: not bootstrap ones, and annotated to be
    kept up to date (a boolean that says true); in the order of their names."""
    keep = set(wanted)
    return sorted(
        str(obj["metadata"]["name"])
        for obj in objects
        if obj["metadata"]["name"] not in keep and _go_bool(_annotation(obj)) is True
    )


def _kind(store: Store, name: str) -> Kind:
    kind = store.kind(_GROUP, "v1", _PLURALS[name])
    assert kind is not None  # (a built-in kind, always served)
    return kind


def produce(store: Store) -> None:
    """One pass of the producer over the store (its warnings are no request's)."""
    recorded, store.warnings = store.warnings, None
    try:
        _ensure_all(store)
        for name in (_SCHEMAS, _LEVELS):
            kind = _kind(store, name)
            wanted = (*_MANDATORY[name], *_SUGGESTED[name])
            for gone in unwanted(store.objects[(_GROUP, kind.plural)].values(), wanted):
                try:
                    deletions.delete(store, Ref(kind, None, gone), {})
                except StatusError as exc:
                    if exc.code != 404:
                        raise
    except StatusError as exc:  # the pass ends here; the next minute's tries again
        store.controller_errors.append(exc)
    finally:
        store.warnings = recorded


def _ensure_all(store: Store) -> None:
    bootstrap = flow_control_configuration()
    for names, mandatory in ((_SUGGESTED, False), (_MANDATORY, True)):
        for name in (_LEVELS, _SCHEMAS):
            kind = _kind(store, name)
            for object_name in names[name]:
                wanted = bootstrap[name][object_name]
                current = store.objects[(_GROUP, kind.plural)].get(("", object_name))
                if current is None:
                    writes.create(store, kind, json_copy(wanted), namespace=None, manager=MANAGER)
                    continue
                revised = revision(name, current, wanted, mandatory=mandatory)
                if revised is None:
                    continue
                try:
                    writes.update(store, kind, current, new=revised, subresource=None,
                                  manager=MANAGER)  # fmt: skip
                except StatusError as exc:
                    if exc.code != 409:  # changed meanwhile: its spec is checked next time
                        raise
