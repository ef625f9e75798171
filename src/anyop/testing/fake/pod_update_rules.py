"""What kube-apiserver's ``ValidatePodUpdate`` checks of an update of a Pod: its containers
neither added nor removed, each with an image, its deadline only lowered, its tolerations only
added to, and nothing else of its spec changed, with Go's messages (and its diff of the spec).

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.apparmor_rules import annotation_update_causes
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.pod_rules import invalid, required, toleration_causes
from anyop.testing.fake.pod_spec_diff import pod_spec_diff, with_sent_empties

__all__ = ["pod_update_causes"]

Cause = dict[str, str]


def _forbidden(field: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}"}


def pod_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any], *, raw: Mapping[str, Any] | None = None
) -> list[tuple[str, Cause]]:
    """``ValidatePodUpdate``'s own checks: the containers may not be added or removed (then it
    stops), each keeps an image, and nothing else but a few fields may change (``raw``: the
    update as sent, whose empty lists and maps its refusal's diff shows)."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    causes = annotation_update_causes((old.get("metadata") or {}).get("annotations"),
                                      (new.get("metadata") or {}).get("annotations"))  # fmt: skip
    for key in ("containers", "initContainers"):
        containers = list(after.get(key) or ())
        if len(containers) != len(before.get(key) or ()):
            detail = "pod updates may not add or remove containers"
            return [*causes, _forbidden(f"spec.{key}", detail)]
        for index, container in enumerate(containers):
            image = str((container if isinstance(container, Mapping) else {}).get("image") or "")
            if not image:
                causes.append(required(f"spec.{key}[{index}].image"))
            elif image.strip() != image:
                detail = "must not have leading or trailing whitespace"
                causes.append(invalid(f"spec.{key}[{index}].image", go_quoted(image), detail))
    deadline, stop = _deadline_update(before.get("activeDeadlineSeconds"),
                                      after.get("activeDeadlineSeconds"))  # fmt: skip
    causes += deadline
    if stop:
        return causes
    causes += _added_tolerations(list(before.get("tolerations") or ()),
                                 list(after.get("tolerations") or ()))  # fmt: skip
    munged = _munged(before, after)
    if before != after and pod_spec_diff(before, munged):  # Go: nil and empty are equal
        sent = raw.get("spec") if isinstance(raw, Mapping) else None
        difference = pod_spec_diff(before, with_sent_empties(munged, sent))
        causes.append(_forbidden("spec", f"{_POD_SPEC_HINT}\n{difference}"))
    return causes


def _deadline_update(old: Any, new: Any) -> tuple[list[tuple[str, Cause]], bool]:
    """What ``ValidatePodUpdate`` says of a changed ``activeDeadlineSeconds``, and whether it
    stops there: it may be set, or lowered, and stays within an int32."""
    field = "spec.activeDeadlineSeconds"
    if new is None:
        if old is not None:
            detail = "must not update from a positive integer to nil value"
            return [invalid(field, "null", detail)], False
        return [], False
    if not 0 <= new <= 2**31 - 1:
        return [invalid(field, str(new), "must be between 0 and 2147483647, inclusive")], True
    if old is not None and old < new:
        return [invalid(field, str(new), "must be less than or equal to previous value")], True
    return [], False


def _added_tolerations(old: list[Any], new: list[Any]) -> list[tuple[str, Cause]]:
    """``validateOnlyAddedTolerations``: each old toleration stays, but for its seconds."""

    def fixed(toleration: Any) -> tuple[Any, ...]:
        item = toleration if isinstance(toleration, Mapping) else {}
        return tuple(str(item.get(k) or "") for k in ("key", "operator", "value", "effect"))

    kept = {fixed(toleration) for toleration in new}
    if any(fixed(toleration) not in kept for toleration in old):
        detail = "existing toleration can not be modified except its tolerationSeconds"
        return [_forbidden("spec.tolerations", detail)]
    return list(toleration_causes(new, "spec.tolerations"))


def _munged(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A Pod's new spec with what may change taken from the old one, as ``ValidatePodUpdate``
    compares it: the images, the deadline, the scheduling gates, the tolerations (checked on
    their own), and a grace period of 1 that was negative."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        if key in new:
            olds = list(old.get(key) or ())
            munged[key] = [{**item, "image": (olds[index] or {}).get("image")}
                           for index, item in enumerate(new[key])]  # fmt: skip
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(key, None)
        if key in old:
            munged[key] = old[key]
    grace = old.get("terminationGracePeriodSeconds")
    if grace is not None and grace < 0 and new.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    return munged


_POD_SPEC_HINT = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)
