"""What Kubernetes' Go structs say of the built-in kinds beyond their OpenAPI documents.

``data/go_types.json.gz`` is made by ``scripts/fake_go_types.py`` from the Go code of the
version the local control plane builds: the fields' named Go types (decoding errors name them),
what those types are, the structs' field order (a converter meets the fields in it), their
``omitempty`` scalar fields, the fields embedded structs give, and the layout of the internal
``PodSpec`` and ``PersistentVolumeClaimSpec`` (refused updates show a diff of them).
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

__all__ = ["go_structs", "struct_order"]


@functools.cache
def go_structs() -> Mapping[str, Any]:
    """The vendored table, read once per process (see the module's docstring for its keys)."""
    data = resources.files("anyop.testing.fake").joinpath("data/go_types.json.gz").read_bytes()
    found: Mapping[str, Any] = json.loads(gzip.decompress(data))
    return found


@functools.cache
def struct_order(name: str) -> Mapping[str, int]:
    """A definition's fields by their place in its Go struct (``{}``: alphabetical)."""
    return {key: index for index, key in enumerate(go_structs()["order"].get(name) or ())}
