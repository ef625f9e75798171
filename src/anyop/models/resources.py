"""Typed custom resources: pydantic models that declare a Kubernetes kind.

A :class:`CustomResource` subclass names its group, version and kind in the class statement; its
``spec`` and ``status`` fields are :class:`Model` subclasses. Python names are snake_case and the
wire names camelCase (``max_size`` is ``maxSize`` in YAML), as Kubernetes' own types do.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pydantic
from pydantic.alias_generators import to_camel

from anyop.errors import ConfigError

__all__ = [
    "CustomResource",
    "Model",
    "ObjectMeta",
    "ResourceInfo",
    "is_custom_resource",
]

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]*")
_COLUMN_KEYS = frozenset({"name", "type", "jsonPath", "description", "format", "priority"})
_COLUMN_TYPES = frozenset({"integer", "number", "string", "boolean", "date"})
_SCALE_KEYS = frozenset({"specReplicasPath", "statusReplicasPath", "labelSelectorPath"})
_SCOPES = frozenset({"Namespaced", "Cluster"})


class Model(pydantic.BaseModel):
    """A part of a typed resource (its spec, its status, or anything nested in them).

    Fields are snake_case in Python and camelCase on the wire; both names are accepted when
    constructing. Unknown fields are ignored, as the API server prunes them anyway.
    """

    model_config = pydantic.ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
    )


class ObjectMeta(Model):
    """The metadata of a typed object: the commonly read fields; the rest is kept as given."""

    model_config = pydantic.ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    labels: dict[str, str] = pydantic.Field(default_factory=dict)
    annotations: dict[str, str] = pydantic.Field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResourceInfo:
    """What a :class:`CustomResource`'s class statement declared.

    Attributes:
        group: The API group (``demo.example.com``).
        version: The version that this class describes (``v1``).
        kind: The kind (``Widget``).
        plural: The plural name (default: the kind lowercased plus ``s``).
        singular: The singular name (default: the kind lowercased).
        short_names: Short names for ``kubectl get``.
        categories: Categories (``kubectl get all`` uses ``all``).
        scope: ``Namespaced`` or ``Cluster``.
        printer_columns: Extra columns of ``kubectl get``, as in a CRD (``jsonPath`` etc.).
        scale: The scale subresource's paths (``specReplicasPath``...), or ``None``.
        served: Whether this version is served.
        storage: Whether this version is the storage version (one per kind).
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    scope: str = "Namespaced"
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    scale: Mapping[str, str] | None = None
    served: bool = True
    storage: bool = False

    @property
    def api_version(self) -> str:
        """``group/version``, as in a body's ``apiVersion``."""
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        """The name of the CustomResourceDefinition: ``plural.group``."""
        return f"{self.plural}.{self.group}"


class CustomResource(Model):
    """A typed custom resource: subclass it with the kind's options in the class statement.

    Example::

        class Widget(anyop.CustomResource, group="demo.example.com", version="v1", kind="Widget"):
            spec: WidgetSpec
            status: WidgetStatus | None = None

    Class options: ``group``, ``version``, ``kind`` (required); ``plural``, ``singular``,
    ``short_names``, ``categories``, ``scope`` (``"Namespaced"`` or ``"Cluster"``),
    ``printer_columns`` (CRD-style mappings), ``scale`` (the scale subresource's paths),
    ``served``, ``storage`` (which version is stored when a kind has several classes).

    A subclass of a typed resource inherits its options but ``storage`` (another version:
    ``class WidgetV2(Widget, version="v2", storage=True)``); a subclass without options of
    ``CustomResource`` itself is an abstract base of typed resources.

    Raises:
        ConfigError: An option is missing, unknown, or malformed; the message names the class.
    """

    __resource__: ClassVar[ResourceInfo]

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = pydantic.Field(default_factory=ObjectMeta)

    def __init_subclass__(cls, **options: Any) -> None:
        config = {key: options.pop(key) for key in list(options) if key in _OPTIONS}
        super().__init_subclass__(**options)
        inherited: ResourceInfo | None = getattr(cls, "__resource__", None)
        if config or inherited is not None:
            merged = {**_inheritable(inherited, config), **config}
            cls.__resource__ = _resource_info(cls.__qualname__, merged)

    def to_body(self) -> dict[str, Any]:
        """The object as a JSON-ready body, with ``apiVersion`` and ``kind`` filled in."""
        info = type(self).__resource__
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        body.update(apiVersion=info.api_version, kind=info.kind)
        return body


_OPTIONS = frozenset(
    {
        "group",
        "version",
        "kind",
        "plural",
        "singular",
        "short_names",
        "categories",
        "scope",
        "printer_columns",
        "scale",
        "served",
        "storage",
    }
)


def is_custom_resource(value: object) -> bool:
    """Whether ``value`` is a class of a typed resource (not an abstract base, not an instance)."""
    return (
        isinstance(value, type)
        and issubclass(value, CustomResource)
        and getattr(value, "__resource__", None) is not None
    )


def _inheritable(info: ResourceInfo | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options that a subclass takes from its parent's: all but ``storage``, and the
    names made from the kind when it names another kind."""
    if info is None:
        return {}
    options = {field.name: getattr(info, field.name) for field in dataclasses.fields(info)}
    del options["storage"]
    if "kind" in given:
        del options["plural"], options["singular"]
    return options


def _resource_info(culprit: str, options: Mapping[str, Any]) -> ResourceInfo:
    """Check a class statement's options and build its :class:`ResourceInfo`."""
    missing = [key for key in ("group", "version", "kind") if not options.get(key)]
    if missing:
        names = ", ".join(f"{key}=" for key in missing)
        raise ConfigError(f"CustomResource {culprit}: the class options {names} are required.")
    kind = _matching(culprit, "kind", options["kind"], _KIND)
    plural = options.get("plural") or f"{kind.lower()}s"
    singular = options.get("singular") or kind.lower()
    scope = options.get("scope", "Namespaced")
    if scope not in _SCOPES:
        raise ConfigError(f"CustomResource {culprit}: scope= must be one of {sorted(_SCOPES)}.")
    return ResourceInfo(
        group=_matching(culprit, "group", options["group"], _DNS_SUBDOMAIN),
        version=_matching(culprit, "version", options["version"], _DNS_LABEL),
        kind=kind,
        plural=_matching(culprit, "plural", plural, _DNS_LABEL),
        singular=_matching(culprit, "singular", singular, _DNS_LABEL),
        short_names=_names(culprit, "short_names", options.get("short_names", ())),
        categories=_names(culprit, "categories", options.get("categories", ())),
        scope=scope,
        printer_columns=_columns(culprit, options.get("printer_columns", ())),
        scale=_scale(culprit, options.get("scale")),
        served=_flag(culprit, "served", options.get("served", True)),
        storage=_flag(culprit, "storage", options.get("storage", False)),
    )


def _matching(culprit: str, key: str, value: object, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ConfigError(f"CustomResource {culprit}: {key}= is malformed: {value!r}.")
    return value


def _flag(culprit: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"CustomResource {culprit}: {key}= must be True or False: {value!r}.")
    return value


def _names(culprit: str, key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"CustomResource {culprit}: {key}= must be a list of names: {value!r}.")
    return tuple(_matching(culprit, key, name, _DNS_LABEL) for name in value)


def _columns(culprit: str, value: object) -> tuple[Mapping[str, Any], ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"CustomResource {culprit}: printer_columns= must be a list: {value!r}.")
    for column in value:
        if not isinstance(column, Mapping) or not {"name", "type", "jsonPath"} <= set(column):
            raise ConfigError(
                f"CustomResource {culprit}: a printer column needs name, type and jsonPath: "
                f"{column!r}."
            )
        unknown = sorted(set(column) - _COLUMN_KEYS)
        if unknown or column["type"] not in _COLUMN_TYPES:
            raise ConfigError(
                f"CustomResource {culprit}: a printer column has unknown keys {unknown} or a type "
                f"not in {sorted(_COLUMN_TYPES)}: {column!r}."
            )
    return tuple(dict(column) for column in value)


def _scale(culprit: str, value: object) -> Mapping[str, str] | None:
    if value is None:
        return None
    keys = set(value) if isinstance(value, Mapping) else set()
    if (
        not isinstance(value, Mapping)
        or not keys <= _SCALE_KEYS
        or not {
            "specReplicasPath",
            "statusReplicasPath",
        }
        <= keys
    ):
        raise ConfigError(
            f"CustomResource {culprit}: scale= needs specReplicasPath and statusReplicasPath "
            f"(and may have labelSelectorPath): {value!r}."
        )
    return dict(value)
