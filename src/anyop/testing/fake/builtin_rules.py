"""What kube-apiserver's Go code does to built-in kinds beyond their schemas (what operators meet).

Pure. :func:`defaulted` fills in the defaults of Kubernetes' defaulting functions (a Service's
type, session affinity and ports; pod templates' and containers' fields; Deployments',
StatefulSets', DaemonSets', ReplicaSets', Jobs' and CronJobs' specs; a Secret's type) and folds a
Secret's ``stringData`` into ``data`` (what admission does next: :mod:`.write_path`).
:func:`create_causes` and :func:`update_causes` list the validation errors (422) of ConfigMaps'
keys, Secrets' types, Leases' numbers, immutable ConfigMaps and Secrets, and, from their own
modules, Services, Events, pod templates, Pods' updates and the policy kinds.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from anyop.testing.fake import outside_rules as more
from anyop.testing.fake.apiservice_rules import name_causes as apiservice_name_causes
from anyop.testing.fake.autoscaling_rules import hpa_causes, hpa_defaults
from anyop.testing.fake.batch_rules import (
    cron_job_causes,
    indexed_name_causes,
    job_causes,
    job_update_causes,
)
from anyop.testing.fake.claim_rules import claim_causes, claim_update_causes
from anyop.testing.fake.cluster_rules import (
    CLUSTER_DEFAULTERS,
    cluster_causes,
    cluster_update_causes,
)
from anyop.testing.fake.crd_cel_limits import crd_rule_causes
from anyop.testing.fake.crd_checks import crd_causes
from anyop.testing.fake.crd_schema_checks import crd_schema_causes
from anyop.testing.fake.csi_rules import capacity_changes
from anyop.testing.fake.endpoints_rules import (
    endpoint_slice_causes,
    endpoint_slice_defaults,
    endpoints_causes,
    endpoints_defaults,
)
from anyop.testing.fake.event_rules import event_causes, new_event_parts
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.ingress_rules import ingress_causes
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.limit_range_rules import limit_range_causes, limit_range_defaults
from anyop.testing.fake.object_meta import object_meta_causes
from anyop.testing.fake.object_names import name_causes
from anyop.testing.fake.pod_defaults import (
    claim_template_defaults,
    pod_defaults,
    replication_controller_defaults,
    template_defaults,
)
from anyop.testing.fake.pod_rules import (
    stateful_set_update_causes,
    workload_causes,
)
from anyop.testing.fake.pod_update_rules import pod_update_causes
from anyop.testing.fake.policy_rules import (
    network_policy_causes,
    network_policy_defaults,
    pdb_causes,
    role_causes,
)
from anyop.testing.fake.rbac_rules import binding_causes, binding_update_causes
from anyop.testing.fake.resource_quota_rules import (
    resource_quota_causes,
    resource_quota_status_causes,
    resource_quota_update_causes,
)
from anyop.testing.fake.secret_rules import (
    config_key_causes,
    immutable_data_causes,
    secret_type_causes,
)
from anyop.testing.fake.service_rules import service_causes, service_update_causes
from anyop.testing.fake.statuses import Cause
from anyop.testing.fake.storage_rules import (
    STORAGE_DEFAULTERS,
    storage_causes,
    storage_update_causes,
)
from anyop.testing.fake.webhook_config_rules import (
    webhook_configuration_causes,
    webhook_configuration_defaults,
)
from anyop.testing.fake.workload_rules import SELECTOR_FIXED, selector_update_causes

__all__ = [
    "create_causes",
    "defaulted",
    "error_group",
    "new_object_causes",
    "update_causes",
]

Body = dict[str, Any]
Causes = list[tuple[str, Cause]]

# -- defaults -----------------------------------------------------------------------------------


_template = template_defaults


def _deployment(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(spec)


def _stateful_set(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        strategy.setdefault("rollingUpdate", {})
    if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
        strategy["rollingUpdate"].setdefault("partition", 0)
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)
    claim_template_defaults(spec)


def _daemon_set(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)


def _replica_set(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    _template(spec)


def _job_spec(spec: Body) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault(
        "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    spec.setdefault("manualSelector", False)
    _template(spec)


def _job(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if labels and not obj["metadata"].get("labels"):
        obj["metadata"]["labels"] = dict(labels)
    _job_spec(spec)


def _cron_job(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job = (spec.get("jobTemplate") or {}).get("spec")
    if isinstance(job, dict):
        _template(job)


def _service(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {}).setdefault("clientIP", {})
        config.setdefault("timeoutSeconds", 10800)
    spec.setdefault("type", "ClusterIP")
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    obj.setdefault("status", {}).setdefault("loadBalancer", {})


def _secret(obj: Body) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    written = obj.pop("stringData", None)
    if isinstance(written, Mapping) and written:
        data = dict(obj.get("data") or {})
        for key, value in written.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data


def _null_times(*fields: str) -> Callable[[Body], None]:
    """Timestamps of non-pointer types, which Go writes even when unset: as ``null``. (Lists
    and maps without ``omitempty`` are the decoder's: ``go_types``' ``nulls``.)"""

    def fill(obj: Body) -> None:
        for field in fields:
            if obj.get(field) is None:
                obj[field] = None

    return fill


def _binding(obj: Body) -> None:
    role = obj.get("roleRef")
    if isinstance(role, dict) and not role.get("apiGroup"):
        role["apiGroup"] = "rbac.authorization.k8s.io"
    for subject in obj.get("subjects") or ():
        named = isinstance(subject, dict) and subject.get("kind") in ("User", "Group")
        if named and not subject.get("apiGroup"):
            subject["apiGroup"] = "rbac.authorization.k8s.io"


def _claim(obj: Body) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")


_WEBHOOKS = webhook_configuration_defaults

_DEFAULTERS: Mapping[tuple[str, str], Callable[[Body], None]] = {
    ("", "PersistentVolumeClaim"): _claim,
    **CLUSTER_DEFAULTERS,
    **STORAGE_DEFAULTERS,
    **more.OUTSIDE_DEFAULTERS,
    ("rbac.authorization.k8s.io", "RoleBinding"): _binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _binding,
    ("", "Event"): _null_times("firstTimestamp", "lastTimestamp", "eventTime"),
    ("events.k8s.io", "Event"): _null_times(
        "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "eventTime"
    ),
    ("", "Pod"): pod_defaults,
    ("", "LimitRange"): limit_range_defaults,
    ("", "Endpoints"): endpoints_defaults,
    ("discovery.k8s.io", "EndpointSlice"): endpoint_slice_defaults,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "ReplicationController"): replication_controller_defaults,
    ("", "PodTemplate"): lambda obj: _template(obj),
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("apps", "ReplicaSet"): _replica_set,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cron_job,
    ("autoscaling", "HorizontalPodAutoscaler"): hpa_defaults,
    ("networking.k8s.io", "NetworkPolicy"): network_policy_defaults,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _WEBHOOKS,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _WEBHOOKS,
}


def defaulted(kind: Kind, obj: Mapping[str, Any]) -> Body:
    """A decoded built-in object with the defaults of Kubernetes' defaulting functions (which
    run whenever the API server decodes an object, so on updates too), filled in place: the
    decoded object is the decoder's own."""
    result = dict(obj)
    defaulter = _DEFAULTERS.get((kind.group, kind.kind))
    if defaulter is not None:
        result.setdefault("metadata", {})
        defaulter(result)
    return result


# -- validation ---------------------------------------------------------------------------------


def _invalid(field: str, value: Any, detail: str) -> tuple[str, Cause]:
    if isinstance(value, str):
        shown = go_quoted(value)
    else:
        shown = json.dumps(value) if not isinstance(value, bool) else str(value).lower()
    return field, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def _forbidden(field: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}"}


def _lease(obj: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    spec = obj.get("spec") or {}
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if duration is not None and duration <= 0:
        yield _invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    if transitions is not None and transitions < 0:
        yield _invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")
    if spec.get("preferredHolder") and not spec.get("strategy"):
        yield _forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined")


def _required(field: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueRequired", "message": "Required value"}


def error_group(kind: Kind) -> str:
    """The group that refusals name: events.k8s.io Events are validated as core Events."""
    return "" if (kind.group, kind.kind) == ("events.k8s.io", "Event") else kind.group


def create_causes(
    kind: Kind, obj: Mapping[str, Any], *, raw: Mapping[str, Any] | None = None
) -> Causes:
    """The validation errors of a new built-in object (beyond its name's). ``raw``: the object
    as the request sent it, before decoding (where a list sent empty is not one left out)."""
    if kind.custom:
        return []
    match (kind.group, kind.kind):
        case ("", "ConfigMap"):
            return config_key_causes(obj)
        case ("", "Secret"):
            return [*config_key_causes(obj), *secret_type_causes(obj)]
        case ("", "Service"):
            return service_causes(obj)
        case ("coordination.k8s.io", "Lease"):
            return list(_lease(obj))
        case ("", "LimitRange"):
            return limit_range_causes(obj)
        case ("", "Endpoints"):
            return endpoints_causes(obj)
        case ("", "ResourceQuota"):
            return resource_quota_causes(obj)
        case ("discovery.k8s.io", "EndpointSlice"):
            return endpoint_slice_causes(obj)
        case ("", "Event") | ("events.k8s.io", "Event"):
            return event_causes(kind.group, obj)
        case ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") | ("", "Pod"):
            return workload_causes(kind.kind, obj)
        case ("batch", "Job"):
            return [*job_causes(obj), *indexed_name_causes(obj)]
        case ("", "PersistentVolumeClaim"):
            return claim_causes(obj)
        case ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding"):
            return binding_causes(obj, namespaced=kind.kind == "RoleBinding")
        case ("networking.k8s.io", "Ingress"):
            return ingress_causes(obj, raw=raw)
        case ("batch", "CronJob"):
            return cron_job_causes(obj)
        case ("policy", "PodDisruptionBudget"):
            return pdb_causes(obj)
        case ("networking.k8s.io", "NetworkPolicy"):
            return network_policy_causes(obj)
        case ("rbac.authorization.k8s.io", "Role" | "ClusterRole"):
            return role_causes(obj, namespaced=kind.kind == "Role")
        case ("admissionregistration.k8s.io", kind_name) if kind_name.endswith("Configuration"):
            return webhook_configuration_causes(obj)
        case ("autoscaling", "HorizontalPodAutoscaler"):
            return hpa_causes(obj, version=kind.version, raw=raw)
        case ("scheduling.k8s.io", "PriorityClass") | ("networking.k8s.io", "IngressClass"):
            return cluster_causes(kind.group, kind.kind, obj)
        case ("", "PersistentVolume" | "Namespace"):
            return cluster_causes(kind.group, kind.kind, obj)
        case ("apiextensions.k8s.io", "CustomResourceDefinition"):
            schemas = crd_schema_causes(obj) or crd_rule_causes(obj)  # rules of valid schemas
            return crd_causes(obj, schema=schemas)  # with the rest of the CRD's, in Go's order
    return storage_causes(kind.group, kind.kind, obj) or more.outside_causes(kind, obj) or []


def new_object_causes(
    kind: Kind, obj: Mapping[str, Any], *, raw: Mapping[str, Any] | None = None
) -> Causes:
    """The validation errors of a new built-in object: its metadata's, then its kind's."""
    if kind.custom:
        return []
    metadata = obj.get("metadata") or {}
    own = create_causes(kind, obj, raw=raw)
    if own and (kind.group, kind.kind) in _SPEC_ONLY:  # the metadata is checked only after
        return own
    kube = kind.group not in _GENERIC_META
    first: Causes = []  # an events.k8s.io Event's legacy checks come before its metadata's
    if (kind.group, kind.kind) == ("events.k8s.io", "Event"):
        first, own = new_event_parts(obj)
    names = name_causes(kind, metadata, obj)  # first, as ValidateObjectMeta checks them
    if (kind.group, kind.kind) == ("", "Event"):  # a v1 Event's metadata is not checked
        return [cause for cause in names if cause[1]["reason"] == "FieldValueRequired"] + own
    meta = object_meta_causes(metadata, custom=False, own_create=own, kube_finalizers=kube)
    return first + names + meta


_SPEC_ONLY = {("policy", "PodDisruptionBudget")}
"""Kinds whose ``Validate<Kind>`` checks no metadata: kube-apiserver checks it after them, and
only if they found nothing."""


def update_causes(
    kind: Kind,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    added: Causes | None = None,
    raw: Mapping[str, Any] | None = None,
    subresource: str | None = None,
) -> Causes:
    """The validation errors of an update of a built-in object, its metadata's first (as
    :func:`~anyop.testing.fake.object_meta.object_meta_causes` orders them; ``added``: the
    finalizers added during deletion), then those of the update alone (immutable fields),
    then those of the object as a create checks it (``raw``: as for :func:`create_causes`).
    ``subresource``: the update's (a ResourceQuota's status is checked on its own)."""
    if kind.custom:
        return []
    own: Causes = []
    match (kind.group, kind.kind):
        case ("", "ConfigMap") | ("", "Secret"):
            own = immutable_data_causes(kind.kind, old, new, raw)
        case ("", "Pod"):
            own = pod_update_causes(old, new, raw=raw)
        case ("", "Service"):
            own = service_update_causes(old, new)
        case ("apps", "StatefulSet"):
            own = stateful_set_update_causes(old, new)
        case ("apps", "DaemonSet"):  # (a Deployment's and a ReplicaSet's: after its spec's)
            own = selector_update_causes(old, new)
        case ("", "PersistentVolumeClaim"):
            own = claim_update_causes(old, new, raw=raw)
        case ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding"):
            own = binding_update_causes(old, new)
        case ("apiregistration.k8s.io", "APIService"):  # its name against its spec, again
            own = apiservice_name_causes(new)
    metadata = new.get("metadata") or {}
    # The kind's own checks judge what is not metadata: where that did not change, they judge
    # as they did when it was stored (it was checked then), and need not walk it again.
    same = all(old.get(key) == value for key, value in new.items() if key != "metadata")
    # (A Service's stored object may be one its checks refuse: an ExternalName's lone cluster IP
    # read as a list. An ``autoscaling/v1`` HPA's spec is in its annotations too.)
    again = kind.kind == "Service" or (kind.group, kind.version) == ("autoscaling", "v1")
    if same and len(old) == len(new) and not again:
        own_create = []
    elif kind.kind == "Event" and kind.group in ("", "events.k8s.io"):
        own_create = event_causes(kind.group, new, old=old)
    elif (kind.group, kind.kind) == ("apps", "StatefulSet"):  # its service name not again
        own_create = [cause for cause in create_causes(kind, new) if cause[0] != "spec.serviceName"]
    elif kind.group == "admissionregistration.k8s.io" and kind.kind.endswith("Configuration"):
        own_create = webhook_configuration_causes(new, old=old)  # relaxed by what it held
    elif (kind.group, kind.kind) == ("", "ResourceQuota"):  # its spec, then its scopes kept
        own_create = (
            resource_quota_status_causes(new)
            if subresource == "status"
            else resource_quota_update_causes(old, new, raw=raw)
        )
    elif (kind.group, kind.kind) == ("discovery.k8s.io", "EndpointSlice"):
        own_create = endpoint_slice_causes(new, old)  # changed endpoints only; the type kept
    elif (kind.group, kind.kind) == ("batch", "Job"):  # as created, then as updated
        own_create = [*job_causes(new), *job_update_causes(old, new)]
    elif (cluster := cluster_update_causes(kind.group, kind.kind, old, new)) is not None:
        own_create = cluster  # the update's and the object's, in the order Go checks them
    elif (kind.group, kind.kind) == ("storage.k8s.io", "CSIStorageCapacity"):
        own, own_create = capacity_changes(old, new), create_causes(kind, new)  # metadata between
    elif (storage := storage_update_causes(kind.group, kind.kind, old, new, raw=raw)) is not None:
        own_create = storage  # as for the cluster kinds above
    elif (other := more.outside_update_causes(kind, old, new, subresource=subresource)) is not None:
        own_create = other
    elif kind.group == "rbac.authorization.k8s.io" and kind.kind.endswith("Binding"):
        own, own_create = [], [*create_causes(kind, new, raw=raw), *own]  # its roleRef's last
    elif (kind.group, kind.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        schemas = crd_schema_causes(new, old)  # relaxed by what the stored one has
        schemas = schemas or crd_rule_causes(new, old)  # a kept schema: not its costs
        own_create = crd_causes(new, old, schema=schemas, subresource=subresource)
    else:
        own_create = create_causes(kind, new, raw=raw)
    if (kind.group, kind.kind) in SELECTOR_FIXED - {("apps", "DaemonSet")}:
        own_create = [*own_create, *selector_update_causes(old, new)]
    checks = _UPDATE_META_CHECKS.get((kind.group, kind.kind), "update+create")
    return object_meta_causes(metadata, custom=False, updating=list(added or ()), own_update=own,
                              kind_checks=checks, own_create=own_create,
                              kube_finalizers=kind.group not in _GENERIC_META)  # fmt: skip


_UPDATE_META_CHECKS = {
    **{key: "update" for key in (
        ("", "Service"), ("", "PodTemplate"), ("", "ReplicationController"),
        ("", "ResourceQuota"), ("", "Namespace"), ("events.k8s.io", "Event"),
        ("apps", "ControllerRevision"), ("apps", "DaemonSet"), ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "ReplicaSet"), ("batch", "CronJob"),
        ("coordination.k8s.io", "Lease"), ("networking.k8s.io", "NetworkPolicy"),
        ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "ServiceCIDR"), ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "CSIDriver"), ("autoscaling", "HorizontalPodAutoscaler"))},
    ("storage.k8s.io", "VolumeAttachment"): "create",
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): "create",
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): "create",
    ("", "LimitRange"): "create",
    ("discovery.k8s.io", "EndpointSlice"): "create",
    ("storage.k8s.io", "CSINode"): "create",
    ("storage.k8s.io", "CSIStorageCapacity"): "create+update",
    **{("resource.k8s.io", kind): "create+update" for kind in (
        "ResourceClaim", "ResourceClaimTemplate", "DeviceClass")},
    ("resource.k8s.io", "ResourceSlice"): "update",
    ("", "Event"): "none",
    ("policy", "PodDisruptionBudget"): "none",
}  # fmt: skip
"""What a kind's ``Validate<Kind>Update`` checks of the metadata (see ``object_meta_causes``),
where it is not ``update+create`` (Kubernetes' Go code)."""


_GENERIC_META = ("coordination.k8s.io", "admissionregistration.k8s.io", "node.k8s.io", "policy",
                 "apiregistration.k8s.io", "apiextensions.k8s.io")  # fmt: skip
"""Groups whose validation checks metadata by apimachinery's ``ValidateObjectMeta`` alone, not
by the core group's (which adds its check of finalizer names)."""
