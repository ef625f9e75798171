"""A request's options (its query parameters) read and checked as kube-apiserver does.

Pure. kube-apiserver converts the query into the verb's options (``CreateOptions``,
``ListOptions``, ...) and validates them before it reads the body: a number that does not parse
is a 400 (``strconv.ParseInt: parsing "abc": invalid syntax``), an option out of its values a
422 naming the options kind (``DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy:
...``). A flag is true unless it is ``0`` or ``false`` (any case): ``watch=yes`` watches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.statuses import Cause, StatusError, bad_request, invalid, status_body

__all__ = ["checked_delete", "checked_get", "checked_list", "checked_write", "flag", "integer"]

_DIRECTIVES = ("Strict", "Warn", "Ignore")
_POLICIES = ("Foreground", "Background", "Orphan")
_INT = re.compile(r"[+-]?[0-9]+")
_UINT = re.compile(r"[0-9]+")


def flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean option, as Go's conversion reads one: false only for ``0``, ``false`` (any
    case) and absence; ``f``, ``no`` and an empty value are true."""
    value = query.get(name)
    return value is not None and value != "0" and value.lower() != "false"


def integer(query: Mapping[str, str], name: str) -> int | None:
    """An integer option (``None`` when absent).

    Raises:
        StatusError: 400, it is not a 64-bit integer, with ``strconv.ParseInt``'s words.
    """
    value = query.get(name)
    if value is None:
        return None
    if not _INT.fullmatch(value):
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return number


def checked_write(options: str, query: Mapping[str, str], *, apply: bool | None = None) -> str:
    """Check the options of a create, update or patch (``options``: ``CreateOptions``,
    ``UpdateOptions``, ``PatchOptions``; ``apply``: for a patch, whether it is server-side
    apply); return the ``fieldValidation`` directive (``Warn`` when none is given).

    Raises:
        StatusError: 422, with every cause kube-apiserver's validation finds, in its order.
    """
    causes: list[tuple[str, Cause]] = []
    manager = query.get("fieldManager", "")
    if apply is not None:
        if not apply and "force" in query:
            forbidden = "Forbidden: may not be specified for non-apply patch"
            causes.append(("force", {"reason": "FieldValueForbidden", "message": forbidden}))
        if apply and not manager:
            required = "Required value: is required for apply patch"
            causes.append(("fieldManager", {"reason": "FieldValueRequired", "message": required}))
    if len(manager.encode()) > 128:
        too_long = "Too long: may not be more than 128 bytes"
        causes.append(("fieldManager", {"reason": "FieldValueTooLong", "message": too_long}))
    causes += _dry_run(query)
    directive = query.get("fieldValidation") or ""
    if directive and directive not in _DIRECTIVES:
        supported = ", ".join(f'"{name}"' for name in ("", *sorted(_DIRECTIVES)))
        message = f"Unsupported value: {go_quoted(directive)}: supported values: {supported}"
        causes.append(("fieldValidation", {"reason": "FieldValueNotSupported", "message": message}))
    if causes:
        raise invalid(options, "meta.k8s.io", None, causes=causes)
    return directive or "Warn"


def checked_delete(options: Mapping[str, Any], query: Mapping[str, str]) -> None:
    """Check a delete's options: its body's ``DeleteOptions`` with the query's over them.

    Raises:
        StatusError: 400 for a number that does not parse, 422 for a policy out of its values
            or a ``dryRun`` other than ``All``.
    """
    integer(query, "gracePeriodSeconds")
    causes: list[tuple[str, Cause]] = []
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in _POLICIES:
        supported = ", ".join(f'"{name}"' for name in (*_POLICIES, "nil"))
        message = f"Unsupported value: {go_quoted(str(policy))}: supported values: {supported}"
        causes.append(
            ("propagationPolicy", {"reason": "FieldValueNotSupported", "message": message})
        )
    causes += _dry_run(query)
    if causes:
        raise invalid("DeleteOptions", "meta.k8s.io", None, causes=causes)


def checked_list(query: Mapping[str, str], *, watch: bool) -> None:
    """Check a list's or (``watch``) a watch's options.

    Raises:
        StatusError: 400 for a number or resourceVersion that does not parse, 422 for a
            ``resourceVersionMatch`` or ``sendInitialEvents`` the verb does not take, with every
            cause in kube-apiserver's order.
    """
    integer(query, "limit")
    integer(query, "timeoutSeconds")
    version = query.get("resourceVersion", "")
    if version and (error := _unsigned_error(version)):
        reason = f'resourceVersion: Invalid value: "{version}": {error}'
        raise bad_request(f"invalid resource version: {reason}")
    causes = _watch_causes(query) if watch else _list_causes(query)
    if causes:
        raise invalid("ListOptions", "meta.k8s.io", None, causes=causes)


_MATCH = "resourceVersionMatch"


def _forbidden(field: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}"}


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> tuple[str, Cause]:
    listed = ", ".join(f'"{name}"' for name in supported)
    message = f"Unsupported value: {go_quoted(value)}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _list_causes(query: Mapping[str, str]) -> list[tuple[str, Cause]]:
    causes = []
    if match := query.get(_MATCH, ""):
        if not query.get("resourceVersion"):
            detail = "resourceVersionMatch is forbidden unless resourceVersion is provided"
            causes.append(_forbidden(_MATCH, detail))
        if query.get("continue"):
            causes.append(
                _forbidden(_MATCH, "resourceVersionMatch is forbidden when continue is provided")
            )
        if match not in ("Exact", "NotOlderThan"):
            causes.append(_not_supported(_MATCH, match, ("Exact", "NotOlderThan", "")))
        if match == "Exact" and query.get("resourceVersion") == "0":
            detail = 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
            causes.append(_forbidden(_MATCH, detail))
    if "sendInitialEvents" in query:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def _watch_causes(query: Mapping[str, str]) -> list[tuple[str, Cause]]:
    causes = []
    match = query.get(_MATCH, "")
    initial = "sendInitialEvents" in query
    if initial and match != "NotOlderThan":
        detail = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        causes.append(_forbidden(_MATCH, detail))
    if match:
        if not initial:
            detail = (
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
            )
            causes.append(_forbidden(_MATCH, detail))
        if match != "NotOlderThan":
            causes.append(_not_supported(_MATCH, match, ("NotOlderThan",)))
        if query.get("continue"):
            causes.append(
                _forbidden(_MATCH, "resourceVersionMatch is forbidden when continue is provided")
            )
    return causes


def checked_get(query: Mapping[str, str]) -> None:
    """Check a get's options.

    Raises:
        StatusError: 500 (as kube-apiserver answers it), a resourceVersion that does not parse.
    """
    version = query.get("resourceVersion", "")
    if version and (error := _unsigned_error(version)):
        message = f'resourceVersion: Invalid value: "{version}": {error}'
        raise StatusError(status_body(500, "", message))


def _unsigned_error(text: str) -> str | None:
    """``strconv.ParseUint``'s error for a resourceVersion, if it has one."""
    if not _UINT.fullmatch(text):
        return f'strconv.ParseUint: parsing "{text}": invalid syntax'
    if int(text) >= 2**64:
        return f'strconv.ParseUint: parsing "{text}": value out of range'
    return None


def _dry_run(query: Mapping[str, str]) -> list[tuple[str, Cause]]:
    value = query.get("dryRun")
    if value is None or value == "All":
        return []
    message = f'Unsupported value: [{go_quoted(value)}]: supported values: "All"'
    return [("dryRun", {"reason": "FieldValueNotSupported", "message": message})]
