"""How storages name their annotations: Kopf's key conventions, byte for byte.

An annotation key is ``<prefix>/<name>``; Kubernetes limits the name to 63 characters and forbids
``/``, ``<``, ``>`` in it. A handler id becomes a name by replacing ``/`` with ``.`` and ``<``/``>``
with ``_`` (``update_fn/s2/z1`` -> ``update_fn.s2.z1``). Longer names are cut and suffixed with
``-`` and a 6-character hash (base64 of a 4-byte BLAKE2b digest, with ``-.`` as altchars).

Kopf has two generations of keys: "v1" keys limited the whole key (prefix included) to 63
characters, "v2" keys limit only the name. Both are written while ``v1=True`` and they differ,
so that older operators still find their state. ReplicaSets owned by Deployments get an
``-ofDRS`` suffix, as Kubernetes copies Deployments' annotations down to their ReplicaSets.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from anyop.errors import ConfigError
from anyop.handlers.diffs import MANAGED_MARKER
from anyop.kube.patches import Patch

__all__ = ["AnnotationsNaming", "InvalidPrefixError", "hash_suffix", "mark_key", "safe_name"]

MAX_NAME_LENGTH = 63
MAX_KEY_LENGTH = 253


class InvalidPrefixError(ConfigError, ValueError):
    """An annotation prefix is empty or too long to fit Kubernetes' limits."""


def safe_name(key: str) -> str:
    """Replace the characters that annotation names may not contain."""
    return key.replace("/", ".").replace("<", "_").replace(">", "_")


def hash_suffix(key: str) -> str:
    """The ``-XXXXXX`` suffix for cut names: a stable hash that ends with an alphanumeric."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=4).digest()
    encoded = base64.b64encode(digest, altchars=b"-.").decode("ascii")
    return f"-{encoded}".rstrip("=-.")


def mark_key(key: str, body: Mapping[str, Any] | None) -> str:
    """Suffix the key with ``-ofDRS`` for ReplicaSets owned by Deployments."""
    if body is None or body.get("kind") != "ReplicaSet":
        return key
    owners = (body.get("metadata") or {}).get("ownerReferences") or []
    if any(owner.get("kind") == "Deployment" for owner in owners):
        return f"{key}-ofDRS"
    return key


class AnnotationsNaming:
    """The annotation keys of one storage prefix.

    Args:
        prefix: The annotation prefix, e.g. ``anyop.dev`` or ``kopf.zalando.org``.
        v1: Also produce Kopf's "v1" keys where they differ from the "v2" ones.

    Raises:
        InvalidPrefixError: If the prefix is empty or leaves no room for a name.
    """

    def __init__(self, prefix: str, *, v1: bool) -> None:
        if not prefix:
            raise InvalidPrefixError("Annotation storages need a prefix, e.g. 'anyop.dev'.")
        if len(prefix) > MAX_KEY_LENGTH - MAX_NAME_LENGTH - 1:
            raise InvalidPrefixError(f"The annotations prefix is too long: {prefix!r}.")
        self.prefix = prefix
        self.v1 = v1

    def make_v1_key(self, key: str) -> str:
        """Kopf's "v1" key: the whole key, prefix included, is cut to 63 characters."""
        name, room = safe_name(key), MAX_NAME_LENGTH - len(self.prefix) - 1
        suffix = "" if len(name) <= room else hash_suffix(name)
        return f"{self.prefix}/{name[: room - len(suffix)]}{suffix}"

    def make_v2_key(self, key: str) -> str:
        """Kopf's "v2" key: only the name part is cut to 63 characters."""
        suffix = "" if len(key) <= MAX_NAME_LENGTH else hash_suffix(key)
        return f"{self.prefix}/{safe_name(key)[: MAX_NAME_LENGTH - len(suffix)]}{suffix}"

    def make_keys(self, key: str, body: Mapping[str, Any] | None = None) -> list[str]:
        """All keys to write (v2 first), or to look up (in order) for a record key."""
        marked = mark_key(key, body)
        keys = [self.make_v2_key(marked)]
        if self.v1 and self.make_v1_key(marked) not in keys:
            keys.append(self.make_v1_key(marked))
        return keys

    def owns(self, annotation: str) -> bool:
        """Whether an annotation key is under this prefix."""
        return annotation.startswith(f"{self.prefix}/")

    def store_marker(self, patch: Patch, body: Mapping[str, Any]) -> None:
        """Write ``<prefix>/kopf-managed: "yes"`` once, so other operators skip our keys.

        Prefixes starting with ``kopf.`` are recognised by Kopf without a marker.
        """
        if self.prefix.startswith("kopf."):
            return
        marker = f"{self.prefix}/{MANAGED_MARKER}"
        existing = (body.get("metadata") or {}).get("annotations") or {}
        if marker not in existing and marker not in patch.meta.annotations:
            patch.meta.annotations[marker] = "yes"
