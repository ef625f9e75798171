"""The object store: one resourceVersion counter, the objects, their history, the served kinds.

Sync and deterministic (uids and generated names come from a seeded generator, times from the
given clock). Reads live here; writes are in :mod:`anyop.testing.fake.writes`.
"""

from __future__ import annotations

import base64
import binascii
import collections
import dataclasses
import json
import marshal
import random
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from anyop.testing.fake import go_json
from anyop.testing.fake.admission_points import AdmissionPoints
from anyop.testing.fake.bootstrap import BootSet, boot_set
from anyop.testing.fake.conversions import converts, for_storage, in_version, stored_as
from anyop.testing.fake.event_conversion import storage_resource
from anyop.testing.fake.history import (
    Change,
    History,
    ObjectKey,
    ResourceKey,
    sorted_objects,
    storage_key,
    visible_change,
)
from anyop.testing.fake.json_copy import frozen, json_copy
from anyop.testing.fake.kinds import BUILTIN_KINDS, NAMESPACE_KIND, Kind
from anyop.testing.fake.label_selectors import Selector
from anyop.testing.fake.schemas import fill_defaults
from anyop.testing.fake.shard_selectors import ShardSelector
from anyop.testing.fake.statuses import (
    StatusError,
    bad_request,
    not_found,
    too_large_version,
)
from anyop.testing.fake.stored_form import as_stored

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

__all__ = ["ListQuery", "Ref", "Store", "WatchStart", "WouldCommit"]

Body = dict[str, Any]
Listener = Callable[[Change], None]
Controller = Callable[["Store", Change], None]
BOOT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


@dataclasses.dataclass(frozen=True, slots=True)
class Ref:
    """Which object a request addresses: its kind, namespace (``None`` if cluster-scoped), name."""

    kind: Kind
    namespace: str | None
    name: str


class ListQuery:
    """What to list: a namespace (or all), selectors, a page size and where to continue.

    Attributes:
        namespace: One namespace, or ``None`` for all.
        selector: Label and field selectors together.
        limit: The page size; 0 for all.
        token: The ``continue`` token of the previous page, or ``""``.
        rv: The ``resourceVersion`` parameter, or ``""``.
        exact: ``resourceVersionMatch=Exact``.
        shard: The shard selector (hash ranges), if any.
        name: The one object the storage reads, if a field selector names it exactly (so a
            page of it has no next one), else ``None``.
    """

    def __init__(
        self,
        namespace: str | None = None,
        selector: Selector | None = None,
        *,
        limit: int = 0,
        token: str = "",
        rv: str = "",
        exact: bool = False,
        shard: ShardSelector | None = None,
        name: str | None = None,
    ) -> None:
        self.namespace = namespace
        self.selector = selector or Selector()
        self.limit, self.token, self.rv, self.exact = limit, token, rv, exact
        self.shard, self.name = shard, name

    def matches(self, body: Mapping[str, Any]) -> bool:
        """Whether an object is in this list's namespace and matches its selectors."""
        return self.holds(body) and self.selects(body)

    def holds(self, body: Mapping[str, Any]) -> bool:
        """Whether an object is under this list's storage key (its namespace, or its name)."""
        metadata = body.get("metadata") or {}
        if self.name is not None and metadata.get("name") != self.name:
            return False
        return self.namespace is None or metadata.get("namespace") == self.namespace

    def selects(self, body: Mapping[str, Any]) -> bool:
        """Whether an object under the prefix matches the label, field and shard selectors."""
        return self.selector(body) and (self.shard is None or self.shard(body))


def _page(
    scanned: list[Body], selects: Callable[[Body], bool], limit: int
) -> tuple[list[Body], bool]:
    """A page of what the selectors keep, and whether a next page is handed.

    As kube-apiserver's storage reads them: it stops at the page's last kept object and hands a
    next page whenever any object (kept or not) follows it; so a next page may be empty.
    Without a page size, ``scanned`` holds only what the selectors keep.
    """
    if not limit:
        return scanned, False  # selected already
    items: list[Body] = []
    for index, body in enumerate(scanned):
        if selects(body):
            items.append(body)
            if len(items) == limit:
                return items, index < len(scanned) - 1
    return items, False


class WouldCommit(Exception):
    """Raised by :meth:`Store.commit` in a dry run: the change the request would make."""

    def __init__(self, kind: Kind, type_: str, obj: Body, *, old: Body | None) -> None:
        super().__init__(type_)
        self.kind, self.type, self.obj, self.old = kind, type_, obj, old


class WatchStart:
    """Where a watch starts: the events to send first and the resourceVersion after them."""

    def __init__(self, events: list[tuple[str, Body]], rv: int) -> None:
        self.events = events
        self.rv = rv


class Store:
    """All objects of the fake cluster and the kinds it serves.

    Args:
        seed: Seeds uids and generated names.
        history_limit: How many recent changes stay answerable to watches and lists.
        clock: The current time as an RFC 3339 string (``2026-01-01T00:00:00Z``).
    """

    def __init__(
        self,
        *,
        seed: int,
        history_limit: int,
        clock: Callable[[], str],
        aggregated: bool = False,
    ) -> None:
        self.rng = random.Random(seed)
        self.rv = 0
        self.now = clock
        self.history = History(history_limit)
        self.kinds: dict[tuple[str, str, str], Kind] = {}
        self._groups: frozenset[tuple[str, str]] | None = None  # of the kinds; None: to be made
        self.objects: dict[ResourceKey, dict[ObjectKey, Body]] = _Resources()
        self.listeners: list[Listener] = []
        self.controllers: list[Controller] = []
        """Called with each change after the listeners; their own writes are queued, so that
        every listener sees the changes in order."""
        self._queued: collections.deque[Change] = collections.deque()
        self.controller_errors: list[StatusError] = []
        """What the API refused to the controllers, oldest first (a real controller logs it
        and tries again later; these do not)."""
        self.unsettled: set[tuple[str, str, str, str]] = set()
        """Objects whose next update is written even if it changes nothing (a new
        resourceVersion), as kube-apiserver writes a PersistentVolumeClaim's first update
        (``group, plural, namespace, name``)."""
        self.dry_run = False
        """Make :meth:`commit` raise :class:`WouldCommit` instead of storing (admission)."""
        self.warnings: list[str] | None = None
        """The warnings of the request being answered, in the order its ``Warning`` header
        gives them; ``None`` while no request records them (the controllers' own writes)."""
        self.admission = AdmissionPoints()
        """What the writes do at their admission points (the webhooks' while they run)."""
        for kind in BUILTIN_KINDS:
            self.serve(kind)
        for name in BOOT_NAMESPACES:
            body = {"metadata": {"name": name}, "spec": {"finalizers": ["kubernetes"]}}
            self.commit(NAMESPACE_KIND, "ADDED", self._boot(body, name), old=None)
        self._seed_bootstrap(seed, aggregated=aggregated)
        self.history.compact(self.rv)  # as a watch cache, history starts after the boot

    def _seed_bootstrap(self, seed: int, *, aggregated: bool) -> None:
        """Store the API server's own objects (:mod:`~anyop.testing.fake.bootstrap`) as they are:
        made as the server makes them, they need none of a write's checks, and no listener nor
        controller is there yet to hear of them. Each resource's are copied in when it is first
        read (see :class:`_Resources`). ``aggregated``: the aggregating ClusterRoles hold their
        rules, as a cluster's controllers leave them."""
        boot = boot_set(seed, self.now(), self.rv, aggregated=aggregated)
        cast(_Resources, self.objects).take(boot)
        self.rv += boot.count

    def _boot(self, body: Body, name: str) -> Body:
        metadata = body["metadata"]
        metadata |= {"uid": self.uid(), "creationTimestamp": self.now()}
        metadata["labels"] = {"kubernetes.io/metadata.name": name}
        return {"apiVersion": "v1", "kind": "Namespace", **body, "status": {"phase": "Active"}}

    # -- kinds ----------------------------------------------------------------------------------

    def serve(self, kind: Kind) -> None:
        """Serve a kind (replacing one of the same group, version and plural)."""
        self.kinds[(kind.group, kind.version, kind.plural)] = kind
        self._groups = None

    def unserve(self, crd: str) -> list[Kind]:
        """Stop serving the kinds of a CRD; return them."""
        gone = [kind for kind in self.kinds.values() if kind.crd == crd]
        for kind in gone:
            del self.kinds[(kind.group, kind.version, kind.plural)]
        self._groups = None
        return gone

    def kind(self, group: str, version: str, plural: str) -> Kind | None:
        """The kind served at ``group/version/plural``, if any."""
        return self.kinds.get((group, version, plural))

    def kind_of(self, resource: ResourceKey) -> Kind | None:
        """A kind that serves the objects of ``(group, plural)`` (its storage version's if
        several), or ``None`` if none serves them any more."""
        found = [kind for kind in self.kinds.values() if (kind.group, kind.plural) == resource]
        stored = [kind for kind in found if not kind.storage_version]
        return (stored or found)[0] if found else None

    def custom_group(self, group: str, version: str) -> bool:
        """Whether a group version is served for CRDs."""
        return any(
            kind.custom
            for kind in self.kinds.values()
            if (kind.group, kind.version) == (group, version)
        )

    def groups(self) -> frozenset[tuple[str, str]]:
        """The served ``(group, version)`` pairs (a set kept until the kinds change)."""
        if self._groups is None:
            self._groups = frozenset((kind.group, kind.version) for kind in self.kinds.values())
        return self._groups

    # -- writes' primitives ---------------------------------------------------------------------

    def uid(self) -> str:
        """A new uid (a version-4 UUID from the seeded generator)."""
        bits = self.rng.getrandbits(128) & _UUID_FREE | _UUID_V4  # as uuid.UUID(version=4)
        text = f"{bits:032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

    def commit(self, kind: Kind, type_: str, obj: Body, *, old: Body | None) -> Body:
        """Store a change with the next resourceVersion; tell the listeners; return the object
        as stored (not a copy: copy it before changing it or handing it out).

        The store takes ``obj`` over: its parts become the stored object's (they may be those
        of the object it replaces: no stored object is changed in place, each write stores a
        new one). The caller does not change it afterwards.

        Raises:
            WouldCommit: In a dry run.
        """
        if self.dry_run:
            raise WouldCommit(kind, type_, json_copy(obj), old=json_copy(old))
        if not kind.custom:  # Go's empty lists and maps are nil once stored
            obj = for_storage(kind, obj)  # in its storage version, where its kind converts
            obj = as_stored(*stored_as(kind), kind.kind, obj)
        self.rv += 1
        versioned = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
        data = frozen(versioned)  # the history's
        obj = versioned
        objects = self.objects[(kind.group, kind.plural)]
        change = Change(self.rv, _rk(kind), type_, obj, old)
        latest = old is not None and objects.get(change.key) is old  # as stored, unchanged
        if type_ == "DELETED":
            objects.pop(change.key, None)
        else:
            objects[change.key] = obj
        self.history.append(change, obj=data, old_latest=latest)
        for listener in list(self.listeners):
            listener(change)
        self._queued.append(change)
        if len(self._queued) == 1:  # else a controller's write: the outer loop takes it
            try:
                while self._queued:
                    self._control(self._queued[0])
                    self._queued.popleft()
            finally:
                self._queued.clear()
        return obj

    def _control(self, change: Change) -> None:
        """Let the controllers act on a change; a write they are refused is kept in
        :attr:`controller_errors` (the request that caused it succeeded all the same). Their
        writes' warnings are no request's."""
        recorded, self.warnings = self.warnings, None
        try:
            for controller in list(self.controllers):
                try:
                    controller(self, change)
                except StatusError as exc:
                    self.controller_errors.append(exc)
        finally:
            self.warnings = recorded

    # -- reads ----------------------------------------------------------------------------------

    def find(self, kind: Kind, namespace: str | None, name: str) -> Body:
        """The stored object (not a copy).

        Raises:
            StatusError: 404.
        """
        found = self.objects[(kind.group, kind.plural)].get((namespace or "", name))
        if found is None:
            raise not_found(kind.plural, kind.group, name)
        return found

    def get(self, kind: Kind, namespace: str | None, name: str, *, shared: bool = False) -> Body:
        """A copy of an object, as of the kind's version; ``shared``: its parts may be the stored
        object's (an answer to encode, never to change: see :func:`shown`)."""
        return shown(kind, self.find(kind, namespace, name), shared=shared)

    def namespace(self, name: str) -> Body | None:
        """The namespace of that name, if it exists."""
        return self.objects[("", "namespaces")].get(("", name))

    def list(self, kind: Kind, query: ListQuery, *, shared: bool = False) -> Body:
        """One page of a list, as the API server answers it.

        Raises:
            StatusError: 400 for a bad continue token, 410 for a compacted resourceVersion,
                504 for a resourceVersion from the future.
        """
        snapshot, start = self._list_start(query)
        current = self.objects[(kind.group, kind.plural)]
        state = (
            current if snapshot == self.rv else self.history.state_at(snapshot, _rk(kind), current)
        )
        # A page reads every object (selected or not) up to its end; a whole list, only those
        # the selectors keep.
        held = query.holds if query.limit else query.matches
        scanned = sorted_objects(
            (key, body) for key, body in state.items() if storage_key(key) > start and held(body)
        )
        items, more = _page(scanned, query.selects, query.limit)
        metadata: Body = {"resourceVersion": str(snapshot)}
        if query.shard is not None and not kind.custom:  # an unstructured list has no field
            metadata["shardInfo"] = {"selector": str(query.shard)}
        if kind.custom:
            metadata["continue"] = ""  # custom resources' lists always carry it
        if more:
            last = items[-1]["metadata"]
            key = storage_key((last.get("namespace") or "", last["name"]))
            metadata["continue"] = _token(snapshot, key)
            if not query.selector.requirements:  # a shard selector does not count here
                metadata["remainingItemCount"] = len(scanned) - query.limit
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.api_version,
            "metadata": metadata,
            "items": [_listed(kind, body, shared=shared) for body in items],
        }

    def _list_start(self, query: ListQuery) -> tuple[int, str]:
        if query.token:
            snapshot, start = _parse_token(query.token)
            if query.rv and query.rv != "0":
                raise bad_request("specifying resource version is not allowed when using continue")
            self.history.check(snapshot, "continue", self.rv)
            return snapshot, start
        snapshot = self.rv
        if query.rv and query.rv != "0":
            asked = _version(query.rv)
            if asked > self.rv:
                raise too_large_version(asked, self.rv)
            if query.exact:
                self.history.check(asked, "list", self.rv)
                snapshot = asked
        return snapshot, ""

    def watch_start(self, kind: Kind, query: ListQuery, *, initial: bool) -> WatchStart:
        """The first events of a watch from ``query.rv`` (or of the current state if unset).

        Raises:
            StatusError: 410 for a compacted resourceVersion (sent as an ``ERROR`` event).
        """
        current = self.objects[(kind.group, kind.plural)]
        if initial or not query.rv or query.rv == "0":
            listed = sorted_objects((k, b) for k, b in current.items() if query.matches(b))
            return WatchStart([("ADDED", shown(kind, body)) for body in listed], self.rv)
        since = _version(query.rv)
        self.history.check(since, "watch", self.rv)
        events = []
        for change in self.history.since(since, _rk(kind)):
            if (seen := visible_change(change, query.matches)) is not None:
                events.append((seen[0], shown(kind, seen[1])))
        return WatchStart(events, self.rv)

    def readable(self, resource: ResourceKey) -> Mapping[ObjectKey, Body]:
        """A resource's objects by key, to be read: if nothing has read them yet, the bootstrap
        objects the stores of the same boot share (not copied in)."""
        return cast(_Resources, self.objects).readable_one(resource)

    def all_objects(self) -> Iterator[tuple[ResourceKey, Body]]:
        """Every stored object, with its resource, to be read: those of a resource that nothing
        has read yet are the bootstrap objects that the stores of the same boot share (the
        root CA publisher and the garbage collector scan them all, and act by name)."""
        for resource, objects in cast(_Resources, self.objects).readable():
            for body in objects.values():
                yield resource, body


def _rk(kind: Kind) -> ResourceKey:
    return storage_resource((kind.group, kind.plural))


class _Resources(dict[ResourceKey, dict[ObjectKey, Body]]):
    """The objects by resource (an empty dict for one not stored yet), a resource stored as
    another one (events.k8s.io's Events, the core group's) found under that one.

    A resource's bootstrap objects (see :meth:`take`) become the store's own when it is first
    looked up or iterated over: most stores never read most of them.
    """

    def __init__(self) -> None:
        super().__init__()
        self._boot: BootSet | None = None
        self._pending: set[ResourceKey] = set()

    def take(self, boot: BootSet) -> None:
        """Hold these bootstrap objects (each resource's copied in when first read)."""
        self._boot, self._pending = boot, set(boot.frozen)

    def __missing__(self, key: ResourceKey) -> dict[ObjectKey, Body]:
        found: dict[ObjectKey, Body] = {}
        if key in self._pending and self._boot is not None:
            self._pending.discard(key)
            found = marshal.loads(self._boot.frozen[key])
        self[key] = found
        return found

    def __getitem__(self, key: ResourceKey) -> dict[ObjectKey, Body]:
        return super().__getitem__(storage_resource(key))

    def __contains__(self, key: object) -> bool:
        shared = storage_resource(key) if isinstance(key, tuple) else key
        return shared in self._pending or super().__contains__(shared)

    def get(self, key: ResourceKey, default: Any = None) -> Any:
        shared = storage_resource(key)
        return self[shared] if shared in self._pending else super().get(shared, default)

    def _thawed(self) -> None:
        for key in list(self._pending):
            self.__missing__(key)

    def __iter__(self) -> Iterator[ResourceKey]:
        self._thawed()
        return super().__iter__()

    def __len__(self) -> int:
        self._thawed()
        return super().__len__()

    def keys(self) -> dict_keys[ResourceKey, dict[ObjectKey, Body]]:
        """The resources (their bootstrap objects made the store's own first)."""
        self._thawed()
        return super().keys()

    def values(self) -> dict_values[ResourceKey, dict[ObjectKey, Body]]:
        """The objects of each resource (the bootstrap ones made the store's own first)."""
        self._thawed()
        return super().values()

    def items(self) -> dict_items[ResourceKey, dict[ObjectKey, Body]]:
        """Each resource and its objects (the bootstrap ones made the store's own first)."""
        self._thawed()
        return super().items()

    def readable_one(self, key: ResourceKey) -> Mapping[ObjectKey, Body]:
        """One resource's objects, the boot's shared ones if not read yet (not copied)."""
        shared = storage_resource(key)
        if shared in self._pending and self._boot is not None:
            return self._boot.shared[shared]
        found: Mapping[ObjectKey, Body] = super().get(shared) or {}
        return found

    def readable(self) -> Iterator[tuple[ResourceKey, Mapping[ObjectKey, Body]]]:
        """Each resource's objects, those not read yet the boot's shared ones (not copied)."""
        yield from super().items()
        if self._boot is not None:
            for key in sorted(self._pending):
                yield key, self._boot.shared[key]


def shown(kind: Kind, body: Mapping[str, Any], *, shared: bool = False) -> Body:
    """A copy of a stored object as served in the kind's version (a custom resource with the
    defaults of its schema: the API server defaults what it reads from storage too).

    ``shared``: below its top level, the copy may hold the stored object's own parts, where
    nothing is to change (no conversion, no defaults): for an answer to encode, which nobody
    changes, as no write changes a stored object in place (see :meth:`Store.commit`)."""
    if converts(kind):  # (a dry run's object is of the request's version: as stored first)
        body = in_version(kind, for_storage(kind, dict(body)))
    elif shared and not (kind.defaults and kind.schema is not None):
        return {**body, "apiVersion": kind.api_version}
    result = json_copy(dict(body))
    result["apiVersion"] = kind.api_version
    if kind.defaults and kind.schema is not None:
        fill_defaults(result, kind.schema)
    return result


def _listed(kind: Kind, body: Mapping[str, Any], *, shared: bool) -> Body:
    """A list item: built-in kinds leave out ``apiVersion`` and ``kind``; custom ones keep them."""
    result = shown(kind, body, shared=shared)
    if not kind.custom:
        result.pop("apiVersion", None)
        result.pop("kind", None)
    return result


def _version(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f'invalid resource version "{text}"') from None
    if value < 0:
        raise bad_request(f'invalid resource version "{text}"')
    return value


def _token(rv: int, last: str) -> str:
    """A continue token as kube-apiserver writes one: JSON in unpadded URL-safe base64."""
    document = {"v": "meta.k8s.io/v1", "rv": rv, "start": last + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


def _parse_token(token: str) -> tuple[int, str]:
    """A continue token's resourceVersion and start key, read as kube-apiserver reads them
    (Go's unpadded base64 and JSON, with their errors).

    Raises:
        StatusError: 400, the token is not one.
    """
    try:
        bad = next((i for i, c in enumerate(token) if c not in _URL_ALPHABET), None)
        if bad is not None:
            raise ValueError(f"illegal base64 data at input byte {bad}")
        data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        document = go_json.loads(data)
        return int(document["rv"]), str(document["start"]).removesuffix("\x00")
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        message = f"invalid continue token: continue key is not valid: {exc}"
        raise bad_request(message) from None


_UUID_FREE = ~(0xC000 << 48 | 0xF000 << 64) & (1 << 128) - 1
"""The bits of a version-4 UUID that are random (all but its variant's and its version's)."""
_UUID_V4 = 0x8000 << 48 | 4 << 76
"""The variant (RFC 4122) and version (4) bits of a version-4 UUID."""
_URL_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
