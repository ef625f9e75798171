"""How a read (get, list, watch) is answered: as stored, as a Table, or as partial metadata.

Sync. :func:`view_of` negotiates the request's ``Accept`` header (see
:mod:`~anyop.testing.fake.media_types`) and returns a :class:`ReadView`, which turns what the
store answered into what the client asked for, as kube-apiserver's ``transformResponseObject``
does: the ``Table`` of an object or a list, an object's ``PartialObjectMetadata``, a list's
``PartialObjectMetadataList``; for a watch, each event's object (the first event's Table alone
carries the column definitions).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.kinds import CRD_KIND, Kind
from anyop.testing.fake.media_types import Conversion, negotiate
from anyop.testing.fake.statuses import StatusError, bad_request, status_body
from anyop.testing.fake.store import Store
from anyop.testing.fake.tables import (
    TablePrinter,
    TableRequest,
    go_type,
    include_option,
    partial,
    printer_of,
    table_of,
)

__all__ = ["ReadView", "view_of"]

_ASKED = "the requested object"
Renderer = Callable[[str, Any], Any]
"""A watch event's type and object -> the object to send."""


def _not_acceptable(message: str) -> StatusError:
    return StatusError(status_body(406, "NotAcceptable", message))


@dataclasses.dataclass(frozen=True, slots=True)
class ReadView:
    """One read's representation.

    Attributes:
        kind: The resource read.
        conversion: What it is converted to (``None``: as stored).
        printer: Its Table printer (for a Table).
        clock: The server's time now (RFC 3339).
        query: The request's query (``includeObject``).
    """

    kind: Kind
    conversion: Conversion | None
    printer: TablePrinter | None
    clock: Callable[[], str]
    query: Mapping[str, str]

    def _table_request(self, *, headers: bool = True) -> TableRequest:
        assert self.conversion is not None
        try:
            include = include_option(self.query)
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        return TableRequest(self.conversion.api_version, include, self.clock(), headers=headers)

    def check(self) -> None:
        """Refuse bad Table options now (a watch's are checked before it starts).

        Raises:
            StatusError: 400 for an unknown ``includeObject``.
        """
        if self.conversion is not None and self.conversion.kind == "Table":
            self._table_request()

    def render(self, document: Mapping[str, Any]) -> Any:
        """An object or a list as asked for.

        Raises:
            StatusError: 400 for bad Table options; 406 for partial metadata of the wrong
                shape (500 for a custom resource's object as a list, as the real server).
        """
        listed = "items" in document
        match self.conversion:
            case None:
                return document
            case Conversion(kind="Table"):
                assert self.printer is not None
                return table_of(self.kind, self.printer, document, self._table_request())
            case Conversion(kind="PartialObjectMetadata") if listed:
                shape = f"is a list ({go_type(self.kind, listed=True)})"
                raise _not_acceptable(f"you requested PartialObjectMetadata, but {_ASKED} {shape}")
            case Conversion(kind="PartialObjectMetadata"):
                return partial(document, self.conversion.api_version)
            case Conversion() if not listed and self.kind.custom:
                raise StatusError(status_body(500, "", "content is not a list"))
            case Conversion() if not listed:
                shape = f"is not a list ({go_type(self.kind, listed=False)})"
                message = f"you requested PartialObjectMetadataList, but {_ASKED} {shape}"
                raise _not_acceptable(message)
        return self._partial_list(document)

    def _partial_list(self, document: Mapping[str, Any]) -> dict[str, Any]:
        assert self.conversion is not None
        version = self.conversion.api_version
        metadata = document.get("metadata") or {}
        kept = {key: metadata[key] for key in ("resourceVersion", "continue", "remainingItemCount")
                if metadata.get(key)}  # fmt: skip
        items = [partial(item, version) for item in document.get("items") or ()]
        return {"kind": "PartialObjectMetadataList", "apiVersion": version, "metadata": kept,
                "items": items or None}  # fmt: skip

    def watch_renderer(self) -> Renderer | None:
        """What each watch event's object becomes (``None``: as it is)."""
        conversion = self.conversion
        if conversion is None:
            return None
        events = itertools.count()

        def render(type_: str, obj: Any) -> Any:
            if type_ == "ERROR" or conversion.kind == "PartialObjectMetadataList":
                return obj  # a Status goes as it is; a failed conversion leaves the object
            if conversion.kind == "PartialObjectMetadata":
                return partial(obj, conversion.api_version)
            assert self.printer is not None
            ask = self._table_request(headers=next(events) == 0)
            return table_of(self.kind, self.printer, obj, ask)

        return render


def view_of(
    store: Store,
    kind: Kind,
    *,
    accept: str,
    query: Mapping[str, str],
    collection: bool,
    watch: bool = False,
) -> ReadView:
    """Negotiate a read's representation.

    Args:
        store: For a custom resource's CRD (its printer columns) and the clock.
        kind: The resource read.
        accept: The request's ``Accept`` header.
        query: The request's query (``includeObject``).
        collection: A list or watch (else a get).
        watch: A watch.

    Raises:
        StatusError: 406 when nothing acceptable can be served.
    """
    conversion = negotiate(accept, custom=kind.custom, collection=collection, watch=watch)
    printer = None
    if conversion is not None and conversion.kind == "Table":
        crd = None
        if kind.custom:
            crd = store.objects[(CRD_KIND.group, CRD_KIND.plural)].get(("", kind.crd))
        printer = printer_of(kind, crd)
    return ReadView(kind, conversion, printer, store.now, query)
