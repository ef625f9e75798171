"""The warnings kube-apiserver gives of a pod's spec and metadata, wherever one is written: a
Pod's own, a pod template's (PodTemplates, workloads, Jobs and CronJobs), and of a claim's spec
(``pkg/api/pod/warnings.go``, ``pkg/api/persistentvolumeclaim``, ``pkg/api/job``).

Pure: each takes the object as decoded (defaulted) and the path its fields are named under
(``None`` for a Pod's own, as Go's nil ``field.Path``), and gives the warnings' texts in Go's
order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.address_warnings import (
    DEPRECATED_NODE_LABELS,
    ip_warnings,
    node_selector_term_warnings,
)
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.quantities import QuantityError, quantity_value

__all__ = [
    "child",
    "claim_spec_warnings",
    "job_spec_warnings",
    "mapping",
    "pod_spec_warnings",
    "template_warnings",
]

Body = Mapping[str, Any]

_DEPRECATED_ANNOTATIONS = (
    ("scheduler.alpha.kubernetes.io/critical-pod",
     'non-functional in v1.16+; use the "priorityClassName" field instead'),
    ("security.alpha.kubernetes.io/sysctls",
     'non-functional in v1.11+; use the "sysctls" field instead'),
    ("security.alpha.kubernetes.io/unsafe-sysctls",
     'non-functional in v1.11+; use the "sysctls" field instead'),
)  # fmt: skip
"""The pod annotations ``warningsForPodSpecAndMeta`` names deprecated, with its message."""

_DEPRECATED_VOLUMES = (
    ("photonPersistentDisk", "photonPersistentDisk",
     "deprecated in v1.11, non-functional in v1.16+"),
    ("gitRepo", "gitRepo", "deprecated in v1.11, and disabled by default in v1.33+"),
    ("scaleIO", "scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageos", "storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("ephemeral", "", ""),  # its claim template's spec, in its turn
    ("cephfs", "cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "rbd", "deprecated in v1.28, non-functional in v1.31+"),
)  # fmt: skip
"""A volume's deprecated sources in Go's order: the JSON field, the name the warning gives it
(Go's, not always the JSON's), the message. (``GitRepoVolumeDriver`` is off, locked, in 1.36.)"""

_SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
_APPARMOR_CONTAINER = "container.apparmor.security.beta.kubernetes.io/"
_SECCOMP_MESSAGE = 'non-functional in v1.27+; use the "seccompProfile" field instead'
_APPARMOR_MESSAGE = 'deprecated since v1.30; use the "appArmorProfile" field instead'
_NULL_SELECTOR = "a null labelSelector results in matching no pod"


def child(root: str | None, *names: str) -> str:
    """A field's path as Go's ``field.Path.Child`` writes it under ``root`` (``None``: none)."""
    return ".".join([root, *names] if root else names)


def mapping(value: Any) -> Body:
    """A value that should be a JSON object, or an empty one if it is not."""
    return value if is_map(value) else {}


def _fractional_bytes(value: Any) -> bool:
    """Whether a quantity's ``MilliValue() % 1000`` is not 0: a fraction of a byte."""
    try:
        return math.ceil(quantity_value(value) * 1000) % 1000 != 0
    except QuantityError:
        return False


def _fractional(path: str, value: Any) -> str:
    return f"{path}: fractional byte value {go_quoted(str(value))} is invalid, must be an integer"


def claim_spec_warnings(path: str, spec: Any) -> list[str]:
    """``GetWarningsForPersistentVolumeClaimSpec``: a storage request or limit that is a
    fraction of a byte."""
    resources = mapping(mapping(spec).get("resources"))
    warnings = []
    for bag in ("requests", "limits"):
        value = mapping(resources.get(bag)).get("storage")
        if value is not None and _fractional_bytes(value):
            warnings.append(_fractional(f"{path}.resources.{bag}[storage]", value))
    return warnings


def job_spec_warnings(path: str, spec: Any) -> list[str]:
    """``WarningsForJobSpec``: an Indexed Job too big to track its failed indexes, then its
    pod template's."""
    spec = mapping(spec)
    warnings = []
    if spec.get("completionMode") == "Indexed":
        completions, parallelism = spec.get("completions") or 0, spec.get("parallelism") or 0
        if completions > 100_000 and parallelism > 10_000:
            warnings.append(
                f"{path}: In Indexed Jobs with a number of completions higher than 10^5 and a "
                "parallelism higher than 10^4, Kubernetes might not be able to track "
                "completedIndexes when a big number of indexes fail"
            )
    return warnings + template_warnings(f"{path}.template", spec.get("template"))


def template_warnings(root: str, template: Any) -> list[str]:
    """``GetWarningsForPodTemplate``: a pod template's spec and metadata, under ``root``."""
    if template is None:
        return []
    template = mapping(template)
    return pod_spec_warnings(root, mapping(template.get("spec")), template.get("metadata"))


def _containers(spec: Body, root: str | None) -> Iterator[tuple[Body, str]]:
    """``VisitContainersWithPath``: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(key) or ()):
            yield mapping(container), f"{child(root, 'spec', key)}[{index}]"


def pod_spec_warnings(root: str | None, spec: Body, metadata: Any) -> list[str]:
    """``warningsForPodSpecAndMeta``, check by check in its order."""
    annotations = mapping(mapping(metadata).get("annotations"))
    warnings = _node_warnings(root, spec)
    warnings += _annotation_warnings(root, annotations)
    warnings += _volume_warnings(root, spec)
    warnings += _overlapping_paths(spec.get("volumes") or ())
    warnings += _duplicate_warnings(root, spec)
    overhead = mapping(spec.get("overhead"))
    for resource in ("memory", "ephemeral-storage"):
        if resource in overhead and _fractional_bytes(overhead[resource]):
            where = f"{child(root, 'spec', 'overhead')}[{resource}]"
            warnings.append(_fractional(where, overhead[resource]))
    security = spec.get("securityContext")
    seccomp = isinstance(security, Mapping) and security.get("seccompProfile") is not None
    if not seccomp and _SECCOMP_POD in annotations:
        where = f"{child(root, 'metadata', 'annotations')}[{_SECCOMP_POD}]"
        warnings.append(f"{where}: {_SECCOMP_MESSAGE}")
    profile = mapping(security).get("appArmorProfile")
    for container, path in _containers(spec, root):
        warnings += _container_warnings(root, container, path, annotations, profile)
    warnings += _port_warnings(root, spec)
    grace = spec.get("terminationGracePeriodSeconds")  # (a Pod's own: read as 1, no warning)
    if root is not None and isinstance(grace, int) and grace < 0:
        warnings.append(
            f"{child(root, 'spec', 'terminationGracePeriodSeconds')}: must be >= 0; negative "
            "values are invalid and will be treated as 1"
        )
    warnings += _pod_affinity_warnings(root, mapping(spec.get("affinity")))
    nameservers = mapping(spec.get("dnsConfig")).get("nameservers") or ()
    for index, nameserver in enumerate(nameservers):
        where = f"{child(root, 'spec', 'dnsConfig', 'nameservers')}[{index}]"
        warnings += ip_warnings(where, str(nameserver or ""))
    for index, alias in enumerate(spec.get("hostAliases") or ()):
        where = f"{child(root, 'spec', 'hostAliases')}[{index}].ip"
        warnings += ip_warnings(where, str(mapping(alias).get("ip") or ""))
    return warnings


def _node_warnings(root: str | None, spec: Body) -> list[str]:
    """Deprecated node labels in the node selector (in Go's map order: random, so one at most
    is foreseeable), the node affinity and the topology spread constraints; a spread
    constraint without a label selector."""
    warnings = []
    for key in mapping(spec.get("nodeSelector")):
        if key in DEPRECATED_NODE_LABELS:
            where = f"{child(root, 'spec', 'nodeSelector')}[{key}]"
            warnings.append(f"{where}: {DEPRECATED_NODE_LABELS[key]}")
    node = mapping(mapping(spec.get("affinity")).get("nodeAffinity"))
    affinity = child(root, "spec", "affinity", "nodeAffinity")
    required: Any = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if is_map(required):
        for index, term in enumerate(required.get("nodeSelectorTerms") or ()):
            where = f"{affinity}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            warnings += node_selector_term_warnings(
                term, check_values=False, path=f"{where}[{index}]"
            )
    for index, term in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or ()):
        where = f"{affinity}.preferredDuringSchedulingIgnoredDuringExecution[{index}].preference"
        preference = mapping(term).get("preference")
        warnings += node_selector_term_warnings(preference, check_values=True, path=where)
    spread = child(root, "spec", "topologySpreadConstraints")
    for index, constraint in enumerate(spec.get("topologySpreadConstraints") or ()):
        constraint = mapping(constraint)
        key = str(constraint.get("topologyKey") or "")
        if key in DEPRECATED_NODE_LABELS:
            message = DEPRECATED_NODE_LABELS[key]
            warnings.append(f"{spread}[{index}].topologyKey: {key} is {message}")
        if constraint.get("labelSelector") is None:
            warnings.append(f"{spread}[{index}].labelSelector: {_NULL_SELECTOR}")
    return warnings


def _annotation_warnings(root: str | None, annotations: Body) -> list[str]:
    where = child(root, "metadata", "annotations")
    return [
        f"{where}[{key}]: {message}"
        for key, message in _DEPRECATED_ANNOTATIONS
        if key in annotations
    ]


def _volume_warnings(root: str | None, spec: Body) -> list[str]:
    """Each volume's deprecated sources, and an ephemeral volume's claim template's spec."""
    warnings = []
    for index, volume in enumerate(spec.get("volumes") or ()):
        volume = mapping(volume)
        where = f"{child(root, 'spec', 'volumes')}[{index}]"
        for field, name, message in _DEPRECATED_VOLUMES:
            if volume.get(field) is None:
                continue
            if field != "ephemeral":
                warnings.append(f"{where}.{name}: {message}")
                continue
            claim = mapping(volume[field]).get("volumeClaimTemplate")
            if claim is not None:
                path = f"{where}.ephemeral.volumeClaimTemplate.spec"
                warnings += claim_spec_warnings(path, mapping(claim).get("spec"))
    return warnings


def _duplicate_warnings(root: str | None, spec: Body) -> list[str]:
    """Host aliases' duplicate addresses, image pull secrets' duplicate and empty names."""
    warnings = []
    aliases = spec.get("hostAliases") or ()
    seen: set[str] = set()
    for index, alias in enumerate(aliases if len(aliases) > 1 else ()):
        ip = str(mapping(alias).get("ip") or "")
        if ip in seen:
            where = f"{child(root, 'spec', 'hostAliases')}[{index}].ip"
            warnings.append(f"{where}: duplicate ip {go_quoted(ip)}")
        seen.add(ip)
    secrets = spec.get("imagePullSecrets") or ()
    names = [str(mapping(secret).get("name") or "") for secret in secrets]
    seen = set()
    where = child(root, "spec", "imagePullSecrets")
    for index, name in enumerate(names if len(names) > 1 else ()):
        if name in seen:
            warnings.append(f"{where}[{index}].name: duplicate name {go_quoted(name)}")
        seen.add(name)
    for index, name in enumerate(names):
        if not name:
            warnings.append(f'{where}[{index}].name: invalid empty name ""')
    return warnings


def _apparmor_profile(annotation: str) -> dict[str, str] | None:
    """``ApparmorFieldForAnnotation``: the profile an AppArmor annotation's value names."""
    if annotation == "unconfined":
        return {"type": "Unconfined"}
    if annotation == "runtime/default":
        return {"type": "RuntimeDefault"}
    if annotation.startswith("localhost/") and annotation != "localhost/":
        return {"type": "Localhost", "localhostProfile": annotation.removeprefix("localhost/")}
    return None


def _same_profile(profile: Any, wanted: dict[str, str] | None) -> bool:
    if not isinstance(profile, Mapping) or wanted is None:
        return False
    fields = ("type", "localhostProfile")
    return all((profile.get(key) or None) == wanted.get(key) for key in fields)


def _container_warnings(
    root: str | None, container: Body, path: str, annotations: Body, profile: Any
) -> list[str]:
    """A container's seccomp and (in a template) AppArmor annotations without their fields,
    fractional memory and storage, and environment variables that hide an earlier one."""
    warnings = []
    name = str(container.get("name") or "")
    security = container.get("securityContext")
    security = security if isinstance(security, Mapping) else None
    where = child(root, "metadata", "annotations")
    seccomp = security is not None and security.get("seccompProfile") is not None
    if not seccomp and f"{_SECCOMP_CONTAINER}{name}" in annotations:
        warnings.append(f"{where}[{_SECCOMP_CONTAINER}{name}]: {_SECCOMP_MESSAGE}")
    has_field = security is not None and security.get("appArmorProfile") is not None
    key = f"{_APPARMOR_CONTAINER}{name}"
    shown = None if root is None or has_field else annotations.get(key)
    if shown is not None and not _same_profile(profile, _apparmor_profile(str(shown))):
        warnings.append(f"{where}[{key}]: {_APPARMOR_MESSAGE}")
    resources = mapping(container.get("resources"))
    for resource in ("memory", "ephemeral-storage"):
        for bag in ("limits", "requests"):
            value = mapping(resources.get(bag)).get(resource)
            if value is not None and _fractional_bytes(value):
                warnings.append(_fractional(f"{path}.resources.{bag}[{resource}]", value))
    env = [mapping(item) for item in container.get("env") or ()]
    defined: set[str] = set()
    for index, item in enumerate(env if len(env) > 1 else ()):
        variable = str(item.get("name") or "")
        if variable not in defined:
            defined.add(variable)
            continue
        value, reference = str(item.get("value") or ""), f"$({variable})"
        if item.get("valueFrom") is not None or value == reference or reference not in value:
            warnings.append(
                f"{path}.env[{index}]: hides previous definition of {go_quoted(variable)}, "
                "which may be dropped when using apply"
            )
    return warnings


def _go_port(port: Body) -> str:
    """A container port as Go's ``%+v`` writes the internal ``ContainerPort``."""
    return (
        f"{{Name:{port.get('name') or ''} HostPort:{port.get('hostPort') or 0} "
        f"ContainerPort:{port.get('containerPort') or 0} Protocol:{port.get('protocol') or ''} "
        f"HostIP:{port.get('hostIP') or ''}}}"
    )


def _port_warnings(root: str | None, spec: Body) -> list[str]:
    """Across all containers: a host IP without a host port, ports that duplicate, overlap or
    ambiguously share another's protocol and number; then port names used twice."""
    warnings = []
    taken: dict[str, list[tuple[str, Body]]] = {}
    for container, path in _containers(spec, root):
        for index, port in enumerate(container.get("ports") or ()):
            port, where = mapping(port), f"{path}.ports[{index}]"
            host_ip, host_port = port.get("hostIP") or "", port.get("hostPort") or 0
            if host_ip and not host_port:
                warnings.append(f"{where}: hostIP set without hostPort: {_go_port(port)}")
            key = f"{port.get('containerPort') or 0}/{port.get('protocol') or ''}"
            for other_where, other in taken.get(key, ()):
                other_ip, other_port = other.get("hostIP") or "", other.get("hostPort") or 0
                if host_ip == other_ip and host_port == other_port:
                    warnings.append(f"{where}: duplicate port definition with {other_where}")
                elif not host_port or not other_port:
                    warnings.append(f"{where}: overlapping port definition with {other_where}")
                elif host_port == other_port and bool(host_ip) != bool(other_ip):
                    warnings.append(
                        f"{where}: dangerously ambiguous port definition with {other_where}"
                    )
            taken.setdefault(key, []).append((where, port))
    named: dict[str, str] = {}
    for container, path in _containers(spec, root):
        for index, port in enumerate(container.get("ports") or ()):
            name, where = str(mapping(port).get("name") or ""), f"{path}.ports[{index}]"
            if not name:
                continue
            if name in named:
                first = named[name]
                warnings.append(
                    f"{where}: duplicate port name {go_quoted(name)} with {first}, services and "
                    f"probes that select ports by name will use {first}"
                )
            else:
                named[name] = where
    return warnings


def _pod_affinity_warnings(root: str | None, affinity: Body) -> list[str]:
    """Pod (anti-)affinity terms without a label selector, which match no pod."""
    warnings = []
    for field in ("podAffinity", "podAntiAffinity"):
        terms = mapping(affinity.get(field))
        if field not in affinity or affinity.get(field) is None:
            continue
        where = child(root, "spec", "affinity", field)
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        for index, term in enumerate(required):
            if mapping(term).get("labelSelector") is None:
                path = f"{where}.requiredDuringSchedulingIgnoredDuringExecution[{index}]"
                warnings.append(f"{path}.labelSelector: {_NULL_SELECTOR}")
        preferred = terms.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        for index, term in enumerate(preferred):
            weighted = mapping(mapping(term).get("podAffinityTerm"))
            if weighted.get("labelSelector") is None:
                path = f"{where}.preferredDuringSchedulingIgnoredDuringExecution[{index}]"
                warnings.append(f"{path}.podAffinityTerm.labelSelector: {_NULL_SELECTOR}")
    return warnings


def _paths(items: Any, source: str) -> list[tuple[str, str]]:
    return [(str(mapping(item).get("path") or ""), source) for item in items or ()]


def _shown(entry: tuple[str, str]) -> str:
    path, source = entry
    return f"{go_quoted(path)} ({source})" if source else go_quoted(path)


def _collisions(seen: list[tuple[str, str]], entry: tuple[str, str]) -> list[tuple[str, str]]:
    """``checkForOverlap``: the earlier paths that are this one, or hold it, or are in it."""
    if not entry[0]:
        return []
    return [
        item
        for item in seen
        if item[0]
        and (
            item == entry
            or f"{item[0]}/".startswith(f"{entry[0]}/")
            or f"{entry[0]}/".startswith(f"{item[0]}/")
        )
    ]


def _overlaps(entries: list[tuple[str, str]]) -> list[str]:
    """``checkVolumeMappingForOverlap``: each path against those before it (trailing slashes
    dropped)."""
    found: list[str] = []
    seen: list[tuple[str, str]] = []
    for path, source in entries:
        entry = (path.rstrip("/"), source)
        found += [f"{_shown(entry)} with {_shown(other)}" for other in _collisions(seen, entry)]
        seen.append(entry)
    return found


def _overlapping_paths(volumes: Any) -> list[str]:
    """``warningsForOverlappingVirtualPaths``: a ConfigMap's, Secret's, downward API's or
    projected volume's files at the same path, or one within another."""
    warnings = []
    for volume in volumes:
        volume = mapping(volume)
        name = go_quoted(str(volume.get("name") or ""))
        for field in ("configMap", "secret", "downwardAPI"):
            source = volume.get(field)
            if isinstance(source, Mapping) and source.get("items") is not None:
                for overlap in _overlaps(_paths(source["items"], "")):
                    described = _volume_source(field, source)
                    warnings.append(f"volume {name} ({described}): overlapping paths: {overlap}")
        projected = volume.get("projected")
        if isinstance(projected, Mapping):
            warnings += _projected_overlaps(name, projected)
    return warnings


def _volume_source(field: str, source: Body) -> str:
    """How an overlap's warning names a ConfigMap, Secret or downward API volume's source."""
    if field == "configMap":
        return f"ConfigMap {go_quoted(str(source.get('name') or ''))}"
    if field == "secret":
        return f"Secret {go_quoted(str(source.get('secretName') or ''))}"
    return "DownwardAPI"


def _projection_paths(source: Body) -> list[tuple[str, str]]:
    """The paths one projected source writes, named by their source, as Go's switch picks the
    first source set."""
    for field, label in (("configMap", "ConfigMap"), ("secret", "Secret")):
        part = source.get(field)
        if isinstance(part, Mapping) and part.get("items") is not None:
            return _paths(part["items"], f"{label} {go_quoted(str(part.get('name') or ''))}")
    downward = source.get("downwardAPI")
    if isinstance(downward, Mapping) and downward.get("items") is not None:
        return _paths(downward["items"], "DownwardAPI")
    token = source.get("serviceAccountToken")
    if isinstance(token, Mapping):
        return [(str(token.get("path") or ""), "ServiceAccountToken")]
    bundle = source.get("clusterTrustBundle")
    if isinstance(bundle, Mapping):
        named = bundle.get("name") if bundle.get("name") is not None else bundle.get("signerName")
        return [(str(bundle.get("path") or ""), f"ClusterTrustBundle {go_quoted(str(named))}")]
    certificate = source.get("podCertificate")
    if isinstance(certificate, Mapping):
        parts = (("certificateChainPath", "chain"), ("keyPath", "key"),
                 ("credentialBundlePath", "credential bundle"))  # fmt: skip
        return [
            (str(certificate[key]), f"PodCertificate {label}")
            for key, label in parts
            if certificate.get(key)
        ]
    return []


def _projected_overlaps(name: str, projected: Body) -> list[str]:
    """A projected volume's sources: an empty one, and paths that overlap across them."""
    warnings: list[str] = []
    seen: list[tuple[str, str]] = []
    for source in projected.get("sources") or ():
        source = mapping(source)
        if not any(value is not None for value in source.values()):
            warnings.append(f"volume {name} (Projected) has no sources provided")
            continue
        for path, described in _projection_paths(source):
            entry = (path.rstrip("/"), described)
            for other in _collisions(seen, entry):
                overlap = f"{_shown(entry)} with {_shown(other)}"
                warnings.append(f"volume {name} (Projected): overlapping paths: {overlap}")
            seen.append(entry)
    return warnings
