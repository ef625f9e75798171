"""Server-side apply (``application/apply-patch+yaml``), the part anyop's client uses.

Sync. See :func:`apply` for what is left out on purpose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from anyop.testing.fake import writes
from anyop.testing.fake.patch_merging import apply_merge_patch
from anyop.testing.fake.statuses import bad_request, invalid
from anyop.testing.fake.store import Ref, Store, shown

__all__ = ["apply"]

Body = dict[str, Any]


def apply(store: Store, ref: Ref, *, document: bytes, manager: str) -> tuple[int, Body]:
    """Server-side apply, in part: create the object from the applied configuration if it is
    missing (201), else merge the configuration into it as a merge patch would (200).

    Deliberately left out: ``managedFields`` (no field ownership, so no conflicts between
    managers, and ``force`` changes nothing), and the list merge keys of ``listType: map``
    (lists are replaced whole).

    Raises:
        StatusError: 400 (an undecodable body, another kind or name), 404 (no namespace),
            422 (no ``fieldManager``, or the object is invalid).
    """
    if not manager:
        message = "Required value: is required for apply patch"
        cause = {"reason": "FieldValueRequired", "message": message}
        raise invalid("PatchOptions", "meta.k8s.io", "", causes=[("fieldManager", cause)])
    try:
        body = yaml.safe_load(document)
    except yaml.YAMLError as exc:
        raise bad_request(f"error decoding YAML: {exc}") from None
    if not isinstance(body, Mapping):
        raise bad_request("the applied configuration is not an object")
    kind = ref.kind
    if (body.get("apiVersion"), body.get("kind")) != (kind.api_version, kind.kind):
        given = f"{body.get('apiVersion')}, Kind={body.get('kind')}"
        raise bad_request(f"the applied configuration is a {given}, not a {kind.kind}")
    metadata = dict(body.get("metadata") or {})
    if metadata.get("name", ref.name) != ref.name:
        raise bad_request("the name of the applied configuration does not match the URL")
    metadata["name"] = ref.name
    if (ref.namespace or "", ref.name) not in store.objects[(kind.group, kind.plural)]:
        return 201, writes.create(
            store, kind, {**body, "metadata": metadata}, namespace=ref.namespace
        )
    stored = store.find(kind, ref.namespace, ref.name)
    merged = apply_merge_patch(shown(kind, stored), {**body, "metadata": metadata})
    return 200, writes.update(store, kind, stored, new=merged, subresource=None)
