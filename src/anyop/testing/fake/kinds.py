"""The resources the fake API serves: built-in kinds operators touch, and CRDs' kinds.

Pure. A :class:`Kind` says how the server treats objects of one resource in one version:
its scope, whether ``/status`` is a subresource, whether ``metadata.generation`` is kept,
which patch types it takes, and (for custom resources) the structural schema that prunes
and checks it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.openapi_catalog import Resource, catalog
from anyop.testing.fake.subresource_discovery import subresource_entries

__all__ = [
    "BUILTIN_KINDS",
    "CRD_KIND",
    "MUTATING_KIND",
    "NAMESPACE_KIND",
    "VALIDATING_KIND",
    "Kind",
    "kinds_of_crd",
]

_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_STATUS_VERBS = ("get", "patch", "update")
_CUSTOM_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")


@dataclasses.dataclass(frozen=True, slots=True)
class Kind:
    """One served resource in one group version.

    Attributes:
        group: The API group; ``""`` for the core group.
        version: The version, e.g. ``v1``.
        plural: The resource name in URLs.
        singular: The singular name.
        kind: The object kind.
        namespaced: Objects live in namespaces.
        status: ``/status`` is a subresource: the main resource ignores ``status`` and the
            subresource ignores everything else.
        generation: ``metadata.generation`` is kept and bumped on spec changes.
        custom: Served for a CRD: no strategic merge, PUT needs a resourceVersion.
        short_names: Short names, for discovery.
        categories: Categories, for discovery.
        schema: The structural schema (``openAPIV3Schema``) of a custom resource.
        crd: The name of the CRD that defines it.
        storage_version: The version stored in etcd, if not ``version``.
        fields: A custom resource's ``selectableFields`` (paths without their leading dot);
            a built-in kind's come from :mod:`~anyop.testing.fake.field_labels`.
        scale: A custom resource's ``scale`` subresource (its replicas' and selector's paths).
        subresources: A built-in kind's subresources, as its API paths have them.
        verbs: A built-in kind's verbs, as its API paths have them (all verbs if empty).
        defaults: A custom resource's schema has defaults (applied to objects when read too).
    """

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool = True
    status: bool = False
    generation: bool = False
    custom: bool = False
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None
    crd: str = ""
    storage_version: str = ""
    fields: tuple[str, ...] = ()
    scale: Mapping[str, str] | None = None
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    defaults: bool = False

    @property
    def api_version(self) -> str:
        """``group/version``, or the version alone for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def creates_on_update(self) -> bool:
        """A PUT of a missing object creates it (its strategy's ``AllowCreateOnUpdate``)."""
        return not self.custom and (self.group, self.plural) in _CREATE_ON_UPDATE

    @property
    def conditional_update(self) -> bool:
        """A PUT must name the resourceVersion it replaces (its strategy does not
        ``AllowUnconditionalUpdate``): custom resources, Leases, admission configurations..."""
        return self.custom or (self.group, self.plural) in _CONDITIONAL_UPDATE

    @property
    def returns_deleted(self) -> bool:
        """A DELETE that removes the object answers with it, not with a ``Status`` (its
        storage's ``ReturnDeletedObject``)."""
        return not self.custom and (self.group, self.plural) in _RETURNS_DELETED

    @property
    def qualified(self) -> str:
        """``plural.group`` as error messages name the resource (the plural alone for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_hash(self) -> str:
        """The discovery ``storageVersionHash``, computed as the API server computes it."""
        stored = self.storage_version or self.version
        digest = hashlib.sha256(f"{self.group}/{stored}/{self.kind}".encode()).digest()
        return base64.b64encode(digest[:8]).decode()

    def discovery(self) -> Iterator[dict[str, Any]]:
        """This resource's entries of an ``APIResourceList`` (itself and ``/status``)."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(_CUSTOM_VERBS if self.custom else self.verbs or _cluster_verbs(self)),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        if self.verbs != ("create",):  # (reviews store nothing: no hash)
            entry["storageVersionHash"] = self.storage_hash
        yield entry
        if self.status:
            yield {
                "name": f"{self.plural}/status",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": list(_STATUS_VERBS),
            }
        if self.scale is not None:
            yield {
                "name": f"{self.plural}/scale",
                "singularName": "",
                "namespaced": self.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": list(_STATUS_VERBS),
            }
        if not self.custom:  # the others of a built-in resource (pods/log, .../approval...)
            yield from subresource_entries(self.group, self.version, self.plural)


def _cluster_verbs(kind: Kind) -> tuple[str, ...]:
    # Namespaces cannot be deleted as a collection; other cluster-scoped kinds can.
    if kind.plural == "namespaces" and not kind.group:
        return tuple(verb for verb in _VERBS if verb != "deletecollection")
    return _VERBS


NAMESPACE_KIND = Kind(
    "",
    "v1",
    "namespaces",
    "namespace",
    "Namespace",
    namespaced=False,
    status=True,
    short_names=("ns",),
    subresources=("finalize", "status"),
)
"""Namespaces: cluster-scoped, with a ``/status`` subresource."""

CRD_KIND = Kind(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "customresourcedefinition",
    "CustomResourceDefinition",
    namespaced=False,
    status=True,
    generation=True,
    short_names=("crd", "crds"),
    categories=("api-extensions",),
    storage_version="v1beta1",
    subresources=("status",),
)
"""CustomResourceDefinitions: applying one serves its kinds."""

ADMISSION = "admissionregistration.k8s.io"
MUTATING_KIND = Kind(
    ADMISSION,
    "v1",
    "mutatingwebhookconfigurations",
    "mutatingwebhookconfiguration",
    "MutatingWebhookConfiguration",
    namespaced=False,
    generation=True,
    categories=("api-extensions",),
)
VALIDATING_KIND = Kind(
    ADMISSION,
    "v1",
    "validatingwebhookconfigurations",
    "validatingwebhookconfiguration",
    "ValidatingWebhookConfiguration",
    namespaced=False,
    generation=True,
    categories=("api-extensions",),
)
"""Admission webhook configurations: the fake calls their webhooks."""

_GENERATION = {
    ("", "pods"), ("", "podtemplates"), ("", "replicationcontrollers"),
    ("apps", "daemonsets"), ("apps", "deployments"), ("apps", "replicasets"),
    ("apps", "statefulsets"), ("batch", "cronjobs"), ("batch", "jobs"),
    ("discovery.k8s.io", "endpointslices"), ("networking.k8s.io", "ingresses"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
    ("networking.k8s.io", "ingressclasses"), ("networking.k8s.io", "networkpolicies"),
    ("policy", "poddisruptionbudgets"), ("scheduling.k8s.io", "priorityclasses"),
    ("resource.k8s.io", "deviceclasses"), ("resource.k8s.io", "resourceslices"),
    *((ADMISSION, plural) for plural in (
        "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
        "mutatingwebhookconfigurations", "validatingadmissionpolicies",
        "validatingadmissionpolicybindings", "validatingwebhookconfigurations")),
}  # fmt: skip
"""Built-in kinds whose strategies keep ``metadata.generation`` (Kubernetes' Go code)."""

_CREATE_ON_UPDATE = {
    ("", "endpoints"), ("", "events"), ("", "limitranges"), ("", "services"),
    ("coordination.k8s.io", "leases"), ("events.k8s.io", "events"),
    ("node.k8s.io", "runtimeclasses"),
    *(("rbac.authorization.k8s.io", plural) for plural in (
        "clusterrolebindings", "clusterroles", "rolebindings", "roles")),
}  # fmt: skip
"""Built-in kinds whose strategies allow a PUT to create (Kubernetes' Go code)."""

_CONDITIONAL_UPDATE = {
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("coordination.k8s.io", "leases"), ("policy", "poddisruptionbudgets"),
    ("node.k8s.io", "runtimeclasses"),
    *(("storage.k8s.io", plural) for plural in (
        "csidrivers", "csinodes", "csistoragecapacities", "volumeattachments")),
    *((ADMISSION, plural) for plural in (
        "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
        "mutatingwebhookconfigurations", "validatingadmissionpolicies",
        "validatingadmissionpolicybindings", "validatingwebhookconfigurations")),
}  # fmt: skip
"""Built-in kinds whose strategies refuse a PUT without a resourceVersion (Go code)."""

_RETURNS_DELETED = {
    *(("", plural) for plural in (
        "namespaces", "persistentvolumeclaims", "persistentvolumes", "pods", "podtemplates",
        "resourcequotas", "serviceaccounts", "services")),
    *(("storage.k8s.io", plural) for plural in (
        "csidrivers", "csinodes", "storageclasses", "volumeattachments",
        "volumeattributesclasses")),
}  # fmt: skip
"""Built-in kinds whose storage answers a DELETE with the deleted object (Go code)."""

_EXTRAS: Mapping[tuple[str, str], Mapping[str, tuple[str, ...]]] = {
    ("", "configmaps"): {"short_names": ("cm",)},
    ("", "events"): {"short_names": ("ev",)},
    ("", "pods"): {"short_names": ("po",), "categories": ("all",)},
    ("", "services"): {"short_names": ("svc",), "categories": ("all",)},
    ("", "serviceaccounts"): {"short_names": ("sa",)},
    ("", "nodes"): {"short_names": ("no",)},
    ("", "endpoints"): {"short_names": ("ep",)},
    ("", "persistentvolumeclaims"): {"short_names": ("pvc",)},
    ("", "persistentvolumes"): {"short_names": ("pv",)},
    ("", "replicationcontrollers"): {"short_names": ("rc",), "categories": ("all",)},
    ("", "resourcequotas"): {"short_names": ("quota",)},
    ("", "limitranges"): {"short_names": ("limits",)},
    ("", "componentstatuses"): {"short_names": ("cs",)},
    ("apiregistration.k8s.io", "apiservices"): {"categories": ("api-extensions",)},
    ("apps", "deployments"): {"short_names": ("deploy",), "categories": ("all",)},
    ("apps", "replicasets"): {"short_names": ("rs",), "categories": ("all",)},
    ("apps", "statefulsets"): {"short_names": ("sts",), "categories": ("all",)},
    ("apps", "daemonsets"): {"short_names": ("ds",), "categories": ("all",)},
    ("batch", "jobs"): {"categories": ("all",)},
    ("batch", "cronjobs"): {"short_names": ("cj",), "categories": ("all",)},
    ("events.k8s.io", "events"): {"short_names": ("ev",)},
    ("networking.k8s.io", "ingresses"): {"short_names": ("ing",)},
    ("networking.k8s.io", "networkpolicies"): {"short_names": ("netpol",)},
    ("policy", "poddisruptionbudgets"): {"short_names": ("pdb",)},
    ("scheduling.k8s.io", "priorityclasses"): {"short_names": ("pc",)},
    ("storage.k8s.io", "storageclasses"): {"short_names": ("sc",)},
    ("storage.k8s.io", "volumeattributesclasses"): {"short_names": ("vac",)},
    ("autoscaling", "horizontalpodautoscalers"): {"short_names": ("hpa",), "categories": ("all",)},
    ("networking.k8s.io", "ipaddresses"): {"short_names": ("ip",)},
    ("certificates.k8s.io", "certificatesigningrequests"): {"short_names": ("csr",)},
    **{(ADMISSION, plural): {"categories": ("api-extensions",)} for plural in (
        "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
        "validatingadmissionpolicies", "validatingadmissionpolicybindings")},
}  # fmt: skip
"""What discovery shows of a kind beyond its API paths: short names and categories."""

_BUILTIN_SCALE = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".spec.selector",
}
"""Where the ``scale`` subresource of workloads (Deployments, ReplicaSets, StatefulSets,
ReplicationControllers) reads and writes: its selector is the spec's, as a string."""

_STORAGE_VERSIONS = {("autoscaling", "horizontalpodautoscalers"): "v2"}
"""Built-in resources served in several versions: the one stored (kube-apiserver 1.36)."""

_REVIEW_GROUPS = ("authentication.k8s.io", "authorization.k8s.io")
"""Groups of create-only resources that store nothing (reviews: :mod:`.reviews` answers them)."""

_CREATE_ONLY = {("", "bindings")}
"""Resources that store nothing of their own (a Pod's binding: :mod:`.pod_bindings`)."""

_FIXED = {
    (kind.group, kind.plural): kind
    for kind in (NAMESPACE_KIND, CRD_KIND, MUTATING_KIND, VALIDATING_KIND)
}


def _storage_version(key: tuple[str, str], version: str) -> str:
    stored = _STORAGE_VERSIONS.get(key, version)
    return "" if stored == version else stored


def _builtin(resource: Resource) -> Kind:
    key = (resource.group, resource.plural)
    if key in _FIXED:
        return _FIXED[key]
    extras = _EXTRAS.get(key, {})
    return Kind(
        resource.group,
        resource.version,
        resource.plural,
        resource.kind.lower(),
        resource.kind,
        namespaced=resource.namespaced,
        status="status" in resource.subresources,
        generation=key in _GENERATION,
        short_names=extras.get("short_names", ()),
        categories=extras.get("categories", ()),
        subresources=tuple(resource.subresources),
        verbs=resource.verbs,
        scale=_BUILTIN_SCALE if "scale" in resource.subresources else None,
        storage_version=_storage_version(key, resource.version),
    )


def _builtin_kinds() -> tuple[Kind, ...]:
    return tuple(
        _builtin(resource)
        for resource in catalog().resources
        if "get" in resource.verbs
        or resource.group in _REVIEW_GROUPS
        or (resource.group, resource.plural) in _CREATE_ONLY
    )


BUILTIN_KINDS: tuple[Kind, ...] = _builtin_kinds()
"""The built-in kinds served from the start: every resource of the vendored OpenAPI catalog
that stores objects."""


def kinds_of_crd(crd: Mapping[str, Any]) -> list[Kind]:
    """The kinds a CRD serves: one per served version.

    Args:
        crd: A CustomResourceDefinition (``apiextensions.k8s.io/v1``) as stored.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    plural = str(names.get("plural", ""))
    singular = str(names.get("singular") or str(names.get("kind", "")).lower())
    kinds = []
    for version in spec.get("versions") or ():
        if not version.get("served"):
            continue
        subresources = version.get("subresources") or {}
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        kinds.append(
            Kind(
                group=str(spec.get("group", "")),
                version=str(version.get("name", "")),
                plural=plural,
                singular=singular,
                kind=str(names.get("kind", "")),
                namespaced=spec.get("scope") == "Namespaced",
                status="status" in subresources,
                scale=subresources.get("scale"),
                generation=True,
                custom=True,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                schema=schema,
                defaults=_has_defaults(schema),
                crd=str((crd.get("metadata") or {}).get("name", "")),
                fields=tuple(
                    str(field.get("jsonPath", "")).removeprefix(".")
                    for field in version.get("selectableFields") or ()
                    if isinstance(field, Mapping)
                ),
            )
        )
    return kinds


def _has_defaults(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        return "default" in schema or any(_has_defaults(value) for value in schema.values())
    if isinstance(schema, list):
        return any(_has_defaults(item) for item in schema)
    return False
