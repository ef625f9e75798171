"""RBAC from the registry: each resource with exactly the verbs that its handlers need.

Pure: :func:`needed_rules` reads the registry and the deployment's options and returns the
rules, each with a comment saying what needs it; :func:`rbac_documents` groups them into a
Role (the operator's namespaces) and a ClusterRole (cluster-scoped things, or everything with
``--all-namespaces``), with their bindings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from anyop.errors import ConfigError
from anyop.handlers.records import (
    ConversionHandler,
    ReconcilingHandler,
    ResourceChangingHandler,
    ResourceHandler,
    ResourceSpawningHandler,
    ResourceWebhookHandler,
)
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.selectors import Selector
from anyop.manifests.names import Named, named
from anyop.manifests.options import ManifestOptions

Known = Mapping[str, list[Named]]

__all__ = ["Rule", "needed_rules", "rbac_documents", "unasked_rules"]


@dataclasses.dataclass(frozen=True)
class Rule:
    """One RBAC rule: verbs on one resource of one group, and why.

    Attributes:
        group: The API group (``""``: the core API).
        resource: The resource's plural (``widgets``, ``widgets/status``).
        verbs: The verbs, in Kubernetes' usual order.
        why: What needs it (written as a comment in the manifest).
        cluster: Whether it belongs to the ClusterRole whatever the operator's scope.
    """

    group: str
    resource: str
    verbs: tuple[str, ...]
    why: str
    cluster: bool = False

    def as_manifest(self) -> dict[str, Any]:
        """The rule as it is written in a Role."""
        return {"apiGroups": [self.group], "resources": [self.resource], "verbs": list(self.verbs)}


_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")


def needed_rules(
    registry: OperatorRegistry, options: ManifestOptions, known: Known | None = None
) -> list[Rule]:
    """The rules that the registry's handlers and the deployment's options need, merged.

    ``known`` names the resources beyond the built-in ones (see
    :func:`~anyop.manifests.names.known_resources`).

    Raises:
        ConfigError: A handler's selector does not name its resource's group and plural
            (a category, a callable, ``EVERYTHING``, or an unknown name without a group).
    """
    wanted: dict[tuple[str, str, bool], tuple[set[str], list[str]]] = {}
    for rule in [*_application(registry, known or {}), *_framework(registry, options)]:
        verbs, whys = wanted.setdefault((rule.group, rule.resource, rule.cluster), (set(), []))
        verbs.update(rule.verbs)
        if rule.why not in whys:
            whys.append(rule.why)
    return [
        Rule(group, resource, tuple(v for v in _ORDER if v in verbs), "; ".join(whys), cluster)
        for (group, resource, cluster), (verbs, whys) in wanted.items()
    ]


def _resource_handlers(registry: OperatorRegistry) -> list[ResourceHandler]:
    """The handlers of watched objects (all but webhooks and activities)."""
    return [
        *registry.changing.handlers,
        *registry.watching.handlers,
        *registry.spawning.handlers,
        *registry.indexing.handlers,
        *registry.reconciling.handlers,
    ]


def _application(registry: OperatorRegistry, known: Known) -> Iterator[Rule]:
    handlers: Iterable[ResourceHandler] = _resource_handlers(registry)
    for handler in handlers:
        it = _named(handler, known, str(handler))
        yield Rule(it.group, it.plural, ("list", "watch"), f"watched by {handler}", it.cluster)
        if isinstance(handler, ResourceChangingHandler | ResourceSpawningHandler):
            yield from _writes(it, "progress, finalizers and results", main=True)
        if isinstance(handler, ReconcilingHandler):
            main = handler.finalizer or it.status is not True  # else status only
            yield from _writes(it, "the reconciler's finalizer and status", main=main)
            for owned in handler.owns:
                child = _named(owned, known, str(handler))
                verbs = ("list", "watch", "create", "patch", "delete")
                yield Rule(
                    child.group, child.plural, verbs, f"children of {handler}", child.cluster
                )


def _writes(it: Named, why: str, *, main: bool) -> Iterator[Rule]:
    """``patch`` on the object (if ``main``) and on its status subresource (unless it has
    none)."""
    if main:
        yield Rule(it.group, it.plural, ("patch",), why, it.cluster)
    if it.status is not False:
        yield Rule(it.group, f"{it.plural}/status", ("patch",), why, it.cluster)


def _framework(registry: OperatorRegistry, options: ManifestOptions) -> Iterator[Rule]:
    if _resource_handlers(registry):  # webhooks review objects that may not exist yet
        yield Rule("", "events", ("create",), "Events about the handled objects")
    if not options.scanning_disabled:
        why = "CRDs created or deleted while the operator runs"
        yield Rule(
            "apiextensions.k8s.io", "customresourcedefinitions", ("list", "watch"), why, True
        )
    if options.has_namespace_patterns:
        why = "namespaces that match the patterns"
        yield Rule("", "namespaces", ("list", "watch"), why, True)
    if options.peering:
        plural = "clusteranyoppeerings" if options.clusterwide else "anyoppeerings"
        why = "peering with other operators"
        yield Rule("anyop.dev", plural, ("get", "list", "watch", "patch"), why, options.clusterwide)
    if options.leader_election:
        why = "leader election among replicas"
        yield Rule("coordination.k8s.io", "leases", ("get", "create", "update"), why)
    if options.sharding:
        verbs = ("get", "list", "create", "update", "delete")
        yield Rule("coordination.k8s.io", "leases", verbs, "sharding among replicas")
    if options.metrics_port is not None and not options.metrics_insecure:
        why = "the metrics' readers, checked per bearer token"
        yield Rule("authentication.k8s.io", "tokenreviews", ("create",), why, True)
        yield Rule("authorization.k8s.io", "subjectaccessreviews", ("create",), why, True)
    yield from _webhooks(registry, options)


def _webhooks(registry: OperatorRegistry, options: ManifestOptions) -> Iterator[Rule]:
    admission = [h for h in registry.webhooks.handlers if isinstance(h, ResourceWebhookHandler)]
    conversion = [h for h in registry.webhooks.handlers if isinstance(h, ConversionHandler)]
    if admission and options.webhooks_managed:
        for reason in sorted({handler.reason.value for handler in admission}):
            plural = f"{reason}webhookconfigurations"
            why = f"the {reason} webhooks' configuration"
            configs = ("create", "patch", "delete")
            yield Rule("admissionregistration.k8s.io", plural, configs, why, True)
    if conversion and options.conversion_managed:
        why = "the conversion webhook in the CRD"
        crds = ("get", "patch")
        yield Rule("apiextensions.k8s.io", "customresourcedefinitions", crds, why, True)


def unasked_rules(registry: OperatorRegistry, options: ManifestOptions) -> list[str]:
    """What the RBAC leaves out because the options do not ask for it, though the handlers may
    need it: the settings that decide it (``settings.admission.managed``,
    ``managed_conversion``) are set when the operator starts, which generating never does."""
    handlers = registry.webhooks.handlers
    notes = []
    if not options.webhooks_managed and any(
        isinstance(h, ResourceWebhookHandler) for h in handlers
    ):
        notes.append(
            "The operator has admission handlers: if it writes its webhook configurations "
            "(settings.admission.managed), pass --webhooks-managed for the rules to do so."
        )
    if not options.conversion_managed and any(isinstance(h, ConversionHandler) for h in handlers):
        notes.append(
            "The operator has conversion handlers: if it writes its CRDs' conversion "
            "(settings.admission.managed_conversion), pass --conversion-managed for the rules."
        )
    return notes


def _named(handler: ResourceHandler | Selector, known: Known, culprit: str) -> Named:
    selector = handler if isinstance(handler, Selector) else handler.selector
    if selector is None:
        raise ConfigError(f"{culprit} has no resource.")
    return named(selector, known, culprit)


def rbac_documents(rules: list[Rule], options: ManifestOptions) -> list[dict[str, Any]]:
    """A ClusterRole and Roles, with their bindings, each with only the rules it needs.

    Leases go to a Role in the operator's own namespace; cluster-scoped resources to the
    ClusterRole; the rest to a Role per served namespace, or to the ClusterRole when the
    operator serves the whole cluster or namespace patterns.
    """
    places: dict[str | None, list[Rule]] = {}
    for rule in rules:
        for place in _places(rule, options):
            places.setdefault(place, []).append(rule)
    documents: list[dict[str, Any]] = []
    for place in sorted(places, key=lambda place: (place is not None, place or "")):
        kind = "ClusterRole" if place is None else "Role"
        documents += _role(kind, place, places[place], options)
    return documents


def _places(rule: Rule, options: ManifestOptions) -> tuple[str | None, ...]:
    """Where a rule goes: ``None`` for the ClusterRole, else the namespaces of Roles."""
    if rule.group == "coordination.k8s.io" and rule.resource == "leases":
        return (options.namespace,)
    if rule.cluster:
        return (None,)
    if options.clusterwide or options.has_namespace_patterns:
        return (None,)
    return options.namespaces


def _role(
    kind: str, namespace: str | None, rules: list[Rule], options: ManifestOptions
) -> list[dict[str, Any]]:
    metadata: dict[str, Any] = {"name": options.name}
    if namespace is not None:
        metadata["namespace"] = namespace
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "rules": [rule.as_manifest() for rule in sorted(rules, key=_rule_key)],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{kind}Binding",
        "metadata": dict(metadata),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": options.name},
        "subjects": [
            {"kind": "ServiceAccount", "namespace": options.namespace, "name": options.name}
        ],
    }
    return [role, binding]


def _rule_key(rule: Rule) -> tuple[str, str]:
    return rule.group, rule.resource
