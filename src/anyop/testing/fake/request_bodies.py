"""The objects that creates, updates and deletes send, in each media type the API server takes.

Pure. Resources take JSON, YAML and Kubernetes' protobuf encoding (as kubectl's typed commands
send built-in kinds); any other ``Content-Type`` gets the server's 415. A custom resource's
handler lists protobuf among its types but cannot decode it: kube-apiserver panics and the
connection drops, and so does it here. A body that cannot be decoded gets the server's 400,
worded as it words it: for a create or an update, ``the object provided is unrecognized (must
be of type Kind): why (summary)``; for a delete's options, the reason alone.
"""

from __future__ import annotations

import json
from typing import Any

from anyop.testing.fake import go_json, go_yaml, protobuf_bodies
from anyop.testing.fake.faults import ConnectionDropped
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.statuses import StatusError, bad_request, unsupported_media_type

__all__ = ["JSON", "YAML", "accepted_types", "applied_document", "decode_body"]

JSON = "application/json"
YAML = "application/yaml"
_TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def accepted_types() -> tuple[str, ...]:
    """The media types of bodies that resources take, in the server's order."""
    return (JSON, YAML, protobuf_bodies.PROTOBUF)


def decode_body(kind: Kind, content_type: str, body: bytes, *, options: bool = False) -> Any:
    """The object a request sends to the kind's resource (``options``: a delete's options).

    Raises:
        StatusError: 415 for a media type the resource does not take, 400 for a body that
            cannot be decoded.
        ConnectionDropped: Protobuf for a custom resource.
    """
    media_type = content_type or JSON
    accepted = accepted_types()
    if media_type not in accepted:
        raise unsupported_media_type(accepted)
    if media_type == protobuf_bodies.PROTOBUF and kind.custom:
        raise ConnectionDropped(f"protobuf body for {kind.plural}.{kind.group}")
    try:
        if media_type == protobuf_bodies.PROTOBUF:
            return protobuf_bodies.decode(body, group=kind.group, version=kind.version)
        document = go_yaml.load(body) if media_type == YAML else go_json.loads(body)
    except go_json.GoJSONError as exc:
        raise _undecodable(kind, f"{_VERSION_KIND}{exc}", body, options=options) from None
    except (protobuf_bodies.ProtobufError, go_yaml.GoYAMLError) as exc:
        raise _undecodable(kind, str(exc), body, options=options) from None
    if not isinstance(document, dict):
        reason = f"{_VERSION_KIND}{go_json.unmarshal_type_error(document, _TYPE_META)}"
        raise _undecodable(kind, reason, body, options=options)
    if media_type == JSON and not kind.custom and not options:
        text = body.decode(json.detect_encoding(body), "surrogatepass")
        document = go_json.surrogates_replaced(body, _MERGING.decode(text))
    return document


def _merged(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as Go decodes it into a struct or a map: a member given twice that is an
    object both times is decoded into what the first made (merged), else replaces it."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        before = found.get(key)
        if type(before) is dict and type(value) is dict:
            value = _merged([*before.items(), *value.items()])
        found[key] = value
    return found


_MERGING = json.JSONDecoder(object_pairs_hook=_merged)
"""A built-in object's body, read as Go's decoder reads a member given twice (a custom
resource's, decoded into a map of values, takes the last)."""


def applied_document(body: bytes) -> Any:
    """A server-side apply configuration's document: JSON (what clients mostly send, and JSON is
    YAML) is read as JSON, fast; anything else as YAML.

    Raises:
        go_yaml.GoYAMLError: Neither JSON nor YAML that kube-apiserver reads.
    """
    try:  # not the NaN and Infinity of Python's decoder: YAML reads those words as strings
        document = _STRICT_JSON.decode(body.decode(json.detect_encoding(body), "surrogatepass"))
    except ValueError:
        document = go_yaml.load(body)
    return go_json.surrogates_replaced(body, document)


_STRICT_JSON = json.JSONDecoder(parse_constant=go_json.refuse_constant)


_VERSION_KIND = "couldn't get version/kind; json parse error: "


def _undecodable(kind: Kind, reason: str, body: bytes, *, options: bool) -> StatusError:
    if options:
        return bad_request(reason)
    summary = _summary(body)
    return bad_request(
        f"the object provided is unrecognized (must be of type {kind.kind}): {reason} ({summary})"
    )


def _summary(body: bytes, limit: int = 30) -> str:
    """The start of a body as the server quotes it: JSON objects as text, the rest in hex."""
    if not body:
        return "<empty>"
    if body.startswith(b"{"):
        text = body[:limit].decode(errors="replace")
        return text + " ..." if len(body) > limit else text
    return body[:limit].hex() + (" ..." if len(body) > limit else "")
