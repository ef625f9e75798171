"""CertificateSigningRequests (``certificates.k8s.io/v1``) as kube-apiserver's strategy and
validation treat them (``pkg/registry/certificates/certificates/strategy.go``,
``pkg/apis/certificates/validation``).

Pure. :func:`csr_prepared` is the strategy: a new request gets its requester (the fake's
admin, :mod:`~anyop.testing.fake.identity`) and no status; an update of the object keeps its
spec and status, of ``/status`` its spec and Approved/Denied conditions, of ``/approval`` all but
the conditions; conditions get their timestamps. :func:`csr_causes` lists the validation errors
of a new or updated request: its PEM ``CERTIFICATE REQUEST`` (parsed and its signature checked
with ``cryptography``), usages, signer name, expiration, conditions and certificate.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.field_errors import duplicate, forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.identity import admin_user
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.object_meta import dns_label_errors, dns_subdomain_errors
from anyop.testing.fake.statuses import Cause

__all__ = ["CSR_KEY", "csr_causes", "csr_prepared"]

Body = dict[str, Any]
Causes = list[tuple[str, Cause]]
CSR_KEY = ("certificates.k8s.io", "CertificateSigningRequest")

_USAGES = sorted(
    (
        "signing",
        "digital signature",
        "content commitment",
        "key encipherment",
        "key agreement",
        "data encipherment",
        "cert sign",
        "crl sign",
        "encipher only",
        "decipher only",
        "any",
        "server auth",
        "client auth",
        "code signing",
        "email protection",
        "s/mime",
        "ipsec end system",
        "ipsec tunnel",
        "ipsec user",
        "timestamping",
        "ocsp signing",
        "microsoft sgc",
        "netscape sgc",
    )
)
_TRUE_ONLY = ("Approved", "Denied", "Failed")
_LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
_PEM = re.compile(
    rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL
)  # (Go's pem.Decode: the first well-formed block)


# -- the strategy --------------------------------------------------------------------------------


def csr_prepared(
    obj: Body,
    *,
    old: Mapping[str, Any] | None,
    sent: Mapping[str, Any] | None = None,
    subresource: str | None = None,
    now: str,
) -> Body:
    """A request as the strategy leaves it before validation (``old``: the stored one of an
    update; ``now``: the time conditions are stamped with)."""
    spec = obj.get("spec")
    if old is None:
        if isinstance(spec, dict):
            for field in ("username", "uid", "groups", "extra"):
                spec.pop(field, None)
            user = admin_user()
            spec["username"], spec["groups"] = user["username"], user["groups"]
            spec["extra"] = user["extra"]
        obj.pop("status", None)
        return obj
    old_status = old.get("status") or {}
    obj["spec"] = json_copy(old.get("spec") or {})
    if subresource is None:
        _set_status(obj, json_copy(old_status))
    elif subresource == "status":
        status = dict(obj.get("status") or {})
        conditions = [
            dict(c) if isinstance(c, Mapping) else c for c in status.get("conditions") or ()
        ]
        for kind in ("Approved", "Denied"):
            _preserved(conditions, list(old_status.get("conditions") or ()), kind)
        _stamped(conditions, old_status, now)
        if conditions:
            status["conditions"] = conditions
        _set_status(obj, status)
    elif subresource == "approval":
        conditions = [
            dict(c) if isinstance(c, Mapping) else c
            for c in ((sent or obj).get("status") or {}).get("conditions") or ()
        ]
        _stamped(conditions, old_status, now)
        status = {k: json_copy(v) for k, v in old_status.items() if k != "conditions"}
        if conditions:
            status["conditions"] = conditions
        _set_status(obj, status)
    return obj


def _set_status(obj: Body, status: Mapping[str, Any]) -> None:
    obj["status"] = dict(status)


def _preserved(new: list[Any], old: list[Any], kind: str) -> None:
    """``preserveConditionInstances``: the old instances of a type, where as many remain."""
    new_at = [i for i, c in enumerate(new) if isinstance(c, Mapping) and c.get("type") == kind]
    old_at = [c for c in old if isinstance(c, Mapping) and c.get("type") == kind]
    if len(new_at) == len(old_at):
        for index, condition in zip(new_at, old_at, strict=True):
            new[index] = json_copy(condition)


def _stamped(conditions: list[Any], old_status: Mapping[str, Any], now: str) -> None:
    """``populateConditionTimestamps``."""
    old = [c for c in old_status.get("conditions") or () if isinstance(c, Mapping)]
    for condition in conditions:
        if not isinstance(condition, dict):
            continue
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            since = now
            for before in old:
                if (before.get("type"), before.get("status")) == (
                    condition.get("type"),
                    condition.get("status"),
                ) and before.get("lastTransitionTime"):
                    since = before["lastTransitionTime"]
                    break
            condition["lastTransitionTime"] = since


# -- validation ----------------------------------------------------------------------------------


def csr_causes(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    subresource: str | None = None,
) -> Causes:
    """``ValidateCertificateSigningRequest{Create,Update,StatusUpdate,ApprovalUpdate}`` without
    the metadata's checks (the caller's)."""
    spec = obj.get("spec") or {}
    old_spec = (old or {}).get("spec") or {}
    old_conditions = _conditions(old or {})
    causes: Causes = []
    covered: Causes = []  # (declarative validation's: after the others: usages, then signer)
    request = spec.get("request")
    if (problem := _request_problem(request)) is not None:
        causes.append(field_invalid("spec.request", request, problem))  # (none: null)
    usages = list(spec.get("usages") or ())
    if not usages:
        covered.append(required_because("spec.usages"))
    lenient = old is not None
    if not (lenient and any(u not in _USAGES for u in old_spec.get("usages") or ())):
        for index, usage in enumerate(usages):
            if usage not in _USAGES:
                causes.append(_not_supported(f"spec.usages[{index}]", usage, _USAGES))
    if not (lenient and _has_duplicates(list(old_spec.get("usages") or ()))):
        seen: set[Any] = set()
        for index, usage in enumerate(usages):
            if usage in seen:
                causes.append(duplicate(f"spec.usages[{index}]", str(usage)))
            seen.add(usage)
    signer = str(spec.get("signerName") or "")
    if signer == _LEGACY_SIGNER and old_spec.get("signerName") != _LEGACY_SIGNER:
        causes.append(
            field_invalid(
                "spec.signerName",
                signer,
                "the legacy signerName is not allowed via this API version",
            )
        )
    elif not signer:
        covered.append(required_because("spec.signerName"))
    elif signer != _LEGACY_SIGNER:
        causes += signer_name_causes("spec.signerName", signer)
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, int) and seconds < 600:
        causes.append(
            field_invalid(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration less than 600 seconds (10 minutes)",
            )
        )
    causes += _condition_causes(_conditions(obj), old_conditions, updating=old is not None)
    certificate = (obj.get("status") or {}).get("certificate")
    old_certificate = ((old or {}).get("status") or {}).get("certificate")
    arbitrary = old is not None and certificate == old_certificate
    if not arbitrary and (problem := _certificate_problem(certificate)) is not None:
        causes.append(
            (
                "status.certificate",
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "<certificate data>": {problem}',
                },
            )
        )
    if old is not None:
        causes += _update_causes(obj, old, subresource=subresource)
    return causes + covered


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or ()
    return [c for c in found if isinstance(c, Mapping)]


def _has_duplicates(values: list[Any]) -> bool:
    return len({str(v) for v in values}) != len(values)


def _not_supported(field: str, value: Any, choices: list[str]) -> tuple[str, Cause]:
    listed = ", ".join(f'"{choice}"' for choice in choices)
    message = f"Unsupported value: {go_quoted(str(value))}: supported values: {listed}"
    return field, {"reason": "FieldValueNotSupported", "message": message}


def _condition_causes(
    conditions: list[Mapping[str, Any]], old: list[Mapping[str, Any]], *, updating: bool
) -> Causes:
    causes: Causes = []
    path = "status.conditions"
    old_types = [c.get("type") for c in old]
    empty_ok = updating and "" in old_types
    duplicates_ok = updating and len(set(old_types)) != len(old_types)
    both_ok = updating and {"Approved", "Denied"} <= set(old_types)
    seen: set[Any] = set()
    approved = denied = False
    for index, condition in enumerate(conditions):
        kind, status = condition.get("type") or "", condition.get("status") or ""
        if not kind and not empty_ok:
            causes.append(required_because(f"{path}[{index}].type"))
        allowed = ["True"] if kind in _TRUE_ONLY else ["False", "True", "Unknown"]
        if not status:
            causes.append(required_because(f"{path}[{index}].status"))
        elif status not in allowed:
            causes.append(_not_supported(f"{path}[{index}].status", status, allowed))
        if not both_ok and kind in ("Approved", "Denied"):
            approved, denied = approved or kind == "Approved", denied or kind == "Denied"
            if approved and denied:
                causes.append(
                    field_invalid(
                        path, kind, "Approved and Denied conditions are mutually exclusive"
                    )
                )
        if not duplicates_ok:
            if kind in seen:
                causes.append(duplicate(f"{path}[{index}].type", str(kind)))
            seen.add(kind)
    return causes


def _update_causes(
    obj: Mapping[str, Any], old: Mapping[str, Any], *, subresource: str | None
) -> Causes:
    causes: Causes = []
    path = "status.conditions"
    new_conditions, old_conditions = _conditions(obj), _conditions(old)
    for kind in ("Approved", "Denied", "Failed"):
        before = [c for c in old_conditions if c.get("type") == kind]
        after = [c for c in new_conditions if c.get("type") == kind]
        if len(after) < len(before):
            causes.append(forbidden(path, f'updates may not remove a condition of type "{kind}"'))
    if subresource != "approval":
        for kind in ("Approved", "Denied"):
            before = [c for c in old_conditions if c.get("type") == kind]
            after = [c for c in new_conditions if c.get("type") == kind]
            if len(after) > len(before):
                causes.append(forbidden(path, f'updates may not add a condition of type "{kind}"'))
            elif len(after) == len(before) and after != before:
                causes.append(
                    forbidden(path, f'updates may not modify a condition of type "{kind}"')
                )
    certificate = (obj.get("status") or {}).get("certificate") or ""
    before_certificate = (old.get("status") or {}).get("certificate") or ""
    if certificate != before_certificate:
        if subresource != "status":
            causes.append(
                forbidden("status.certificate", "updates may not set certificate content")
            )
        elif before_certificate:
            causes.append(
                forbidden(
                    "status.certificate", "updates may not modify existing certificate content"
                )
            )
    return causes


def signer_name_causes(field: str, signer: str) -> Causes:
    """``ValidateSignerName``."""
    if not signer:
        return [required_because(field)]
    segments = signer.split("/")
    if len(segments) != 2:
        return [
            field_invalid(
                field,
                signer,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )
        ]
    domain, name = segments
    causes: Causes = []
    if len(domain) > 253:
        causes.append(too_long(field, 253))
    labels = domain.split(".")
    for label in labels:
        if errors := dns_label_errors(label):
            causes += [
                field_invalid(field, domain, f"validating label {go_quoted(label)}: {e}")
                for e in errors
            ]
            break
    if len(labels) < 2:
        causes.append(
            field_invalid(
                field, domain, "should be a domain with at least two segments separated by dots"
            )
        )
    for label in name.split("."):
        if errors := dns_subdomain_errors(label):
            causes += [
                field_invalid(field, name, f"validating label {go_quoted(label)}: {e}")
                for e in errors
            ]
            break
    return causes


def _request_problem(request: Any) -> str | None:
    """``certificates.ParseCSR`` and the signature check: their error, or ``None``."""
    try:
        data = base64.b64decode(str(request or ""), validate=True)
    except (binascii.Error, ValueError):
        data = b""
    found = _PEM.search(data)
    if found is None or found[1] != b"CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    from cryptography import x509

    try:
        body = base64.b64decode(b"".join(found[2].split()), validate=True)
        parsed = x509.load_der_x509_csr(body)
    except (binascii.Error, ValueError):
        return "asn1: structure error: tags don't match"
    if not parsed.is_signature_valid:
        return "x509: signature verification failure"
    return None


def _certificate_problem(certificate: Any) -> str | None:
    """``validateCertificate`` of ``status.certificate`` (base64 of PEM blocks), if set."""
    if not certificate:
        return None
    try:
        data = base64.b64decode(str(certificate), validate=True)
    except (binascii.Error, ValueError):
        return "must contain at least one CERTIFICATE PEM block"
    from cryptography import x509

    blocks = 0
    for found in _PEM.finditer(data):
        if found[1] != b"CERTIFICATE":
            return f"only CERTIFICATE PEM blocks are allowed, found {go_quoted(found[1].decode())}"
        try:
            x509.load_der_x509_certificate(base64.b64decode(b"".join(found[2].split())))
        except (binascii.Error, ValueError):
            return "x509: malformed certificate"
        blocks += 1
    return None if blocks else "must contain at least one CERTIFICATE PEM block"
