"""The warnings of each built-in kind's own, which kube-apiserver sends in ``Warning`` headers:
its REST strategy's ``WarningsOnCreate`` and ``WarningsOnUpdate`` (``pkg/registry/<group>/
<kind>/strategy.go``), and the deprecation of a deprecated type (``k8s.io/apiserver``'s
``deprecation.WarningMessage``, which every request to its resource gets).

Pure: each takes the object as the strategy sees it (decoded, defaulted, prepared: an update's
``metadata.generation`` counted) and, for an update, the stored one. The write path records
them once the object passed validation: a write then refused by the storage (409
AlreadyExists), a dry run and an update that changes nothing send them too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.address_warnings import (
    DEPRECATED_NODE_LABELS,
    cidr_warnings,
    ip_warnings,
    node_selector_term_warnings,
    node_selector_warnings,
)
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.object_meta import dns_label_errors
from anyop.testing.fake.pod_warnings import (
    claim_spec_warnings,
    job_spec_warnings,
    mapping,
    pod_spec_warnings,
    template_warnings,
)
from anyop.testing.fake.quantities import QuantityError, quantity_value
from anyop.testing.fake.resource_slice_rules import warnings as resource_slice_warnings
from anyop.testing.fake.secret_rules import secret_bytes
from anyop.testing.fake.tls_pairs import key_pair_error

__all__ = ["deprecation_warning", "warning_header", "warnings_on_create", "warnings_on_update"]

Body = Mapping[str, Any]
Old = Body | None
Rule = Callable[[Body, Old], list[str]]
"""A kind's warnings of an object: created (old ``None``), or updated over ``old``."""


def _metadata(obj: Body) -> Body:
    return mapping(obj.get("metadata"))


def _spec(obj: Body) -> Body:
    return mapping(obj.get("spec"))


def _name_warnings(obj: Body, *, used_in: str) -> list[str]:
    """A workload's name that is no DNS label (its pods' names and hostnames come of it)."""
    errors = dns_label_errors(str(_metadata(obj).get("name") or ""))
    if not errors:
        return []
    shown = "[" + " ".join(errors) + "]"  # Go's %v of the messages
    return [
        f"metadata.name: this is used in {used_in}, which can result in surprising behavior; "
        f"a DNS label is recommended: {shown}"
    ]


_WORKLOAD_NAME = "Pod names and hostnames"


def _generation_changed(obj: Body, old: Old) -> bool:
    return old is None or _metadata(obj).get("generation") != _metadata(old).get("generation")


def _pod(obj: Body, old: Old) -> list[str]:
    """A Pod's create only (updates are not checked: "humans don't typically interact
    directly with pods")."""
    if old is not None:
        return []
    warnings = _name_warnings(obj, used_in="the Pod's hostname")
    return warnings + pod_spec_warnings(None, _spec(obj), obj.get("metadata"))


def _pod_template(obj: Body, old: Old) -> list[str]:
    if not _generation_changed(obj, old):
        return []
    return template_warnings("template", obj.get("template"))


def _replication_controller(obj: Body, old: Old) -> list[str]:
    """An update checks the *old* template (Go passes the templates the wrong way round)."""
    if old is None:
        warnings = _name_warnings(obj, used_in=_WORKLOAD_NAME)
        return warnings + template_warnings("spec.template", _spec(obj).get("template"))
    if not _generation_changed(obj, old):
        return []
    return template_warnings("spec.template", _spec(old).get("template"))


def _deployment(obj: Body, old: Old) -> list[str]:
    """Deployments and ReplicaSets: their name, their template (an update's when its
    generation changed)."""
    warnings = _name_warnings(obj, used_in=_WORKLOAD_NAME) if old is None else []
    if _generation_changed(obj, old):
        warnings += template_warnings("spec.template", _spec(obj).get("template"))
    return warnings


def _stateful_set(obj: Body, old: Old) -> list[str]:
    """Its template (an update's when its generation changed), its claim templates' specs
    (an update names them under ``Spec``, as Go does), a negative revision history limit."""
    spec = _spec(obj)
    warnings = []
    if _generation_changed(obj, old):
        warnings += template_warnings("spec.template", spec.get("template"))
    for index, claim in enumerate(spec.get("volumeClaimTemplates") or ()):
        where = f"spec.volumeClaimTemplates[{index}]" + ("" if old is None else ".Spec")
        warnings += claim_spec_warnings(where, mapping(claim).get("spec"))
    limit = spec.get("revisionHistoryLimit")
    if isinstance(limit, int) and limit < 0:
        warnings.append(
            "spec.revisionHistoryLimit: a negative value retains all historical revisions; a "
            "value >= 0 is recommended"
        )
    return warnings


_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _daemon_set(obj: Body, old: Old) -> list[str]:
    """Its template: an update's when its template generation changed."""
    if old is not None:
        generation = mapping(_metadata(obj).get("annotations")).get(_TEMPLATE_GENERATION)
        if generation == mapping(_metadata(old).get("annotations")).get(_TEMPLATE_GENERATION):
            return []
    return template_warnings("spec.template", _spec(obj).get("template"))


def _job(obj: Body, old: Old) -> list[str]:
    warnings = _name_warnings(obj, used_in=_WORKLOAD_NAME) if old is None else []
    if _generation_changed(obj, old):
        warnings += job_spec_warnings("spec", _spec(obj))
    return warnings


def _cron_job(obj: Body, old: Old) -> list[str]:
    """Its name, its job template's spec; an update's schedule with a time zone (the path
    as Go writes it, ``spec.spec.schedule``)."""
    warnings = _name_warnings(obj, used_in=_WORKLOAD_NAME) if old is None else []
    spec = _spec(obj)
    if _generation_changed(obj, old):
        job = mapping(spec.get("jobTemplate")).get("spec")
        warnings += job_spec_warnings("spec.jobTemplate.spec", job)
    if old is not None and "TZ" in str(spec.get("schedule") or ""):
        warnings.append(
            "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see "
            "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more "
            "details"
        )
    return warnings


def _service(obj: Body, old: Old) -> list[str]:
    """``GetWarningsForService``."""
    spec, annotations = _spec(obj), mapping(_metadata(obj).get("annotations"))
    warnings = []
    if "service.kubernetes.io/topology-aware-hints" in annotations:
        warnings.append(
            "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use "
            "service.kubernetes.io/topology-mode instead"
        )
    cluster_ips = [str(ip) for ip in spec.get("clusterIPs") or ()]
    if cluster_ips and cluster_ips[0] not in ("", "None"):  # IsServiceIPSet
        for index, ip in enumerate(cluster_ips):
            warnings += ip_warnings(f"spec.clusterIPs[{index}]", ip)
    kind, external_ips = spec.get("type"), [str(ip) for ip in spec.get("externalIPs") or ()]
    headless = kind == "ClusterIP" and spec.get("clusterIP") == "None"
    if headless:
        if spec.get("loadBalancerIP"):
            warnings.append("spec.loadBalancerIP is ignored for headless services")
        if external_ips:
            warnings.append("spec.externalIPs is ignored for headless services")
        if spec.get("sessionAffinity") != "None":
            warnings.append("spec.SessionAffinity is ignored for headless services")
    for index, ip in enumerate(external_ips):
        warnings += ip_warnings(f"spec.externalIPs[{index}]", ip)
    if external_ips and not headless and kind != "ExternalName":
        warnings.append(
            "spec.externalIPs is deprecated and may no longer be implemented in some clusters"
        )
    if spec.get("loadBalancerIP"):
        warnings += ip_warnings("spec.loadBalancerIP", str(spec["loadBalancerIP"]))
    for index, cidr in enumerate(spec.get("loadBalancerSourceRanges") or ()):
        warnings += cidr_warnings(f"spec.loadBalancerSourceRanges[{index}]", str(cidr))
    if kind == "ExternalName" and external_ips:
        warnings.append('spec.externalIPs is ignored when spec.type is "ExternalName"')
    if kind != "ExternalName" and spec.get("externalName"):
        warnings.append('spec.externalName is ignored when spec.type is not "ExternalName"')
    if spec.get("trafficDistribution") == "PreferClose":
        warnings.append(
            'spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"'
        )
    return warnings


def _load_balancer_status(obj: Body, old: Old) -> list[str]:
    """A Service's or an Ingress's status: its load balancers' addresses."""
    ingress = mapping(mapping(obj.get("status")).get("loadBalancer")).get("ingress") or ()
    warnings = []
    for index, entry in enumerate(ingress):
        ip = mapping(entry).get("ip")
        if ip:
            warnings += ip_warnings(f"status.loadBalancer.ingress[{index}]", str(ip))
    return warnings


def _pod_status(obj: Body, old: Old) -> list[str]:
    status, warnings = mapping(obj.get("status")), []
    for field in ("podIPs", "hostIPs"):
        for index, entry in enumerate(status.get(field) or ()):
            ip = str(mapping(entry).get("ip") or "")
            warnings += ip_warnings(f"status.{field}[{index}].ip", ip)
    return warnings


def _secret(obj: Body, old: Old) -> list[str]:
    """A TLS Secret whose certificate and key do not pair: ``tls.X509KeyPair``'s error."""
    if obj.get("type") != "kubernetes.io/tls":
        return []
    data = mapping(obj.get("data"))
    error = key_pair_error(secret_bytes(data.get("tls.crt")), secret_bytes(data.get("tls.key")))
    return [] if error is None else [error]


_ENFORCE_MOUNTABLE = "kubernetes.io/enforce-mountable-secrets"


def _service_account(obj: Body, old: Old) -> list[str]:
    """The enforce-mountable-secrets annotation, unless the old object had it already."""
    if old is not None and _ENFORCE_MOUNTABLE in mapping(_metadata(old).get("annotations")):
        return []
    if _ENFORCE_MOUNTABLE not in mapping(_metadata(obj).get("annotations")):
        return []
    return [
        f"metadata.annotations[{_ENFORCE_MOUNTABLE}]: deprecated in v1.32+; prefer separate "
        "namespaces to isolate access to mounted secrets"
    ]


def _endpoints(obj: Body, old: Old) -> list[str]:
    """Each address in a non-standard form, unless the endpoints controller wrote them."""
    labels = mapping(_metadata(obj).get("labels"))
    if labels.get("endpoints.kubernetes.io/managed-by") == "endpoint-controller":
        return []
    warnings = []
    for index, subset in enumerate(obj.get("subsets") or ()):
        for field in ("addresses", "notReadyAddresses"):
            for position, address in enumerate(mapping(subset).get(field) or ()):
                where = f"subsets[{index}].{field}[{position}].ip"
                warnings += ip_warnings(where, str(mapping(address).get("ip") or ""))
    return warnings


_SLICE_CONTROLLERS = ("endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io")


def _endpoint_slice(obj: Body, old: Old) -> list[str]:
    """A new slice of FQDN addresses; each address in a non-standard form, unless one of the
    slice controllers wrote them."""
    warnings = []
    if old is None and obj.get("addressType") == "FQDN":
        warnings.append("spec.addressType: FQDN endpoints are deprecated")
    labels = mapping(_metadata(obj).get("labels"))
    if labels.get("endpointslice.kubernetes.io/managed-by") in _SLICE_CONTROLLERS:
        return warnings
    for index, endpoint in enumerate(obj.get("endpoints") or ()):
        for position, address in enumerate(mapping(endpoint).get("addresses") or ()):
            warnings += ip_warnings(f"endpoints[{index}].addresses[{position}]", str(address))
    return warnings


def _node(obj: Body, old: Old) -> list[str]:
    spec, warnings = _spec(obj), []
    if spec.get("configSource") is not None:
        warnings.append("spec.configSource: the feature is removed")
    if spec.get("externalID"):
        warnings.append("spec.externalID: this field is deprecated, and is unused by Kubernetes")
    for index, cidr in enumerate(spec.get("podCIDRs") or ()):
        warnings += cidr_warnings(f"spec.podCIDRs[{index}]", str(cidr))
    return warnings


_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
_CLASS_MESSAGE = 'deprecated since v1.8; use "storageClassName" attribute instead'


def _claim(obj: Body, old: Old) -> list[str]:
    warnings = []
    if _STORAGE_CLASS_ANNOTATION in mapping(_metadata(obj).get("annotations")):
        annotation = f"metadata.annotations[{_STORAGE_CLASS_ANNOTATION}]"
        warnings.append(f"{annotation}: {_CLASS_MESSAGE}")
    return warnings + claim_spec_warnings("spec", obj.get("spec"))


_VOLUME_ANNOTATIONS = (
    (_STORAGE_CLASS_ANNOTATION, _CLASS_MESSAGE),
    ("volume.beta.kubernetes.io/mount-options",
     'deprecated since v1.31; use "mountOptions" attribute instead'),
)  # fmt: skip
_DEPRECATED_SOURCES = (
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("storageos", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)
_SOURCE_NAMES = {"storageos": "storageOS"}


def _volume(obj: Body, old: Old) -> list[str]:
    """``GetWarningsForPersistentVolume``."""
    annotations, spec = mapping(_metadata(obj).get("annotations")), _spec(obj)
    warnings = [
        f"metadata.annotations[{key}]: {message}"
        for key, message in _VOLUME_ANNOTATIONS
        if key in annotations
    ]
    if spec.get("persistentVolumeReclaimPolicy") == "Recycle":
        warnings.append(
            "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. "
            "Instead, the recommended approach is to use dynamic provisioning."
        )
    required = mapping(spec.get("nodeAffinity")).get("required")
    if isinstance(required, Mapping):
        for index, term in enumerate(required.get("nodeSelectorTerms") or ()):
            where = f"spec.nodeAffinity.required.nodeSelectorTerms[{index}]"
            warnings += node_selector_term_warnings(term, check_values=False, path=where)
    for field, message in _DEPRECATED_SOURCES:
        if spec.get(field) is not None:
            warnings.append(f"spec.{_SOURCE_NAMES.get(field, field)}: {message}")
    return warnings


def _resource_quota(obj: Body, old: Old) -> list[str]:
    """A new quota whose request of cpu, memory, storage or ephemeral storage is over its
    limit."""
    if old is not None:
        return []
    hard, warnings = mapping(_spec(obj).get("hard")), []
    for resource in ("cpu", "memory", "storage", "ephemeral-storage"):
        request_name = f"requests.{resource}"
        if request_name not in hard and resource in ("cpu", "memory") and resource in hard:
            request_name = resource
        limit_name = f"limits.{resource}"
        if request_name not in hard or limit_name not in hard:
            continue
        try:
            over = quantity_value(hard[request_name]) > quantity_value(hard[limit_name])
        except QuantityError:
            continue
        if over:
            warnings.append(
                f"ResourceQuota {request_name} ({hard[request_name]}) should be less than "
                f"{limit_name} ({hard[limit_name]})"
            )
    return warnings


def _ingress(obj: Body, old: Old) -> list[str]:
    """A new Ingress with the class annotation and no ``spec.ingressClassName``."""
    annotations = mapping(_metadata(obj).get("annotations"))
    if old is not None or "kubernetes.io/ingress.class" not in annotations:
        return []
    if _spec(obj).get("ingressClassName") is not None:
        return []
    return [
        'annotation "kubernetes.io/ingress.class" is deprecated, please use '
        "'spec.ingressClassName' instead"
    ]


def _network_policy(obj: Body, old: Old) -> list[str]:
    """Each IP block's CIDR and exceptions in a non-standard form."""
    spec, warnings = _spec(obj), []
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for index, rule in enumerate(spec.get(direction) or ()):
            for position, peer in enumerate(mapping(rule).get(peers) or ()):
                block = mapping(peer).get("ipBlock")
                if not isinstance(block, Mapping):
                    continue
                where = f"spec.{direction}[{index}].{peers}[{position}].ipBlock"
                warnings += cidr_warnings(f"{where}.cidr", str(block.get("cidr") or ""))
                for number, text in enumerate(block.get("except") or ()):
                    warnings += cidr_warnings(f"{where}.except[{number}]", str(text or ""))
    return warnings


def _storage_class(obj: Body, old: Old) -> list[str]:
    warnings = []
    for index, topology in enumerate(obj.get("allowedTopologies") or ()):
        expressions = mapping(topology).get("matchLabelExpressions") or ()
        for position, expression in enumerate(expressions):
            key = str(mapping(expression).get("key") or "")
            if key in DEPRECATED_NODE_LABELS:
                where = f"allowedTopologies[{index}].matchLabelExpressions[{position}].key"
                warnings.append(f"{where}: {DEPRECATED_NODE_LABELS[key]}")
    return warnings


def _storage_capacity(obj: Body, old: Old) -> list[str]:
    return node_selector_warnings(obj.get("nodeTopology"), "nodeTopology")


_TOKEN_SECRETS = (
    "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true "
    "to prevent possible logging of tokens in volume attributes"
)


def _csi_driver(obj: Body, old: Old) -> list[str]:
    """Token requests without ``serviceAccountTokenInSecrets`` (an update's only when it
    changes the token requests)."""
    spec = _spec(obj)
    requests = spec.get("tokenRequests") or []
    if old is not None and (_spec(old).get("tokenRequests") or []) == requests:
        return []
    if requests and spec.get("serviceAccountTokenInSecrets") is None:
        return [_TOKEN_SECRETS]
    return []


def _runtime_class(obj: Body, old: Old) -> list[str]:
    """``GetWarningsForRuntimeClass``: a deprecated node label in its scheduling's node
    selector (the path without the key, as Go writes it)."""
    selector = mapping(mapping(obj.get("scheduling")).get("nodeSelector"))
    return [
        f"scheduling.nodeSelector: {DEPRECATED_NODE_LABELS[key]}"
        for key in selector
        if key in DEPRECATED_NODE_LABELS
    ]


def _static_suffix(obj: Body, old: Old) -> list[str]:
    """Admission configurations named as static manifests are (``ManifestBasedAdmission
    ControlConfig`` is off: a create is warned about too)."""
    if not str(_metadata(obj).get("name") or "").endswith(".static.k8s.io"):
        return []
    return [
        'metadata.name: names ending with ".static.k8s.io" are reserved for static '
        "manifest-based configurations and cannot be managed via the API"
    ]


_ADMISSION = "admissionregistration.k8s.io"
_RULES: Mapping[tuple[str, str], Rule] = {
    ("", "Pod"): _pod,
    ("", "PodTemplate"): _pod_template,
    ("", "ReplicationController"): _replication_controller,
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _deployment,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cron_job,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "ServiceAccount"): _service_account,
    ("", "Endpoints"): _endpoints,
    ("discovery.k8s.io", "EndpointSlice"): _endpoint_slice,
    ("", "Node"): _node,
    ("", "PersistentVolumeClaim"): _claim,
    ("", "PersistentVolume"): _volume,
    ("", "ResourceQuota"): _resource_quota,
    ("networking.k8s.io", "Ingress"): _ingress,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("storage.k8s.io", "StorageClass"): _storage_class,
    ("storage.k8s.io", "CSIStorageCapacity"): _storage_capacity,
    ("storage.k8s.io", "CSIDriver"): _csi_driver,
    ("node.k8s.io", "RuntimeClass"): _runtime_class,
    ("resource.k8s.io", "ResourceSlice"): resource_slice_warnings,
    **{(_ADMISSION, kind): _static_suffix for kind in (
        "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")},
}  # fmt: skip
"""Each built-in kind's strategy warnings (kinds whose strategies warn of nothing: none)."""

_STATUS_RULES: Mapping[tuple[str, str], Rule] = {
    ("", "Pod"): _pod_status,
    ("", "Service"): _load_balancer_status,
    ("networking.k8s.io", "Ingress"): _load_balancer_status,
}
"""The status strategies that warn: of the addresses in the status."""


def warnings_on_create(kind: Kind, obj: Body) -> list[str]:
    """The kind's strategy's ``WarningsOnCreate`` of a valid new object."""
    rule = None if kind.custom else _RULES.get((kind.group, kind.kind))
    return [] if rule is None else rule(obj, None)


def warnings_on_update(kind: Kind, obj: Body, old: Body, *, subresource: str | None) -> list[str]:
    """The ``WarningsOnUpdate`` of the strategy that updates ``old`` to the valid ``obj``: the
    kind's, or (``status``) its status strategy's; a ``scale`` subresource updates with the
    kind's own."""
    if kind.custom or subresource not in (None, "status", "scale"):
        return []
    rules = _STATUS_RULES if subresource == "status" else _RULES
    rule = rules.get((kind.group, kind.kind))
    return [] if rule is None else rule(obj, old)


def deprecation_warning(kind: Kind) -> str | None:
    """The warning every request to a deprecated type's resource gets (its prerelease
    lifecycle's ``APILifecycleDeprecated`` and ``APILifecycleReplacement``): ``core/v1``
    Endpoints, since 1.33."""
    if not kind.custom and (kind.group, kind.version, kind.kind) == ("", "v1", "Endpoints"):
        return "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    return None


_TOTAL_RUNES = 4 * 1024
_ITEM_RUNES = 256


def warning_header(warnings: list[str]) -> dict[str, str]:
    """The ``Warning`` header of a request's warnings, as its warning recorder writes it: each
    text once, quoted (``"`` and ``\\`` escaped), ``299 -``; past 4,096 characters in all, each
    cut to 256 (and those that then pass the limit dropped)."""
    texts = list(dict.fromkeys(text for text in warnings if text))
    if sum(len(text) for text in texts) > _TOTAL_RUNES:
        texts = [text[:_ITEM_RUNES] for text in texts]
        kept, written = [], 0
        for text in texts:
            if written >= _TOTAL_RUNES:
                break
            kept.append(text)
            written += len(text)
        texts = kept
    if not texts:
        return {}
    quoted = (text.replace("\\", "\\\\").replace('"', '\\"') for text in texts)
    return {"Warning": ", ".join(f'299 - "{text}"' for text in quoted)}
