"""Request bodies in Kubernetes' protobuf encoding, read into the JSON objects the fake keeps.

Pure. kubectl and other Go clients send built-in kinds as ``application/vnd.kubernetes.protobuf``:
the magic ``k8s\\x00``, then a ``runtime.Unknown`` envelope (``apiVersion`` and ``kind``, and the
object's own message in ``raw``). The messages are Kubernetes' own (``data/protobuf.json.gz``,
made by ``scripts/fake_protobuf.py`` from the ``generated.proto`` files); the ``protobuf``
package parses them, and this module turns them into what Go's JSON of the same object holds:
the JSON names, zero values dropped where Go drops them (``omitempty`` on a non-pointer field),
and the wrapper types (``Time``, ``Quantity``, ``IntOrString``, raw JSON, ...) as their JSON forms.
"""

from __future__ import annotations

import base64
import datetime
import functools
import gzip
import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from anyop.testing.fake.openapi_catalog import catalog

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = ["PROTOBUF", "ProtobufError", "available", "decode", "encoded", "message_class"]

PROTOBUF = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_EXTENSIONS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
_UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf object of a known kind (the message says why)."""


class _Descriptors:
    """The message classes of the vendored descriptors, with the Go JSON rules of their fields."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

        self.pool = descriptor_pool.DescriptorPool()
        for file in document["files"]:
            self.pool.Add(json_format.ParseDict(file, descriptor_pb2.FileDescriptorProto()))
        self.json_names: Mapping[str, Mapping[str, str]] = document["jsonNames"]
        self.keeps_zero = {
            name: frozenset(fields) for name, fields in document["keepsZero"].items()
        }
        self.class_of = functools.cache(
            lambda name: message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))
        )

    def message(self, name: str, data: bytes) -> Any:
        """Parse ``data`` as the message ``name``."""
        instance = self.class_of(name)()
        instance.ParseFromString(data)
        return instance

    def has(self, name: str) -> bool:
        """Whether the message ``name`` is known."""
        try:
            self.pool.FindMessageTypeByName(name)
        except KeyError:
            return False
        return True


@functools.cache
def _descriptors() -> _Descriptors:
    data = resources.files("anyop.testing.fake").joinpath("data/protobuf.json.gz").read_bytes()
    return _Descriptors(json.loads(gzip.decompress(data)))


def available() -> bool:
    """Whether protobuf bodies can be read here (the ``protobuf`` package is installed)."""
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return False
    return True


def message_class(full_name: str) -> Any:
    """The class of a vendored message (e.g. ``k8s.io.api.core.v1.ConfigMap``), for tests and
    tools that write protobuf bodies as Go clients do."""
    return _descriptors().class_of(full_name)


def encoded(message: Any, *, api_version: str, kind: str) -> bytes:
    """A message as a Go client sends it: the magic, then the ``runtime.Unknown`` envelope."""
    envelope = message_class(_UNKNOWN)()
    envelope.typeMeta.apiVersion = api_version
    envelope.typeMeta.kind = kind
    envelope.raw = message.SerializeToString()
    return bytes(_MAGIC + envelope.SerializeToString())


def decode(body: bytes, *, group: str, version: str) -> dict[str, Any]:
    """The JSON object of a protobuf body sent to a resource of ``group``/``version``.

    Raises:
        ProtobufError: Not Kubernetes' protobuf encoding, or a kind without a message here.
    """
    if not available():
        raise ProtobufError(
            "FakeCluster reads protobuf bodies with the protobuf package: pip install 'anyop[test]'"
        )
    if not body.startswith(_MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    descriptors = _descriptors()
    try:
        envelope = descriptors.message(_UNKNOWN, body[len(_MAGIC) :])
    except Exception as exc:  # protobuf's DecodeError has no stable import path across versions
        raise ProtobufError(f"proto: {exc}") from None
    if not envelope.raw and not envelope.ListFields():
        raise ProtobufError("empty body")
    type_meta = envelope.typeMeta
    api_version = str(type_meta.apiVersion) or _api_version(group, version)
    kind = str(type_meta.kind)
    name = _message_name(descriptors, api_version, kind)
    if name is None:
        raise ProtobufError(f"no kind {kind!r} is registered for version {api_version!r}")
    try:
        message = descriptors.message(name, bytes(envelope.raw))
    except Exception as exc:
        raise ProtobufError(f"proto: {exc}") from None
    document = _object(descriptors, message)
    return {"apiVersion": api_version, "kind": kind, **document}


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _message_name(descriptors: _Descriptors, api_version: str, kind: str) -> str | None:
    """The message of a kind: the package of its OpenAPI schema's name, else meta's own kinds
    (``DeleteOptions``, ``Status``, ...), which every group version takes."""
    group, _, version = api_version.rpartition("/")
    schema = catalog().schema_name(group, version, kind)
    candidates = [f"{_META}.{kind}"]
    if schema is not None:
        io, k8s, rest = schema.split(".", 2)
        candidates.insert(0, f"{k8s}.{io}.{rest}".replace("-", "_"))
    return next((name for name in candidates if descriptors.has(name)), None)


def _object(descriptors: _Descriptors, message: Any) -> dict[str, Any]:
    full_name = message.DESCRIPTOR.full_name
    renamed = descriptors.json_names.get(full_name, {})
    keeps_zero = descriptors.keeps_zero.get(full_name, frozenset())
    document: dict[str, Any] = {}
    for field, value in message.ListFields():
        converted = _field(descriptors, field, value)
        if converted is _ABSENT:
            continue
        if _is_zero(converted) and field.name not in keeps_zero and not _is_message(field):
            continue
        name = renamed.get(field.name, field.name)
        if not name and isinstance(converted, dict):
            document.update(converted)  # an embedded struct: JSON inlines its fields
        else:
            document[name] = converted
    return document


_ABSENT = object()


def _is_message(field: FieldDescriptor) -> bool:
    return field.message_type is not None and not _is_map(field)


def _is_map(field: FieldDescriptor) -> bool:
    message = field.message_type
    return message is not None and message.GetOptions().map_entry


def _is_repeated(field: FieldDescriptor) -> bool:
    # ``is_repeated`` is new in protobuf 6; ``label`` is deprecated there.
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        return bool(getattr(field, "label") == field.LABEL_REPEATED)  # noqa: B009 (untyped in 6)
    return bool(repeated)


def _is_zero(value: Any) -> bool:
    return value in ("", 0, [], {})  # False and 0.0 equal 0


def _field(descriptors: _Descriptors, field: FieldDescriptor, value: Any) -> Any:
    if field.message_type is not None and _is_map(field):
        entry = field.message_type.fields_by_name["value"]
        return {key: _single(descriptors, entry, item) for key, item in value.items()}
    if _is_repeated(field):
        items = [_single(descriptors, field, item) for item in value]
        return [item for item in items if item is not _ABSENT]
    return _single(descriptors, field, value)


def _single(descriptors: _Descriptors, field: FieldDescriptor, value: Any) -> Any:
    if field.message_type is None:
        if field.type == field.TYPE_BYTES:
            return base64.b64encode(value).decode()
        return value
    special = _SPECIAL.get(field.message_type.full_name)
    if special is not None:
        return special(descriptors, value)
    wrapped = _wrapper_items(field.message_type)
    if wrapped is not None:
        return [_single(descriptors, wrapped, item) for item in getattr(value, wrapped.name)]
    return _object(descriptors, value)


def _wrapper_items(message: Descriptor) -> FieldDescriptor | None:
    """The one repeated ``items`` field of a message that stands for a Go slice type
    (``ExtraValue``, ``Verbs``): JSON has the list itself."""
    fields = message.fields
    if len(fields) == 1 and fields[0].name == "items" and _is_repeated(fields[0]):
        return fields[0]
    return None


def _rfc3339(seconds: int, micros: int | None = None) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{micros:06d}Z" if micros is not None else f"{text}Z"


def _time(_: _Descriptors, value: Any) -> Any:
    # Go's Time: an empty message is the zero time, which JSON writes as null (absent here);
    # protobuf carries nanoseconds, but the server keeps seconds, as its JSON does.
    if not value.ListFields():
        return _ABSENT
    return _rfc3339(int(value.seconds))


def _micro_time(_: _Descriptors, value: Any) -> Any:
    if not value.ListFields():
        return _ABSENT
    return _rfc3339(int(value.seconds), int(value.nanos) // 1000)


def _duration(_: _Descriptors, value: Any) -> str:
    return go_duration(int(value.duration))


def go_duration(nanoseconds: int) -> str:
    """A duration as Go's ``time.Duration.String`` writes it (``1h2m3.5s``, ``1.5ms``, ``0s``)."""
    if nanoseconds == 0:
        return "0s"
    sign, left = ("-", -nanoseconds) if nanoseconds < 0 else ("", nanoseconds)
    if left < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if left >= size or unit == "ns":
                return f"{sign}{_decimal(left, size)}{unit}"
    hours, left = divmod(left, 3_600_000_000_000)
    minutes, left = divmod(left, 60_000_000_000)
    text = f"{hours}h" if hours else ""
    text += f"{minutes}m" if hours or minutes else ""
    return f"{sign}{text}{_decimal(left, 1_000_000_000)}s"


def _decimal(amount: int, size: int) -> str:
    whole, fraction = divmod(amount, size)
    if not fraction:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{fraction:0{digits}d}".rstrip("0")


def _quantity(_: _Descriptors, value: Any) -> str:
    return str(value.string)


def _int_or_string(_: _Descriptors, value: Any) -> int | str:
    if int(value.type) == 1:
        return str(value.strVal)
    return int(value.intVal)


def _raw_json(attribute: str) -> Callable[[_Descriptors, Any], Any]:
    def read(_: _Descriptors, value: Any) -> Any:
        raw = bytes(getattr(value, attribute))
        if not raw:
            return _ABSENT
        try:
            return json.loads(raw)
        except ValueError:
            raise ProtobufError(f"raw JSON in a protobuf body is not JSON: {raw[:64]!r}") from None

    return read


def _schema_or(alternative: str) -> Callable[[_Descriptors, Any], Any]:
    """``JSONSchemaPropsOr*``: the schema when set, else the alternative (a bool or a list)."""

    def read(descriptors: _Descriptors, value: Any) -> Any:
        if value.HasField("schema"):
            return _object(descriptors, value.schema)
        other = getattr(value, alternative)
        if isinstance(other, bool):
            return other
        return [item if isinstance(item, str) else _object(descriptors, item) for item in other]

    return read


_SPECIAL: dict[str, Callable[[_Descriptors, Any], Any]] = {
    f"{_META}.Time": _time,
    f"{_META}.MicroTime": _micro_time,
    f"{_META}.Duration": _duration,
    f"{_META}.FieldsV1": _raw_json("Raw"),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json("raw"),
    f"{_EXTENSIONS}.JSON": _raw_json("raw"),
    f"{_EXTENSIONS}.JSONSchemaPropsOrBool": _schema_or("allows"),
    f"{_EXTENSIONS}.JSONSchemaPropsOrArray": _schema_or("jSONSchemas"),
    f"{_EXTENSIONS}.JSONSchemaPropsOrStringArray": _schema_or("property"),
}
