"""What kube-apiserver's Go code checks of a Secret beyond its keys, with its messages.

Pure. ``ValidateSecret``: what a Secret of each built-in type must hold (a TLS Secret its
certificate and key, a basic-auth one a user name or a password, a Docker configuration one
its configuration as a JSON object, a service account token one the account's name), and the
total size of its data.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake import go_json
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.pod_rules import invalid, required

__all__ = ["secret_type_causes"]

Cause = dict[str, str]

_SECRET_REQUIRED = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
}


def secret_type_causes(obj: Mapping[str, Any]) -> Iterator[tuple[str, Cause]]:
    """What a Secret of each type must hold (``ValidateSecret``), and its total size."""
    data: Mapping[str, Any] = obj.get("data") or {}
    if sum(len(_bytes(value)) for value in data.values()) > _SECRET_LIMIT:
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
                document = go_json.loads(_bytes(data[key]))
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


def _bytes(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except ValueError:
        return b""
