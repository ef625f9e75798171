"""What kube-apiserver's Go code checks of ConfigMaps and Secrets, with its messages.

Pure. Their keys (``ValidateConfigMap``'s and ``ValidateSecret``'s), what may not change once
``immutable`` is set, and ``ValidateSecret``'s own: what a Secret of each built-in type must
hold (a TLS Secret its certificate and key, a basic-auth one a user name or a password, a
Docker configuration one its configuration as a JSON object, a service account token one the
account's name), and the total size of its data.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake import go_json
from anyop.testing.fake.field_errors import forbidden
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.pod_rules import invalid, required

__all__ = ["config_key_causes", "immutable_data_causes", "secret_bytes", "secret_type_causes"]

Cause = dict[str, str]

_SECRET_REQUIRED = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
}


_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CONFIG_KEY_HINT = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_IMMUTABLE = "field is immutable when `immutable` is set"


def config_key_causes(obj: Mapping[str, Any]) -> list[tuple[str, Cause]]:
    """The keys of a ConfigMap's or a Secret's ``data`` (and ``binaryData``): config keys, not
    ``.`` or ``..`` nor starting with ``..``, none in both maps."""
    causes = []
    for bag in ("data", "binaryData"):
        for key in obj.get(bag) or {}:
            where, shown = f"{bag}[{key}]", go_quoted(key)
            if len(key) > 253:
                causes.append(invalid(where, shown, "must be no more than 253 characters"))
            if not _CONFIG_KEY.match(key):
                causes.append(invalid(where, shown, _CONFIG_KEY_HINT))
            if key in (".", ".."):
                causes.append(invalid(where, shown, f"must not be '{key}'"))
            elif key.startswith(".."):
                causes.append(invalid(where, shown, "must not start with '..'"))
            if bag == "data" and key in (obj.get("binaryData") or {}):
                causes.append(invalid(where, shown, "duplicate of key present in binaryData"))
    return causes


def immutable_data_causes(
    kind: str, old: Mapping[str, Any], new: Mapping[str, Any], raw: Mapping[str, Any] | None
) -> list[tuple[str, Cause]]:
    """``Validate<Kind>Update``'s checks of an immutable ConfigMap or Secret (``kind``): its
    maps compared as Go's ``reflect.DeepEqual`` compares them, where a map of bytes sent empty
    (a Secret's ``data: {}``, a ConfigMap's ``binaryData: {}``) is not the stored one that was
    left out; a map of strings sent empty decodes as one left out (kube-apiserver 1.36.3)."""
    causes = []
    if kind == "Secret" and old.get("type") != new.get("type"):
        causes.append(invalid("type", go_quoted(new.get("type") or ""), "field is immutable"))
    if not old.get("immutable"):
        return causes
    if not new.get("immutable"):
        causes.append(forbidden("immutable", _IMMUTABLE))
    fields = ("data", "binaryData") if kind == "ConfigMap" else ("data",)
    for field in fields:
        value = new.get(field)
        of_bytes = field == "binaryData" or kind == "Secret"
        if value is None and of_bytes and raw is not None and is_map(raw.get(field)):
            value = {}  # decoded to an empty map, not to none
        if old.get(field) != value:
            causes.append(forbidden(field, _IMMUTABLE))
    return causes


def secret_type_causes(obj: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """What a Secret of each type must hold (``ValidateSecret``), and its total size."""
    data: Mapping[str, Any] = obj.get("data") or {}
    if sum(len(secret_bytes(value)) for value in data.values()) > _SECRET_LIMIT:
        message = f"Too long: may not be more than {_SECRET_LIMIT} bytes"
        yield "data", {"reason": "FieldValueTooLong", "message": message}
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get(_ACCOUNT_NAME):
            yield required(f"metadata.annotations[{_ACCOUNT_NAME}]")
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            yield required("data[username]")
            yield required("data[password]")
    elif kind == "kubernetes.io/ssh-auth" and not data.get("ssh-privatekey"):
        yield required("data[ssh-privatekey]")
    for key in _SECRET_REQUIRED.get(str(kind), ()):
        if key not in data:
            yield required(f"data[{key}]")
        elif key.startswith(".docker"):
            try:
                document = go_json.loads(secret_bytes(data[key]))
            except go_json.GoJSONError as exc:
                error = str(exc)
            else:
                is_map = isinstance(document, Mapping)
                error = "" if is_map else go_json.unmarshal_type_error(document, _ANY_MAP)
            if error:
                yield invalid(f"data[{key}]", go_quoted("<secret contents redacted>"), error)
            if kind == "kubernetes.io/dockercfg":
                break


_SECRET_LIMIT = 1024 * 1024
_ACCOUNT_NAME = "kubernetes.io/service-account.name"
_ANY_MAP = "map[string]interface {}"


def secret_bytes(value: Any) -> bytes:
    """A Secret's base64 value decoded (nothing if it is not base64)."""
    try:
        return base64.b64decode(str(value or ""), validate=True)
    except ValueError:
        return b""
