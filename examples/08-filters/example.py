"""Filters: which objects (and which changes) a handler wants, by labels, annotations and fields.

All filters of one handler must match (they are AND-ed). Objects that no handler wants are left
alone entirely: no state in their status or annotations, no finalizers, no log lines. Each
handler here returns ``True``, so ``status`` shows at a glance which of them ran for an object.

Try it::

    anyop run examples/08-filters/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-gold", "labels": {"tier": "gold"}},
        "spec": {"replicas": 5, "phase": "draft"}}'
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-silver", "labels": {"tier": "silver"},
                     "annotations": {"paused": "yes"}}, "spec": {"replicas": 1}}'
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-plain"}, "spec": {"replicas": 1}}'    # no handler wants it
    kubectl patch kex kex-gold --type merge -p '{"spec": {"phase": "published"}}'
    kubectl get kex -o custom-columns=NAME:.metadata.name,STATUS:.status
"""

from typing import Any

import anyop


def is_a_metal(value: str | None, **_: Any) -> bool:
    """A value callback: gets the label's value (``None`` when absent) and the usual kwargs."""
    return value in ("silver", "bronze")


def many_replicas(value: Any, **_: Any) -> bool:
    return isinstance(value, int) and value > 3


@anyop.on.create("kopfexamples", labels={"tier": "gold"})
def gold_only(logger: anyop.Logger, **_: Any) -> bool:
    """An exact label value."""
    logger.info("Label is matching: tier=gold.")
    return True


@anyop.on.create("kopfexamples", labels={"tier": is_a_metal})
def silver_or_bronze(labels: anyop.Labels, logger: anyop.Logger, **_: Any) -> bool:
    """A label callback."""
    logger.info(f"Label callback is matching: tier={labels['tier']}.")
    return True


@anyop.on.create(
    "kopfexamples", labels={"tier": anyop.PRESENT}, annotations={"paused": anyop.ABSENT}
)
def any_tier_unless_paused(logger: anyop.Logger, **_: Any) -> bool:
    """Presence checks: the label is there (any value), and the annotation is not."""
    logger.info("Label is present, annotation is absent.")
    return True


@anyop.on.create("kopfexamples", field="spec.replicas", value=many_replicas)
def scaled_out(spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> bool:
    """A field's value, checked by a callback (``field=`` alone means: the field is present).

    With ``field=``, the handler's id (and its key in the status) is ``scaled_out/spec.replicas``.
    """
    logger.info(f"Field value is matching: replicas={spec['replicas']}.")
    return True


def paused(annotations: anyop.Annotations, **_: Any) -> bool:
    return annotations.get("paused") == "yes"


def huge(spec: anyop.Spec, **_: Any) -> bool:
    return int(spec.get("replicas", 0)) > 100


@anyop.on.create("kopfexamples", when=anyop.any_([paused, huge]))
def needs_attention(logger: anyop.Logger, **_: Any) -> bool:
    """``when=``: any condition on the kwargs; ``any_ all_ none_ not_`` combine callbacks."""
    logger.info("Filter is satisfied: paused or huge.")
    return True


@anyop.on.field("kopfexamples", field="spec.phase", old="draft", new="published")
def published(old: Any, new: Any, logger: anyop.Logger, **_: Any) -> bool:
    """A transition: only from ``draft`` to ``published``, not on any other change of the field."""
    logger.info(f"Field change is satisfied: {old} -> {new}.")
    return True
