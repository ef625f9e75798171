"""What kube-apiserver's Go code does to Jobs and CronJobs beyond their schemas, with its
messages.

Pure. A new Job without ``manualSelector`` gets its generated selector and labels (the Job
strategy's ``generateSelector``; the Job's own labels are its template's when it has none, as
the defaults give them when it is read back). ``job_causes`` and ``cron_job_causes`` are
``ValidateJob``'s and ``ValidateCronJob``'s checks that operators meet: the numbers that may
not be negative, the completion mode, the restart policy a Job's pods may have, the selector
(generated, or manual), the pod template; a CronJob's schedule (read as the cron parser Kubernetes
uses reads it), concurrency policy and time zone; an update may not change a Job's selector,
template, completion mode and a few more.
"""

from __future__ import annotations

import json
import re
import zoneinfo
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.label_selectors import selects
from anyop.testing.fake.object_meta import dns_label_errors
from anyop.testing.fake.pod_rules import invalid, required, template_causes, unsupported
from anyop.testing.fake.pod_spec_diff import spec_json, template_json

__all__ = ["cron_job_causes", "job_causes", "job_update_causes", "with_generated_selector"]

Cause = dict[str, str]

_NEGATIVE = "must be greater than or equal to 0"
_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")


def with_generated_selector(job: dict[str, Any]) -> dict[str, Any]:
    """A new Job (its create's own: changed in place) with the selector and template labels the
    Job strategy generates, unless its selector is manual."""
    spec = job.setdefault("spec", {})
    if spec.get("manualSelector"):
        return job
    metadata = job["metadata"]
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    own = metadata.get("labels")
    copied = own is not None and own == template_meta.get("labels")  # the defaults' copy
    labels = dict(template_meta.get("labels") or {})
    for key in _NAME_LABELS:
        labels.setdefault(key, metadata["name"])
    for key in _UID_LABELS:
        labels.setdefault(key, metadata["uid"])
    template_meta["labels"] = labels
    selector = spec["selector"] = dict(spec.get("selector") or {})
    match = selector["matchLabels"] = dict(selector.get("matchLabels") or {})
    match.setdefault("batch.kubernetes.io/controller-uid", metadata["uid"])
    if not own or copied:
        metadata["labels"] = dict(labels)  # read back, the defaults copy them again
    return job


def _nonnegative(spec: Mapping[str, Any], path: str, *fields: str) -> Iterator[tuple[str, Cause]]:
    for field in fields:
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            yield invalid(f"{path}.{field}", str(value), _NEGATIVE)


def _selector_json(selector: Any) -> str:
    """A label selector as Go writes it: its fields in the struct's order, map keys sorted."""
    if selector is None:
        return "null"
    shown: dict[str, Any] = {}
    if selector.get("matchLabels"):
        shown["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    if selector.get("matchExpressions"):
        shown["matchExpressions"] = [
            {k: item[k] for k in ("key", "operator", "values") if item.get(k) is not None}
            for item in selector["matchExpressions"]
        ]
    return json.dumps(shown, separators=(",", ":"))


def _job_spec(spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``validateJobSpec``: the numbers, the completion mode, the pod template."""
    yield from _nonnegative(spec, path, "parallelism", "completions", "activeDeadlineSeconds",
                            "backoffLimit", "ttlSecondsAfterFinished")  # fmt: skip
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        yield unsupported(f"{path}.completionMode", str(mode), ("NonIndexed", "Indexed"))
    if mode == "Indexed" and spec.get("completions") is None:
        detail = "Required value: when completion mode is Indexed"
        yield f"{path}.completions", {"reason": "FieldValueRequired", "message": detail}
    template = spec.get("template") or {}
    yield from template_causes(template, f"{path}.template")
    restart = str((template.get("spec") or {}).get("restartPolicy") or "")
    where = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", ""):
        detail = 'Required value: valid values: "OnFailure", "Never"'
        yield where, {"reason": "FieldValueRequired", "message": detail}
    elif restart not in ("OnFailure", "Never"):
        yield unsupported(where, restart, ("OnFailure", "Never"))


def _job_selector(spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, Cause]]:
    """``ValidateJobSpec``'s selector checks (a CronJob's job template has none)."""
    template = spec.get("template") or {}
    selector = spec.get("selector")
    if selector is None:
        yield required(f"{path}.selector")
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector is None or not selects(selector, labels):  # no selector selects nothing
        shown = json.dumps(labels, separators=(",", ":"), sort_keys=True) if labels else "null"
        detail = "`selector` does not match template `labels`"
        yield invalid(f"{path}.template.metadata.labels", shown, detail)


def _generated(job: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """``validateGeneratedSelector``: a generated selector's labels are on the template."""
    spec = job.get("spec") or {}
    if spec.get("manualSelector") or spec.get("selector") is None:
        return
    metadata = job.get("metadata") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    uid, name = str(metadata.get("uid") or ""), str(metadata.get("name") or "")
    for key, expected in (*((k, uid) for k in _UID_LABELS), *((k, name) for k in _NAME_LABELS)):
        where = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            message = f"Required value: must be '{expected}'"
            yield where, {"reason": "FieldValueRequired", "message": message}
        elif labels[key] != expected:
            shown = json.dumps(labels, separators=(",", ":"), sort_keys=True)
            yield invalid(where, shown, f"must be '{expected}'")
    expected_labels = {**dict.fromkeys(_UID_LABELS, uid), **dict.fromkeys(_NAME_LABELS, name)}
    if not selects(spec["selector"], expected_labels):
        shown = _selector_json(spec["selector"])
        yield invalid("spec.selector", shown, "`selector` not auto-generated")


def job_causes(job: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a new Job (beyond its metadata's)."""
    spec = job.get("spec") or {}
    return [*_generated(job), *_job_spec(spec, "spec"), *_job_selector(spec, "spec")]


def indexed_name_causes(job: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """``ValidateJob``'s last check, made on creates only: an Indexed Job's name with its last
    index (the hostname of its last pod) must be a DNS label."""
    spec = job.get("spec") or {}
    completions = spec.get("completions")
    indexed = spec.get("completionMode") == "Indexed"
    if not indexed or not isinstance(completions, int) or completions <= 0:
        return []
    name = str((job.get("metadata") or {}).get("name") or "")
    hostname = f"{name}-{completions - 1}"
    if not dns_label_errors(hostname):
        return []
    detail = f"will not able to create pod with invalid DNS label: {hostname}"
    return [invalid("metadata.name", go_quoted(name), detail)]


def _immutable(path: str, new: Any, old: Any, shown: str) -> Iterator[tuple[str, Cause]]:
    if new != old:
        yield invalid(path, shown, "field is immutable")


def _resources_taken(old: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    """A suspended Job's old pod spec with what its update may change taken from the new one:
    each container's resources, and the scheduling directives (node selector, tolerations,
    scheduling gates, node affinity)."""
    new = template.get("spec") or {}
    taken = dict(old)
    for key in ("containers", "initContainers"):
        olds, news = list(old.get(key) or ()), list(new.get(key) or ())
        if olds and len(olds) == len(news):
            taken[key] = [{**was, "resources": now.get("resources")}
                          if was.get("name") == now.get("name") else was
                          for was, now in zip(olds, news, strict=True)]  # fmt: skip
            for item in taken[key]:
                if item.get("resources") is None:
                    item.pop("resources", None)
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        taken.pop(key, None)
        if key in new:
            taken[key] = new[key]
    affinity = dict(taken.get("affinity") or {})
    affinity.pop("nodeAffinity", None)
    if (new.get("affinity") or {}).get("nodeAffinity") is not None:
        affinity["nodeAffinity"] = new["affinity"]["nodeAffinity"]
    if affinity:
        taken["affinity"] = affinity
    else:
        taken.pop("affinity", None)
    return taken


def job_update_causes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a Job's update (``ValidateJobSpecUpdate``): the spec as a Job's, and what
    may not change (the template of a Job that is not suspended)."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    causes = [*_job_spec(after, "spec"), *_job_selector(after, "spec")]
    completions = after.get("completions")
    if completions != before.get("completions"):
        if after.get("completionMode") != "Indexed":
            causes.append(
                invalid("spec.completions", json.dumps(completions), "field is immutable")
            )
        elif completions is not None and completions != after.get("parallelism"):
            detail = "can only be modified in tandem with spec.parallelism"
            causes.append(invalid("spec.completions", str(completions), detail))
    causes += _immutable("spec.selector", after.get("selector"), before.get("selector"),
                         _selector_json(after.get("selector")))  # fmt: skip
    template = after.get("template") or {}
    if before.get("suspend"):  # a suspended Job that never ran: its pods' resources may change
        pod = template.get("spec") or {}
        was = _resources_taken((before.get("template") or {}).get("spec") or {}, template)
        causes += _immutable("spec.template.spec", pod, was, spec_json(pod))
    else:
        causes += _immutable("spec.template", template, before.get("template") or {},
                             template_json(template))  # fmt: skip
    mode = after.get("completionMode")
    causes += _immutable("spec.completionMode", mode, before.get("completionMode"),
                         go_quoted(str(mode)) if mode is not None else "null")  # fmt: skip
    return causes


# -- CronJobs -------------------------------------------------------------------------------------

_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_NAMES: tuple[Mapping[str, int], ...] = (
    {},
    {},
    {},
    {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug",
                                     "sep", "oct", "nov", "dec"))},
    {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))},
)  # fmt: skip


def _number(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError(f"failed to parse int from {text}: strconv.Atoi: parsing "
                         f"{json.dumps(text)}: invalid syntax")  # fmt: skip
    return int(text)


def _range(expression: str, bounds: tuple[int, int], names: Mapping[str, int]) -> None:
    """robfig/cron's ``getRange``: ``*``, ``?``, ``a``, ``a-b``, each with ``/step``."""
    low, high = bounds
    parts = expression.split("/")
    spans = parts[0].split("-")
    single = False
    if spans[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _number(spans[0], names)
        if len(spans) == 1:
            end, single = start, True
        elif len(spans) == 2:
            end = _number(spans[1], names)
        else:
            raise ValueError(f"too many hyphens: {expression}")
    if len(parts) == 2:
        step = _number(parts[1], {})
        if single:
            end = high
        if step == 0:
            raise ValueError(f"step of range should be a positive number: {expression}")
    elif len(parts) > 2:
        raise ValueError(f"too many slashes: {expression}")
    if start < low:
        raise ValueError(f"beginning of range ({start}) below minimum ({low}): {expression}")
    if end > high:
        raise ValueError(f"end of range ({end}) above maximum ({high}): {expression}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")


def schedule_error(schedule: str) -> str | None:
    """What Kubernetes' cron parser (robfig/cron, five fields and descriptors) says of a
    schedule, if it refuses it. A leading ``TZ=<zone> `` (or ``CRON_TZ=``) is its zone."""
    if schedule.startswith(("TZ=", "CRON_TZ=")):
        space, equals = schedule.find(" "), schedule.find("=")
        if space < 0:  # Go's slice panics, recovered
            return "invalid schedule format: runtime error: slice bounds out of range [:-1]"
        zone = schedule[equals + 1 : space]
        if zone not in ("", "UTC", "Local"):
            try:
                zoneinfo.ZoneInfo(zone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                return f"provided bad location {zone}: unknown time zone {zone}"
        schedule = schedule[space:].strip()
    if schedule.startswith("@"):
        if schedule in _DESCRIPTORS or schedule.startswith("@every "):
            return None
        return f"unrecognized descriptor: {schedule}"
    fields = schedule.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for field, bounds, names in zip(fields, _BOUNDS, _NAMES, strict=True):
            for expression in field.split(","):
                _range(expression, bounds, names)
    except ValueError as exc:
        return str(exc)
    return None


_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _zone_error(zone: str) -> str | None:
    """``validateTimeZone``: an IANA time zone this machine knows, not ``Local``."""
    if not zone:
        return "timeZone must be nil or non-empty string"
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.match(part):
            return f"unknown time zone {zone}"
    if zone.lower() == "local":
        return (
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        )
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {zone}"
    return None


def cron_job_causes(cron_job: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The errors of a CronJob's spec (``ValidateCronJobSpec``), beyond its metadata's."""
    spec = cron_job.get("spec") or {}
    causes: list[tuple[str, Cause]] = []
    schedule = str(spec.get("schedule") or "")
    if not schedule:
        causes.append(required("spec.schedule"))
    elif (error := schedule_error(schedule)) is not None:
        causes.append(invalid("spec.schedule", go_quoted(schedule), error))
    if "TZ" in schedule:
        detail = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        causes.append(invalid("spec.schedule", go_quoted(schedule), detail))
    if (zone := spec.get("timeZone")) is not None and (error := _zone_error(str(zone))):
        causes.append(invalid("spec.timeZone", go_quoted(str(zone)), error))
    policy = str(spec.get("concurrencyPolicy") or "")
    if not policy:
        causes.append(required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        causes.append(unsupported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    causes += _nonnegative(spec, "spec", "startingDeadlineSeconds", "successfulJobsHistoryLimit",
                           "failedJobsHistoryLimit")  # fmt: skip
    job = (spec.get("jobTemplate") or {}).get("spec") or {}
    where = "spec.jobTemplate.spec"
    if job.get("manualSelector"):
        message = 'Unsupported value: true: supported values: "nil", "false"'
        causes.append((f"{where}.manualSelector",
                       {"reason": "FieldValueNotSupported", "message": message}))  # fmt: skip
    if job.get("selector") is not None:
        shown = _selector_json(job["selector"])
        causes.append(invalid(f"{where}.selector", shown, "`selector` will be auto-generated"))
    causes += _job_spec(job, where)
    return causes
