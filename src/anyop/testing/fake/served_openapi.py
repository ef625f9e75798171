"""The OpenAPI documents: ``/openapi/v3`` (the index), ``/openapi/v3/<api/v1|apis/g/v>`` and
``/openapi/v2``, as kube-apiserver serves them.

Pure. The built-in documents are the vendored ones (see
:mod:`~anyop.testing.fake.openapi_catalog`), for the group versions the fake serves; a CRD
group version's is built from its CRDs (:mod:`~anyop.testing.fake.crd_openapi`). The index
names each document with the hash of its content (SHA-512, as kube-openapi's handler computes
it), so clients that cache the documents by that URL see a CRD's change. kubectl asks for JSON
(v3) and for protobuf (v2, see :mod:`~anyop.testing.fake.openapi_v2`); other media types are
406 Not Acceptable, as kube-apiserver answers them.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from anyop.testing.fake.crd_openapi import crd_document
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.openapi_catalog import catalog
from anyop.testing.fake.openapi_v2 import PROTOBUF, v2_document

__all__ = ["Answer", "answer"]

Answer = tuple[int, bytes, dict[str, str]]
"""A status code, a body and headers (``Content-Type`` among them)."""

_PREFIX = "/openapi/v3"
_JSON = "application/json"
_PROTOBUF_OLD = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def answer(
    path: str, query: Mapping[str, str], accept: str, *, kinds: Iterable[Kind], crds: list[Any]
) -> Answer | None:
    """The answer to a GET of an OpenAPI path, or ``None`` if ``path`` is none of them.

    Args:
        path: The URL path.
        query: The query (``hash`` for a document of the v3 index).
        accept: The request's ``Accept`` header.
        kinds: The kinds served.
        crds: The CRDs stored (their served versions' documents are served).
    """
    documents = _served(list(kinds), crds)
    if path == _PREFIX:
        index = {
            "paths": {
                name: {"serverRelativeURL": f"{_PREFIX}/{name}?hash={_encoded(name, doc)[1]}"}
                for name, doc in sorted(documents.items())
            }
        }
        return 200, json.dumps(index, separators=(",", ":")).encode(), {"Content-Type": _JSON}
    if path.startswith(f"{_PREFIX}/"):
        name = path.removeprefix(f"{_PREFIX}/")
        if name not in documents:
            return 404, b"", {}
        return _document(path, _encoded(name, documents[name]), query.get("hash", ""), accept)
    if path == "/openapi/v2":
        builtin = catalog().data["schemas"]
        custom = {
            name: schema
            for doc_name, document in documents.items()
            if doc_name not in catalog().data["documents"]
            for name, schema in document["components"]["schemas"].items()
            if name not in builtin
        }
        return _v2(accept, custom)
    return None


def _document(path: str, encoded: tuple[bytes, str], wanted: str, accept: str) -> Answer:
    if not _accepts_json(accept):
        return 406, b"", {"Vary": "Accept"}
    body, digest = encoded
    headers = {"Content-Type": _JSON, "Etag": f'"{digest}"', "Vary": "Accept"}
    if wanted and wanted != digest:
        return 301, b"", {**headers, "Location": f"{path}?hash={digest}"}
    if wanted:
        headers["Cache-Control"] = "public, immutable"
    return 200, body, headers


def _accepts_json(accept: str) -> bool:
    """Whether an ``Accept`` header takes JSON (kube-openapi's negotiation: the first clause
    whose type matches wins, and the fake has JSON only)."""
    if not accept.strip():
        return True
    for clause in accept.split(","):
        media = clause.split(";")[0].strip().lower()
        if media in ("*/*", "application/*", _JSON):
            return True
    return False


def _served(kinds: list[Kind], crds: list[Any]) -> dict[str, Any]:
    """The documents by their name in the index: the built-in ones of the group versions
    served, and one per group version of the CRDs'."""
    served = {(kind.group, kind.version) for kind in kinds}
    documents: dict[str, Any] = {}
    for name in catalog().data["documents"]:
        parts = name.split("/")
        if len(parts) < 3 or ("" if parts[0] == "api" else parts[1], parts[-1]) in served:
            documents[name] = _builtin(name)
    for group, version in sorted({(k.group, k.version) for k in kinds if k.custom}):
        own = [crd for crd in crds if (crd.get("spec") or {}).get("group") == group]
        documents[f"apis/{group}/{version}"] = crd_document(group, version, own)
    return documents


@functools.cache
def _builtin(name: str) -> dict[str, Any]:
    data = catalog().data
    document = data["documents"][name]
    schemas = {key: document["own"].get(key) or data["schemas"][key] for key in document["schemas"]}
    components = {"schemas": schemas, "securitySchemes": data["securitySchemes"]}
    return {
        "openapi": "3.0.0",
        "info": data["info"],
        "paths": document["paths"],
        "components": components,
    }


def _encoded(name: str, document: Any) -> tuple[bytes, str]:
    """A document's JSON and its hash (a built-in document's, once)."""
    if name in catalog().data["documents"]:
        return _builtin_encoded(name)
    return _encoding(document)


@functools.cache
def _builtin_encoded(name: str) -> tuple[bytes, str]:
    return _encoding(_builtin(name))


def _encoding(document: Any) -> tuple[bytes, str]:
    body = json.dumps(document, separators=(",", ":")).encode()
    return body, hashlib.sha512(body).hexdigest().upper()


def _v2(accept: str, custom: Mapping[str, Any]) -> Answer:
    media = _v2_media(accept)
    if media is None:
        return 406, b"", {"Vary": "Accept"}
    body = v2_document(media, custom)
    digest = hashlib.sha512(body).hexdigest().upper()
    return 200, body, {"Content-Type": media, "Etag": f'"{digest}"', "Vary": "Accept"}


def _v2_media(accept: str) -> str | None:
    """The media type of ``/openapi/v2`` for an ``Accept`` header: JSON or gnostic's
    protobuf, the first clause that names one."""
    if not accept.strip():
        return _JSON
    for clause in accept.split(","):
        media = clause.split(";")[0].strip().lower()
        if media in ("*/*", "application/*", _JSON):
            return _JSON
        if media in (PROTOBUF, _PROTOBUF_OLD):
            return PROTOBUF
    return None
