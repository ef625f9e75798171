"""The kind and version a create's or replace's body names, against its URL's.

Pure (after one read of ``data/scheme.json``, made by ``scripts/fake_scheme.py`` from
kube-apiserver's Go code). kube-apiserver decodes a built-in object by the kind and version its
body names (the URL's where it names none) and converts it to the internal type of the URL's
kind: a kind its scheme does not know is refused (400 ``no kind "X" is registered``), so is one
whose type does not convert (``unknown conversion``), and so is another version of the URL's
internal type (``the API version in the data ...``). A custom resource's body must name a kind
and the URL's version (400), and the CRD's kind (422).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.statuses import StatusError, bad_request, conflict, invalid

__all__ = [
    "OTHER_NAMESPACE",
    "check_identity",
    "check_uid",
    "checked_body_kind",
    "custom_kind_error",
]

OTHER_NAMESPACE = (
    "the namespace of the provided object does not match the namespace sent on the request"
)
_SCHEME = "pkg/runtime/scheme.go:111"  # the legacy scheme's name, where it was made


@functools.cache
def _scheme() -> dict[str, Any]:
    data = resources.files("anyop.testing.fake").joinpath("data/scheme.json").read_text()
    loaded: dict[str, Any] = json.loads(data)
    return loaded


def checked_body_kind(kind: Kind, body: Mapping[str, Any], raw: bytes) -> None:
    """Refuse a create's or replace's decoded body (``raw`` as sent) that kube-apiserver's
    decoder refuses for its ``apiVersion`` and ``kind``.

    Raises:
        StatusError: 400.
    """
    named_version, named_kind = body.get("apiVersion") or "", body.get("kind") or ""
    if not isinstance(named_version, str) or not isinstance(named_kind, str):
        return  # the decoder's type errors are found elsewhere
    if kind.custom:
        if not named_kind:
            raise bad_request(f"the object provided is unrecognized (must be of type "
                              f"{kind.kind}): Object 'Kind' is missing in "
                              f"'{raw.decode(errors='replace')}' ({_summary(raw)})")  # fmt: skip
        if named_version != kind.api_version:
            raise bad_request(_other_version(named_version, kind))
        return
    if error := _builtin_error(kind, named_version or kind.api_version, named_kind or kind.kind):
        raise bad_request(error)


def custom_kind_error(kind: Kind, body: Mapping[str, Any], name: str) -> StatusError | None:
    """The 422 of a custom resource's body of another kind than its CRD's (its strategy's
    ``ValidateTypeMeta``, which names the body's kind)."""
    named = body.get("kind")
    if not isinstance(named, str) or named == kind.kind:
        return None
    cause = {"reason": "FieldValueInvalid", "message": f'Invalid value: "{named}": must be '
             f"{kind.kind}"}  # fmt: skip
    return invalid(named, kind.group, name, causes=[("kind", cause)])


def _builtin_error(kind: Kind, api_version: str, named: str) -> str | None:
    scheme = _scheme()
    target = scheme["groups"].get(kind.group, {})
    internal = target.get("kinds", {}).get(kind.kind)
    group, _, version = api_version.rpartition("/")
    prefix = f'{named} in version "{version}" cannot be handled as a {kind.kind}: '
    meta = scheme["meta"]
    known = scheme["versions"].get(api_version)
    unregistered = named not in meta["unversioned"] and (known is None or named not in known)
    if internal is None and not (unregistered and known is not None):
        return None  # a kind of another scheme (apiextensions'), but a name no scheme has
    if named in meta["unversioned"] or (known is not None and named in meta["options"]):
        go_type = f"v1.{named}"  # metav1's
    elif known is not None and named in known:
        go_type = f"{version}.{named}"
        if scheme["groups"].get(group, {}).get("kinds", {}).get(named) == internal:
            return None if api_version == kind.api_version else _other_version(api_version, kind)
    else:
        return (f'{prefix}no kind "{named}" is registered for version "{api_version}" in scheme '
                f'"{_SCHEME}"')  # fmt: skip
    return f"{prefix}converting ({go_type}) to ({internal}): unknown conversion"


def _other_version(named: str, kind: Kind) -> str:
    return (f"the API version in the data ({named}) does not match the expected API version "
            f"({kind.api_version})")  # fmt: skip


def _summary(raw: bytes, limit: int = 30) -> str:
    """``summarizeData``: a JSON body's first 30 bytes (then `` ...``), else its hex."""
    if not raw:
        return "<empty>"
    if raw[:1] == b"{":
        text = raw[:limit].decode(errors="replace")
        return f"{text} ..." if len(raw) > limit else text
    return raw[:limit].hex() + (" ..." if len(raw) > limit else "")


def check_identity(kind: Kind, body: Mapping[str, Any], namespace: str | None, name: str) -> None:
    """Refuse a replace's body, or a patch's result, of another name or namespace than the
    URL's (a namespaced object's namespace may be left out: it is the URL's).

    Raises:
        StatusError: 400.
    """
    metadata = body.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    given = metadata.get("namespace")
    if kind.namespaced and given and given != namespace:
        raise bad_request(OTHER_NAMESPACE)
    if metadata.get("name") != name:
        named = metadata.get("name") or ""
        raise bad_request(
            f"the name of the object ({named}) does not match the name on the URL ({name})"
        )


def check_uid(kind: Kind, body: Mapping[str, Any], stored: Mapping[str, Any]) -> None:
    """Refuse a replace whose body names another ``uid`` than the stored object's: the storage
    takes it as a precondition (an empty one is none).

    Raises:
        StatusError: 409.
    """
    metadata = body.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    held = stored["metadata"]
    if not uid or uid == held.get("uid"):
        return
    where = "/".join(filter(None, (_PREFIXES.get((kind.group, kind.plural), kind.plural),
                                    held.get("namespace"), held["name"])))  # fmt: skip
    if kind.custom:
        where = f"{kind.group}/{where}"
    why = (f"StorageError: invalid object, Code: 4, Key: /registry/{where}, ResourceVersion: 0, "
           f"AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object "
           f"meta: {held.get('uid')}")  # fmt: skip
    raise conflict(kind.plural, kind.group, held["name"], why=why)


_PREFIXES = {
    ("", "services"): "services/specs",
    ("", "nodes"): "minions",
    ("networking.k8s.io", "ingresses"): "ingress",
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ): "apiextensions.k8s.io/customresourcedefinitions",
}
"""The etcd key prefixes of kube-apiserver's storage that are not the resource's name."""
