"""The cells of more built-in kinds' Table rows: Jobs, CronJobs, StatefulSets, DaemonSets,
ReplicationControllers, ControllerRevisions, role bindings, PriorityClasses,
PodDisruptionBudgets, webhook configurations, admission policies and their bindings,
PodTemplates and NetworkPolicies, as kube-apiserver's printers compute them.

Pure, as :mod:`~anyop.testing.fake.printers` (whose helpers they share).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.ages import human_duration, parsed_time
from anyop.testing.fake.printers import (
    Age,
    Printed,
    containers_of,
    format_labels,
    label_selector_text,
    member,
)

__all__ = ["MORE_PRINTERS"]

_JOB_STATES = (
    ("Complete", "Complete"),
    ("Failed", "Failed"),
    ("", "Terminating"),
    ("Suspended", "Suspended"),
    ("FailureTarget", "FailureTarget"),
    ("SuccessCriteriaMet", "SuccessCriteriaMet"),
)


def _name(obj: Mapping[str, Any]) -> str:
    return str(member(obj, "metadata", "name") or "")


def _age(obj: Mapping[str, Any], age: Age) -> str:
    return age(member(obj, "metadata", "creationTimestamp"))


def _selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: ``<none>`` for an empty one."""
    return label_selector_text(selector) or "<none>"


def _true(conditions: Any, kind: str) -> bool:
    for condition in conditions or ():
        if condition.get("type") == kind:
            return bool(condition.get("status") == "True")
    return False


def _job_status(obj: Mapping[str, Any]) -> str:
    conditions = member(obj, "status", "conditions")
    for kind, shown in _JOB_STATES:
        if kind == "" and member(obj, "metadata", "deletionTimestamp"):
            return shown
        if kind and _true(conditions, kind):
            return shown
    return "Running"


def _job_duration(status: Mapping[str, Any], age: Age) -> str:
    started, completed = status.get("startTime"), status.get("completionTime")
    if not started:
        return ""
    if not completed:
        return age(started)
    begin, end = parsed_time(started), parsed_time(completed)
    return human_duration((end - begin).total_seconds()) if begin and end else ""


def _job(obj: Mapping[str, Any], age: Age) -> Printed:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    cells = [_name(obj), _job_status(obj), completions, _job_duration(status, age), _age(obj, age)]
    template = member(spec, "template", "spec")
    return [*cells, *containers_of(template), _selector(spec.get("selector"))], []


def _cron_job(obj: Mapping[str, Any], age: Age) -> Printed:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    cells = [_name(obj), str(spec.get("schedule") or ""), spec.get("timeZone") or "<none>",
             "<unset>" if suspend is None else ("True" if suspend else "False"),
             len(status.get("active") or ()), age(last) if last else "<none>",
             _age(obj, age)]  # fmt: skip
    job = member(spec, "jobTemplate", "spec")
    template = member(job, "template", "spec")
    return [*cells, *containers_of(template), _selector(member(job, "selector"))], []


def _stateful_set(obj: Mapping[str, Any], age: Age) -> Printed:
    ready = int(member(obj, "status", "readyReplicas") or 0)
    desired = int(member(obj, "spec", "replicas") or 0)
    template = member(obj, "spec", "template", "spec")
    return [_name(obj), f"{ready}/{desired}", _age(obj, age), *containers_of(template)], []


def _daemon_set(obj: Mapping[str, Any], age: Age) -> Printed:
    status = obj.get("status") or {}
    keys = ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
            "updatedNumberScheduled", "numberAvailable")  # fmt: skip
    template = member(obj, "spec", "template", "spec")
    node_selector = format_labels(member(template, "nodeSelector"))
    cells = [_name(obj), *(int(status.get(key) or 0) for key in keys), node_selector]
    selector = _selector(member(obj, "spec", "selector"))
    return [*cells, _age(obj, age), *containers_of(template), selector], []


def _replication_controller(obj: Mapping[str, Any], age: Age) -> Printed:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    counts = [int(spec.get("replicas") or 0), int(status.get("replicas") or 0),
              int(status.get("readyReplicas") or 0)]  # fmt: skip
    template = member(spec, "template", "spec")
    selector = format_labels(spec.get("selector"))
    return [_name(obj), *counts, _age(obj, age), *containers_of(template), selector], []


def _binding(obj: Mapping[str, Any], age: Age) -> Printed:
    ref = obj.get("roleRef") or {}
    users, groups, accounts = [], [], []
    for subject in obj.get("subjects") or ():
        match subject.get("kind"):
            case "ServiceAccount":
                accounts.append(f"{subject.get('namespace', '')}/{subject.get('name', '')}")
            case "User":
                users.append(str(subject.get("name", "")))
            case "Group":
                groups.append(str(subject.get("name", "")))
    role = f"{ref.get('kind', '')}/{ref.get('name', '')}"
    subjects = [", ".join(users), ", ".join(groups), ", ".join(accounts)]
    return [_name(obj), role, _age(obj, age), *subjects], []


def _priority_class(obj: Mapping[str, Any], age: Age) -> Printed:
    cells = [_name(obj), int(obj.get("value") or 0), bool(obj.get("globalDefault")),
             _age(obj, age), str(obj.get("preemptionPolicy") or "")]  # fmt: skip
    return cells, []


def _budget(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    bounds = [str(spec[key]) if spec.get(key) is not None else "N/A"
              for key in ("minAvailable", "maxUnavailable")]  # fmt: skip
    allowed = int(member(obj, "status", "disruptionsAllowed") or 0)
    return [_name(obj), *bounds, allowed, _age(obj, age)], []


def _webhooks(obj: Mapping[str, Any], age: Age) -> Printed:
    return [_name(obj), len(obj.get("webhooks") or ()), _age(obj, age)], []


def _pod_template(obj: Mapping[str, Any], age: Age) -> Printed:
    template = obj.get("template") or {}
    labels = format_labels(member(template, "metadata", "labels"))
    return [_name(obj), *containers_of(template.get("spec")), labels], []


def _controller_revision(obj: Mapping[str, Any], age: Age) -> Printed:
    owners = member(obj, "metadata", "ownerReferences") or ()
    owner = next((ref for ref in owners if ref.get("controller")), None)
    controller = "<none>"
    if owner is not None:
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        kind = f"{owner.get('kind', '')}.{group}" if group else str(owner.get("kind", ""))
        controller = f"{kind.lower()}/{owner.get('name', '')}" if kind else owner.get("name", "")
    return [_name(obj), controller, int(obj.get("revision") or 0), _age(obj, age)], []


def _policy(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    rules = spec.get("validations", spec.get("mutations")) or ()
    kind = spec.get("paramKind")
    param = f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"
    return [_name(obj), len(rules), param, _age(obj, age)], []


def _policy_binding(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef")
    param = "<unset>"
    if ref and ref.get("name"):
        param = f"{ref.get('namespace') or '*'}/{ref['name']}"
    elif ref and ref.get("selector") is not None:
        param = label_selector_text(ref["selector"])  # (Go prints the selector's struct here)
    return [_name(obj), str(spec.get("policyName") or ""), param, _age(obj, age)], []


_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
          ("ReadWriteOncePod", "RWOP"))  # fmt: skip
_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _modes(modes: Any) -> str:
    return ",".join(short for mode, short in _MODES if mode in (modes or ()))


def _storage_class(obj: Mapping[str, Any]) -> str:
    annotations = member(obj, "metadata", "annotations") or {}
    if _BETA_CLASS in annotations:
        return str(annotations[_BETA_CLASS])
    return str(member(obj, "spec", "storageClassName") or "")


def _phase(obj: Mapping[str, Any]) -> str:
    if member(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    return str(member(obj, "status", "phase") or "")


def _volume(obj: Mapping[str, Any], age: Age) -> Printed:
    spec = obj.get("spec") or {}
    ref = spec.get("claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref is not None else ""
    cells = [_name(obj), str(member(spec, "capacity", "storage") or "0"),
             _modes(spec.get("accessModes")), str(spec.get("persistentVolumeReclaimPolicy") or ""),
             _phase(obj), claim, _storage_class(obj),
             spec.get("volumeAttributesClassName") or "<unset>",
             str(member(obj, "status", "reason") or ""), _age(obj, age),
             spec.get("volumeMode") or "<unset>"]  # fmt: skip
    return cells, []


def _claim(obj: Mapping[str, Any], age: Age) -> Printed:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = bool(spec.get("volumeName"))
    capacity = str(member(status, "capacity", "storage") or "0") if bound else ""
    cells = [_name(obj), _phase(obj), str(spec.get("volumeName") or ""), capacity,
             _modes(status.get("accessModes")) if bound else "", _storage_class(obj),
             spec.get("volumeAttributesClassName") or "<unset>", _age(obj, age),
             spec.get("volumeMode") or "<unset>"]  # fmt: skip
    return cells, []


def _network_policy(obj: Mapping[str, Any], age: Age) -> Printed:
    selector = _selector(member(obj, "spec", "podSelector") or {})
    return [_name(obj), selector, _age(obj, age)], []


MORE_PRINTERS: dict[tuple[str, str], Callable[[Mapping[str, Any], Age], Printed]] = {
    ("batch", "jobs"): _job,
    ("batch", "cronjobs"): _cron_job,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "daemonsets"): _daemon_set,
    ("", "replicationcontrollers"): _replication_controller,
    ("", "podtemplates"): _pod_template,
    ("rbac.authorization.k8s.io", "rolebindings"): _binding,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding,
    ("scheduling.k8s.io", "priorityclasses"): _priority_class,
    ("policy", "poddisruptionbudgets"): _budget,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _webhooks,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _webhooks,
    ("networking.k8s.io", "networkpolicies"): _network_policy,
    ("apps", "controllerrevisions"): _controller_revision,
    ("", "persistentvolumes"): _volume,
    ("", "persistentvolumeclaims"): _claim,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): _policy,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): _policy,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): _policy_binding,
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): _policy_binding,
}
"""Printers by (group, plural), as :data:`~anyop.testing.fake.printers.PRINTERS`."""
