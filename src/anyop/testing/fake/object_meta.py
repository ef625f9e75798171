"""An object's ``metadata`` checked as kube-apiserver checks every kind's (``ObjectMeta``).

Pure. Labels, annotations, owner references and finalizers, with apimachinery's messages and
in its order (``validateObjectMetaAccessorWithOptsCommon`` on create,
``ValidateObjectMetaAccessorUpdate`` on update, which does not check finalizer names). The
name, the system fields and the finalizers added during deletion are checked elsewhere
(:mod:`anyop.testing.fake.objects`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from anyop.testing.fake.go_json import go_quoted

__all__ = [
    "DNS_LABEL",
    "DNS_LABEL_HINT",
    "DNS_SUBDOMAIN",
    "DNS_SUBDOMAIN_HINT",
    "PERCENT",
    "PERCENT_HINT",
    "WILDCARD_SUBDOMAIN",
    "WILDCARD_SUBDOMAIN_HINT",
    "label_causes",
    "label_key_errors",
    "dns_label_errors",
    "dns_subdomain_errors",
    "label_value_errors",
    "meta_annotation_causes",
    "metadata_causes",
    "object_meta_causes",
]

Cause = dict[str, str]

_KEY_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_KEY = re.compile(f"^{_KEY_FORMAT}$")
_VALUE_FORMAT = f"({_KEY_FORMAT})?"
_VALUE = re.compile(f"^{_VALUE_FORMAT}$")
_LABEL_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FORMAT = f"{_LABEL_FORMAT}(\\.{_LABEL_FORMAT})*"
DNS_LABEL = re.compile(f"^{_LABEL_FORMAT}$")
"""An RFC 1123 label (a namespace's name, a container's)."""
DNS_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FORMAT}$")
"""An RFC 1123 subdomain (most objects' names, a label key's prefix)."""
_KEY_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_ANNOTATIONS_LIMIT = 256 * 1024
_ORPHAN, _FOREGROUND = "orphan", "foregroundDeletion"
_STANDARD_FINALIZERS = ("kubernetes", _ORPHAN, _FOREGROUND)


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: examples each followed by ``', '``, then ``or``."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


PERCENT = re.compile("^[0-9]+%$")
PERCENT_HINT = _regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'",
    "[0-9]+%",
    "1%",
    "93%",
)
"""``IsValidPercent``'s message (a Deployment's ``maxSurge`` and ``maxUnavailable``)."""


DNS_LABEL_HINT = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character",
    _LABEL_FORMAT,
    "my-name",
    "123-abc",
)
"""apimachinery's message for what is not an RFC 1123 label."""
DNS_SUBDOMAIN_HINT = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character", _SUBDOMAIN_FORMAT,
    "example.com")  # fmt: skip
"""apimachinery's message for what is not an RFC 1123 subdomain."""


def dns_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label``: its length, then its form (a valid subdomain's dots named)."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if DNS_LABEL.match(value):
        return errors
    return [*errors, "must not contain dots" if DNS_SUBDOMAIN.match(value) else DNS_LABEL_HINT]


def dns_subdomain_errors(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: its length, then its form."""
    errors = ["must be no more than 253 characters"] if len(value) > 253 else []
    return errors if DNS_SUBDOMAIN.match(value) else [*errors, DNS_SUBDOMAIN_HINT]


DNS_1035 = re.compile("^[a-z]([-a-z0-9]*[a-z0-9])?$")
"""An RFC 1035 label (a Service's name, a webhook's admission review version)."""
DNS_1035_HINT = _regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character", "[a-z]([-a-z0-9]*[a-z0-9])?",
    "my-name", "abc-123")  # fmt: skip
"""apimachinery's message for what is not an RFC 1035 label."""
WILDCARD_SUBDOMAIN = re.compile(f"^\\*\\.{_SUBDOMAIN_FORMAT}$")
WILDCARD_SUBDOMAIN_HINT = _regex_error(
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character", f"\\*\\.{_SUBDOMAIN_FORMAT}", "*.example.com")  # fmt: skip
"""apimachinery's message for what is not a wildcard subdomain (``*.example.com``)."""


def label_key_errors(key: str) -> list[str]:
    """``IsLabelKey`` (a qualified name): an optional DNS subdomain prefix and ``/``, a name."""
    parts = key.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        rule = _regex_error(_KEY_RULE, _KEY_FORMAT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {rule} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errors.append("prefix part must be no more than 253 bytes")
            if not DNS_SUBDOMAIN.match(prefix):
                errors.append(f"prefix part {DNS_SUBDOMAIN_HINT}")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not _KEY.match(name):
        errors.append("name part " + _regex_error(_KEY_RULE, _KEY_FORMAT, "MyName", "my.name",
                                                  "123-abc"))  # fmt: skip
    return errors


def label_value_errors(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 63:
        errors.append("must be no more than 63 bytes")
    if not _VALUE.match(value):
        rule = (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character"
        )
        errors.append(_regex_error(rule, _VALUE_FORMAT, "MyValue", "my_value", "12345"))
    return errors


def _invalid(field: str, shown: str, detail: str) -> tuple[str, Cause]:
    return field, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {detail}"}


def label_causes(labels: Mapping[str, Any], field: str) -> Iterator[tuple[str, Cause]]:
    """``ValidateLabels``: each key a qualified name, each value a label value."""
    for key, value in labels.items():
        for error in label_key_errors(key):
            yield _invalid(field, go_quoted(key), error)
        for error in label_value_errors(str(value)):
            yield _invalid(field, go_quoted(str(value)), error)


def meta_annotation_causes(
    annotations: Mapping[str, Any], field: str = "metadata.annotations"
) -> Iterator[tuple[str, Cause]]:
    """``ValidateAnnotations``: each key a qualified name (lowercased), all of them at most
    256 KiB."""
    for key in annotations:
        for error in label_key_errors(key.lower()):
            yield _invalid(field, go_quoted(key), error)
    size = sum(len(key) + len(str(value)) for key, value in annotations.items())
    if size * 4 > _ANNOTATIONS_LIMIT:  # in characters it may be well below: count the bytes
        size = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        message = f"Too long: may not be more than {_ANNOTATIONS_LIMIT} bytes"
        yield field, {"reason": "FieldValueTooLong", "message": message}


def _version_of(api_version: str) -> str:
    """The version of an ``apiVersion`` as ``schema.ParseGroupVersion`` reads it ("" if not)."""
    parts = api_version.split("/")
    if api_version == "" or len(parts) > 2:
        return ""
    return parts[-1]


_REFERENCE_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


def _reference_json(reference: Mapping[str, Any]) -> dict[str, Any]:
    """An owner reference as Go's ``json.Marshal`` writes it (its two flags ``omitempty``)."""
    shown: dict[str, Any] = {}
    for field in _REFERENCE_FIELDS:
        value = reference.get(field)
        if field in ("controller", "blockOwnerDeletion"):
            if value is not None:
                shown[field] = value
        else:
            shown[field] = value if value is not None else ""
    return shown


def _owner_references(references: list[Any]) -> Iterator[tuple[str, Cause]]:
    where = "metadata.ownerReferences"
    controller = ""
    for reference in references:
        if not isinstance(reference, Mapping):
            continue
        if not _version_of(str(reference.get("apiVersion") or "")):
            value = go_quoted(str(reference.get("apiVersion") or ""))
            yield _invalid(f"{where}.apiVersion", value, "version must not be empty")
        for field in ("kind", "name", "uid"):
            if not reference.get(field):
                value = go_quoted(str(reference.get(field) or ""))
                yield _invalid(f"{where}.{field}", value, "must not be empty")
        if reference.get("controller") is True:
            current = f"{reference.get('kind') or ''}/{reference.get('name') or ''}"
            if controller:
                listed = [_reference_json(r) for r in references if isinstance(r, Mapping)]
                shown = json.dumps(listed, separators=(",", ":"), ensure_ascii=False)
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {controller} and {current}"
                )
                yield _invalid(where, shown, detail)
            else:
                controller = current


def _finalizers(finalizers: list[Any]) -> Iterator[tuple[str, Cause]]:
    for finalizer in finalizers:
        for error in label_key_errors(str(finalizer)):
            yield _invalid("metadata.finalizers", go_quoted(str(finalizer)), error)
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        shown = json.dumps(finalizers, separators=(",", ":"), ensure_ascii=False)
        detail = f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set"
        yield _invalid("metadata.finalizers", shown, detail)


def metadata_causes(
    metadata: Mapping[str, Any], *, creating: bool, kube: bool = False
) -> list[tuple[str, Cause]]:
    """The errors of an object's decoded ``metadata``: ``(field path, cause)`` pairs.

    ``creating``: the checks of a create, which include the finalizers' names; an update's do
    not (a finalizer added with a bad name is only warned about, for custom resources).
    ``kube``: a built-in kind's checks, which refuse a finalizer name without a ``/`` that is
    not one of Kubernetes' own, create or update.
    """
    shared, names, kubes = _parts(metadata)
    return [*shared, *(names if creating else ()), *(kubes if kube else ())]


def _parts(
    metadata: Mapping[str, Any],
) -> tuple[list[tuple[str, Cause]], list[tuple[str, Cause]], list[tuple[str, Cause]]]:
    """The errors every check finds (labels, annotations, owner references), a create's of the
    finalizers' names, and a built-in kind's of them."""
    shared: list[tuple[str, Cause]] = []
    if labels := metadata.get("labels"):
        shared += label_causes(labels, "metadata.labels")
    if annotations := metadata.get("annotations"):
        shared += meta_annotation_causes(annotations)
    if references := metadata.get("ownerReferences"):
        shared += _owner_references(list(references))
    finalizers = list(metadata.get("finalizers") or ())
    if not finalizers:
        return shared, [], []
    kubes = []
    for index, finalizer in enumerate(finalizers):
        if "/" not in str(finalizer) and finalizer not in _STANDARD_FINALIZERS:
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            shown = go_quoted(str(finalizer))
            kubes.append(_invalid(f"metadata.finalizers[{index}]", shown, detail))
    return shared, list(_finalizers(finalizers)), kubes


def object_meta_causes(
    metadata: Mapping[str, Any],
    *,
    custom: bool,
    updating: list[tuple[str, Cause]] | None = None,
    own_update: Sequence[tuple[str, Cause]] = (),
    own_create: Sequence[tuple[str, Cause]] = (),
    kind_checks: str = "update+create",
    kube_finalizers: bool = True,
) -> list[tuple[str, Cause]]:
    """All the metadata errors of a create (``updating`` None) or of an update, in the order
    and number kube-apiserver reports them: an update checks the metadata as a create does and
    as an update does (``updating``: what that finds beyond :func:`metadata_causes`, the
    finalizers added during deletion), then the kind's own checks again: a custom resource's
    as an update, a built-in kind's as an update and as a create (its ``Validate<Kind>Update``
    calls ``Validate<Kind>``). A built-in kind's own checks come after its metadata's: of an
    update alone (``own_update``), then of the object (``own_create``).

    ``kind_checks`` says what a built-in kind's own update validation checks of the metadata
    besides the API server's: ``update+create`` (most), ``update`` (a ``Validate<Kind>Update``
    that checks the spec alone after the metadata update: Deployments, Leases, Services...),
    ``create`` (as a create checks it, then the object's: VolumeAttachments, CSINodes),
    ``create+update`` (as a create, the object's, then as an update and the update's own:
    CSIStorageCapacities) or ``none`` (``v1`` Events).

    ``kube_finalizers``: a built-in kind's metadata is checked by the core group's validation,
    which refuses a finalizer name without a ``/`` that is not one of Kubernetes' own (not by
    apimachinery's alone, as Leases' and webhook configurations' are)."""
    shared, names, kubes = _parts(metadata)
    own_kube = kubes if kube_finalizers and not custom else []
    if updating is None:
        return [*shared, *names, *own_kube, *own_create]
    common, update = [*shared, *names], [*updating, *shared]
    if custom:
        return common + update + update
    if kind_checks == "create":
        return [*common, *update, *common, *own_kube, *own_update, *own_create]
    if kind_checks == "create+update":
        return [*common, *update, *common, *own_kube, *own_create, *update, *own_kube, *own_update]
    again = {"none": [], "update": [*update, *own_kube], "update+create": [*update, *own_kube]}
    tail = [*common, *own_kube] if kind_checks == "update+create" else []
    return [*common, *update, *again[kind_checks], *own_update, *tail, *own_create]
