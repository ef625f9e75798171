"""Content negotiation of reads: which representation an ``Accept`` header asks for.

Pure. kube-apiserver parses ``Accept`` as goautoneg does (clauses sorted by quality, wildcards
after exact types), then takes the first clause it can serve, with its parameters: ``as``, ``v``
and ``g`` ask for a conversion (``as=Table;v=v1;g=meta.k8s.io``, or ``PartialObjectMetadata``,
``PartialObjectMetadataList``), which only ``meta.k8s.io`` ``v1`` and ``v1beta1`` offer, a Table
only as JSON or YAML. A header with nothing servable is refused with ``406 Not Acceptable``; for
built-in resources, a header naming no media type of the route at all is refused earlier, by the
HTTP router, with its own message.

The fake writes JSON only: a read that negotiates YAML or protobuf (without conversion) is answered
in JSON, as before negotiation was done.
"""

from __future__ import annotations

import dataclasses
import functools

from anyop.testing.fake.statuses import StatusError, status_body

__all__ = ["META_GROUP", "Clause", "Conversion", "discovery", "negotiate", "parse_accept"]

META_GROUP = "meta.k8s.io"
_JSON, _YAML, _PROTOBUF = (
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
)
_SERVED = (_JSON, _YAML, _PROTOBUF)
_STREAMED = (_JSON, _PROTOBUF)  # those with a stream (watch) serializer
_STANDARD_CUSTOM = (_JSON, _YAML)  # what a custom resource is written in without conversion
_META_VERSIONS = ("v1", "v1beta1")
_CONVERSIONS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")


@dataclasses.dataclass(frozen=True, slots=True)
class Clause:
    """One media range of an ``Accept`` header.

    Attributes:
        type: The type (``application``, or ``*``).
        subtype: The subtype (``json``, or ``*``).
        quality: The ``q`` parameter (1 if absent, 0 if unreadable).
        params: The other parameters.
    """

    type: str
    subtype: str
    quality: float = 1.0
    params: tuple[tuple[str, str], ...] = ()

    def param(self, name: str) -> str | None:
        """A parameter's value, or ``None``."""
        return dict(self.params).get(name)


@dataclasses.dataclass(frozen=True, slots=True)
class Conversion:
    """What a read is converted to: a ``kind`` of ``meta.k8s.io`` at ``version``."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        """``meta.k8s.io/<version>``."""
        return f"{META_GROUP}/{self.version}"


def _split(text: str, sep: str) -> tuple[str, str]:
    head, found, rest = text.partition(sep)
    return head, rest if found else ""


def _clause(part: str) -> Clause | None:
    """One clause, or ``None`` where goautoneg skips it (no subtype, two slashes)."""
    media, params_text = _split(part.strip(" "), ";")
    type_, subtype = _split(media, "/")
    type_ = type_.strip(" ")
    if not subtype and "/" not in media:
        if type_ != "*":
            return None
        subtype = "*"
    elif "/" in subtype:
        return None
    quality, params = 1.0, []
    for item in params_text.split(";") if params_text else ():
        key, value = _split(item, "=")
        if "=" not in item or "=" in value:
            continue
        if key.strip(" ") == "q":
            quality = _float(value)
        else:
            params.append((key.strip(" "), value.strip(" ")))
    return Clause(type_, subtype.strip(" "), quality, tuple(params))


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def parse_accept(header: str) -> list[Clause]:
    """The clauses of an ``Accept`` header, best first (by quality, exact types before
    wildcards; ties keep the client's order)."""
    parts = [_clause(part) for part in header.split(",")] if header else []
    clauses = [clause for clause in parts if clause is not None]
    return sorted(clauses, key=lambda c: (-c.quality, c.type == "*", c.subtype == "*"))


def _router_refuses(header: str, *, watch_route: bool) -> bool:
    """Whether the built-in API's HTTP router finds no media type of the route in ``header``."""
    produced = set(_SERVED)
    if watch_route:
        produced |= {f"{media};stream=watch" for media in _STREAMED}
    for part in (header or "*/*").split(","):
        media = part.split(";", 1)[0].strip(" ")
        if media == "*/*" or media in produced:
            return False
    return True


def _router_refusal(*, collection: bool) -> StatusError:
    available = list(_SERVED)
    if collection:
        available += [f"{media};stream=watch" for media in _STREAMED]
    message = "406: Not Acceptable\n\nAvailable representations: " + ", ".join(available)
    return StatusError(status_body(406, "NotAcceptable", message, details={}))


def not_acceptable(accepted: tuple[str, ...] = _SERVED) -> StatusError:
    """The handler's ``406``: ``only the following media types are accepted: ...``."""
    message = f"only the following media types are accepted: {', '.join(accepted)}"
    return StatusError(status_body(406, "NotAcceptable", message))


def _conversion(clause: Clause, media: str) -> Conversion | bool:
    """The clause's conversion (``True``: none asked), or ``False`` if none can be served in
    ``media`` (the server's media type the clause matched)."""
    names = {name: clause.param(name) for name in ("as", "v", "g")}
    if all(value is None for value in names.values()):
        return True
    kind, version, group = (names[name] or "" for name in ("as", "v", "g"))
    if group != META_GROUP or version not in _META_VERSIONS or kind not in _CONVERSIONS:
        return False
    if kind == "Table" and media not in (_JSON, _YAML):
        return False
    return Conversion(kind, version)


def _matches(clause: Clause, media: str) -> bool:
    """Whether the clause's media range (and stream) takes ``media``, conversions aside."""
    type_, subtype = media.split("/")
    if clause.type not in (type_, "*") or (clause.subtype not in (subtype, "*")):
        return False
    if clause.type == "*" and clause.subtype != "*":
        return False
    return not clause.param("stream") or (clause.param("stream") == "watch" and media in _STREAMED)


def _servable(clause: Clause, media: str, *, custom: bool) -> Conversion | bool:
    """Whether ``media`` serves the clause: its conversion, ``True`` (none), or ``False``."""
    if not _matches(clause, media):
        return False
    conversion = _conversion(clause, media)
    if conversion is True and custom and media not in _STANDARD_CUSTOM:
        return False
    return conversion


_AGGREGATED = ("APIGroupDiscoveryList", "v2", "apidiscovery.k8s.io")


def discovery(header: str, *, aggregated: bool) -> bool:
    """Whether a discovery read asks for the aggregated document (``True``) or the legacy one.

    As kube-apiserver's discovery wrapper does: the first clause it can serve decides; only
    ``/api`` and ``/apis`` (``aggregated``) serve ``as=APIGroupDiscoveryList;v=v2;
    g=apidiscovery.k8s.io``, and no discovery path serves any other conversion.

    Raises:
        StatusError: ``406 Not Acceptable``.
    """
    if _router_refuses(header, watch_route=False):
        raise _router_refusal(collection=False)
    if not header:
        return False
    for clause in parse_accept(header):
        if not any(_matches(clause, media) for media in _SERVED):
            continue
        names = tuple(clause.param(name) for name in ("as", "v", "g"))
        if names == (None, None, None):
            return False
        if aggregated and names == _AGGREGATED:
            return True
    raise not_acceptable()


def negotiate(
    header: str, *, custom: bool, collection: bool, watch: bool = False
) -> Conversion | None:
    """The conversion a read asks for (``None``: the object as it is).

    Args:
        header: The ``Accept`` header (empty: anything).
        custom: The resource is a custom resource (no HTTP router in front of it).
        collection: The path is a collection's (whose route also serves watches).
        watch: The read is a watch: the media type must have a stream serializer too.

    Raises:
        StatusError: ``406 Not Acceptable``.
    """
    return _negotiated(header, custom, collection, watch)


@functools.lru_cache(maxsize=512)
def _negotiated(header: str, custom: bool, collection: bool, watch: bool) -> Conversion | None:
    """:func:`negotiate`, remembered: clients send the same few headers (a refusal is not
    remembered, and is worked out again)."""
    if not custom and _router_refuses(header, watch_route=collection):
        raise _router_refusal(collection=collection)
    if not header:
        return None
    for clause in parse_accept(header):
        for media in _SERVED:
            found = _servable(clause, media, custom=custom)
            if found is False:
                continue
            if watch and media not in _STREAMED:
                raise not_acceptable(tuple(f"{m};stream=watch" for m in _STREAMED))
            return found if isinstance(found, Conversion) else None
    raise not_acceptable()
