"""The conformance harness: run one scenario against a target and record what comes back.

A scenario is an ``async def scenario(t: Target) -> None`` that makes requests through the
target; each answer (status code, reason, body) and each watch event is recorded. The records of
the real API server and of FakeCluster are normalised (uids, timestamps and absolute
resourceVersions replaced by their order of appearance) and must be equal.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, cast

import anyio
import httpx

from anyop.kube.transport import BODY_EXTENSION, aiter_raw

__all__ = ["JSON_PATCH", "MERGE", "STRATEGIC", "Scenario", "Target", "normalise", "status_shown",
           "without_ips"]  # fmt: skip

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
GROUP = "conformance.anyop.dev"


_FROM_CACHE = ("PUT", "PATCH", "DELETE")
"""The writes kube-apiserver starts from its watch cache's copy of the object."""


def _collection_of(path: str) -> str:
    """The collection of an object's path (or a collection's own): its name and subresource
    left out; a namespace's ``/status`` and ``/finalize`` are of ``namespaces``."""
    parts = path.partition("?")[0].rstrip("/").split("/")
    head = 3 if parts[1:2] == ["api"] else 4
    rest = parts[head:]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        return "/".join(parts[: head + 3])
    return "/".join(parts[: head + 1])


@dataclasses.dataclass
class Target:
    """One API server under test, with the records of one scenario run.

    Attributes:
        name: ``real`` or ``fake``.
        api: An HTTP client of it (base URL set, admin rights).
        namespace: A namespace made for this scenario (the same name on both targets).
        compact: Compacts the target's history (etcd's, or FakeCluster's), if it can.
    """

    name: str
    api: httpx.AsyncClient
    namespace: str
    compact: Callable[[], Awaitable[None]] | None = None
    records: list[Any] = dataclasses.field(default_factory=list)

    # -- paths ----------------------------------------------------------------------------------

    def core(self, plural: str, name: str = "", *, namespace: str | None = None) -> str:
        """A core (v1) namespaced path in the scenario's namespace (or ``namespace``)."""
        tail = f"/{name}" if name else ""
        return f"/api/v1/namespaces/{namespace or self.namespace}/{plural}{tail}"

    def cm(self, name: str = "") -> str:
        """The path of the namespace's configmaps (or of one)."""
        return self.core("configmaps", name)

    def widgets(self, name: str = "", *, sub: str = "") -> str:
        """The path of the namespace's Widgets (a CR with a status subresource)."""
        tail = (f"/{name}" if name else "") + (f"/{sub}" if sub else "")
        return f"/apis/{GROUP}/v1/namespaces/{self.namespace}/widgets{tail}"

    def gadgets(self, name: str = "", *, sub: str = "") -> str:
        """The path of Gadgets (a cluster-scoped CR without subresources)."""
        tail = (f"/{name}" if name else "") + (f"/{sub}" if sub else "")
        return f"/apis/{GROUP}/v1/gadgets{tail}"

    def gizmos(self, name: str = "", *, sub: str = "") -> str:
        """The path of the namespace's Gizmos (a CR with a rich schema, status and scale)."""
        tail = (f"/{name}" if name else "") + (f"/{sub}" if sub else "")
        return f"/apis/{GROUP}/v1/namespaces/{self.namespace}/gizmos{tail}"

    def apis(self, group_version: str, plural: str, name: str = "", *, sub: str = "",
             namespaced: bool = True) -> str:  # fmt: skip
        """A path of a named group's resource (in the scenario's namespace if ``namespaced``)."""
        tail = (f"/{name}" if name else "") + (f"/{sub}" if sub else "")
        where = f"/namespaces/{self.namespace}" if namespaced else ""
        return f"/apis/{group_version}{where}/{plural}{tail}"

    # -- requests -------------------------------------------------------------------------------

    async def cache_fresh(self, path: str) -> None:
        """On the real target, wait until kube-apiserver's watch cache of the resource at
        ``path`` holds every write made so far (a consistent list from the cache waits for
        it: one ``limit=1`` page of the collection, unrecorded); on the fake, nothing. Before
        a write, and before a read or a watch at resourceVersion ``0`` (which the cache
        answers as it stands: "any version" is the latest one here).

        An update, patch or delete starts from the cache's copy of the object: where the cache
        lags behind a write just made (under load), the write runs once against the stale
        copy, fails to commit, and runs again against the stored object. What the first run
        did stays: its admission webhooks were called, its warnings are sent. Writes from a
        fresh cache run once, as on an idle server, and as the fake runs them."""
        if self.name != "real":
            return
        await self.api.get(_collection_of(path), params={"limit": "1"})

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        ct: str = "application/json",
        params: Mapping[str, str] | None = None,
        record: Callable[[Any], Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send a request (with extra ``headers``, e.g. ``Accept``); record its status and
        (``record``-selected) body; return the body."""
        content = None if body is None else (body if isinstance(body, bytes) else json.dumps(body))
        headers = {**({"Content-Type": ct} if body is not None else {}), **(headers or {})}
        if method in _FROM_CACHE or (params or {}).get("resourceVersion") == "0":
            await self.cache_fresh(path)
        for _ in range(10):  # a server too busy to answer (429) is asked again, as clients do
            response = await self.api.request(
                method, path, content=content, headers=headers, params=params
            )
            if response.status_code != 429:
                break
            await anyio.sleep(float(response.headers.get("Retry-After", "1")))
        try:
            document = response.json()
        except ValueError:
            document = response.text
        shown = record(document) if record is not None else document
        self.records.append({"call": f"{method} {_short(path, self.namespace)}",
                             "code": response.status_code, "body": shown})  # fmt: skip
        return document

    async def get(self, path: str, **kwargs: Any) -> Any:
        """GET and record."""
        return await self.call("GET", path, **kwargs)

    async def post(self, path: str, body: Any, **kwargs: Any) -> Any:
        """POST and record."""
        return await self.call("POST", path, body, **kwargs)

    async def put(self, path: str, body: Any, **kwargs: Any) -> Any:
        """PUT and record."""
        return await self.call("PUT", path, body, **kwargs)

    async def patch(self, path: str, body: Any, ct: str = MERGE, **kwargs: Any) -> Any:
        """PATCH (a merge patch unless ``ct`` says otherwise) and record."""
        return await self.call("PATCH", path, body, ct=ct, **kwargs)

    async def delete(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        """DELETE and record."""
        return await self.call("DELETE", path, body, **kwargs)

    def note(self, label: str, value: Any) -> None:
        """Record a derived observation."""
        self.records.append({"note": label, "value": value})

    async def watch(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        actions: Callable[[], Awaitable[None]] | None = None,
        until: Callable[[list[dict[str, Any]]], bool] | None = None,
        limit: float = 10.0,
        headers: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Watch: open the stream, run ``actions`` (unrecorded), collect events until ``until``
        says so (or the stream ends, or ``limit`` seconds pass); record and return them."""
        events: list[dict[str, Any]] = []
        query = {"watch": "true", **params}
        if query.get("resourceVersion") == "0":
            await self.cache_fresh(path)
        with anyio.move_on_after(limit):
            async with self.api.stream("GET", path, params=query, headers=headers) as resp:
                self.records.append(
                    {"watch": _short(path, self.namespace), "code": resp.status_code}
                )
                if actions is not None:
                    await _quietly(self, actions)
                buffer = b""
                async for chunk in _raw_chunks(resp):
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    events.extend(json.loads(line) for line in lines if line.strip())
                    if until is not None and until(events):
                        break
        self.records.append({"events": _collapsed([_event_record(event) for event in events])})
        return events


async def _quietly(target: Target, actions: Callable[[], Awaitable[None]]) -> None:
    """Run actions without recording their answers."""
    kept = list(target.records)
    await actions()
    target.records[:] = kept


def _event_record(event: Mapping[str, Any]) -> Any:
    if event.get("type") == "BOOKMARK":
        obj = event.get("object") or {}
        annotations = (obj.get("metadata") or {}).get("annotations")
        return {"type": "BOOKMARK", "kind": obj.get("kind"), "annotations": annotations,
                "rv": (obj.get("metadata") or {}).get("resourceVersion")}  # fmt: skip
    return {"type": event.get("type"), "object": event.get("object")}


def _raw_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body's chunks from the transport's own iterator: httpx's chain of async generators,
    abandoned midway, makes Trio warn about unfinalized generators."""
    if BODY_EXTENSION in response.extensions:
        return aiter_raw(response)
    stream: Any = getattr(response.stream, "_stream", response.stream)
    return cast(AsyncIterator[bytes], stream.__aiter__())


def _collapsed(records: list[Any]) -> list[Any]:
    """The first run of bookmarks as one bookmark, and no later one: "clients shouldn't assume
    bookmarks are returned at any specific interval" (API concepts), so how many come, and when
    after the first (the end of the initial events, when they are asked for), is not compared."""
    kept: list[Any] = []
    for record in records:
        if record.get("type") != "BOOKMARK":
            kept.append(record)
        elif kept and kept[-1].get("type") == "BOOKMARK":
            kept[-1] = record
        elif not any(one.get("type") == "BOOKMARK" for one in kept):
            kept.append(record)
    return kept


def _short(path: str, namespace: str) -> str:
    return path.replace(f"/namespaces/{namespace}/", "/namespaces/<ns>/").replace(
        f"/namespaces/{namespace}", "/namespaces/<ns>"
    )


Scenario = Callable[[Target], Awaitable[None]]

# -- normalisation ------------------------------------------------------------------------------

_VOLATILE_TIMES = re.compile(r"(Timestamp|Time|time)$")
_DROPPED = ("managedFields",)


def normalise(records: list[Any], namespace: str) -> list[Any]:
    """Replace what differs between servers for no semantic reason.

    uids become ``<uid-N>`` in order of appearance; timestamps ``<time>``; object
    resourceVersions ``<rv-N>`` by rank; list and bookmark resourceVersions ``>=<rv-N>``
    (the newest object version they cover: the real server's may be ahead); continue tokens
    ``<continue>``; the namespace ``<ns>``.
    """
    text = json.dumps(records).replace(namespace, "<ns>")
    data = json.loads(text)
    versions: set[int] = set()
    uids: dict[str, str] = {}
    _collect(data, versions, uids, top=True)
    ranks = {rv: f"<rv-{i + 1}>" for i, rv in enumerate(sorted(versions))}
    return [_rewrite(item, ranks, uids, top=True) for item in data]


def _collect(node: Any, versions: set[int], uids: dict[str, str], *, top: bool) -> None:
    if isinstance(node, dict):
        metadata = node.get("metadata")
        is_object = isinstance(metadata, dict) and "name" in metadata
        if (
            isinstance(metadata, dict)
            and is_object
            and str(metadata.get("resourceVersion", "")).isdigit()
        ):
            versions.add(int(metadata["resourceVersion"]))
        for key, value in sorted(node.items()):  # key order differs between servers
            if key == "uid" and isinstance(value, str):
                uids.setdefault(value, f"<uid-{len(uids) + 1}>")
            _collect(value, versions, uids, top=False)
    elif isinstance(node, list):
        for item in node:
            _collect(item, versions, uids, top=False)


def _covering(value: str, ranks: Mapping[int, str]) -> str:
    if not value.isdigit():
        return value
    number = int(value)
    below = [rv for rv in ranks if rv <= number]
    return f">={ranks[max(below)]}" if below else ">=<rv-0>"


def _rewrite(node: Any, ranks: Mapping[int, str], uids: Mapping[str, str], *, top: bool) -> Any:
    if isinstance(node, dict):
        metadata = node.get("metadata")
        is_object = isinstance(metadata, dict) and "name" in metadata
        result: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "uid" and isinstance(value, str):
                result[key] = uids.get(value, value)
            elif key == "rv" and isinstance(value, str):  # a bookmark's
                result[key] = _covering(value, ranks)
            elif key == "continue" and isinstance(value, str):
                result[key] = "<continue>" if value else ""
            elif _VOLATILE_TIMES.search(key) and isinstance(value, str):
                result[key] = "<time>"
            elif key == "metadata" and isinstance(value, dict):
                result[key] = _metadata(value, ranks, uids, is_object=is_object)
            else:
                result[key] = _rewrite(value, ranks, uids, top=False)
        return result
    if isinstance(node, list):
        return [_rewrite(item, ranks, uids, top=False) for item in node]
    if isinstance(node, str):
        return _text(node, ranks, uids)
    return node


def _metadata(
    metadata: dict[str, Any], ranks: Mapping[int, str], uids: Mapping[str, str], *, is_object: bool
) -> dict[str, Any]:
    rest = {k: v for k, v in metadata.items() if k != "resourceVersion"}
    result: dict[str, Any] = _rewrite(rest, ranks, uids, top=False)
    if "resourceVersion" in metadata:
        value = str(metadata["resourceVersion"])
        if is_object and value.isdigit():
            result["resourceVersion"] = ranks.get(int(value), value)
        else:
            result["resourceVersion"] = _covering(value, ranks)
    return result


def _text(text: str, ranks: Mapping[int, str], uids: Mapping[str, str]) -> str:
    for uid, placeholder in uids.items():
        text = text.replace(uid, placeholder)
    if "version" in text.lower():
        layout = "-01-02T15:04:05" in text  # Go's reference time: its 2006 is no version
        text = re.sub(
            r"\b\d+\b",
            lambda m: "<n>" if layout and m.group() == "2006" else ranks.get(int(m.group()), "<n>"),
            text,
        )
    return text


def status_shown(document: Mapping[str, Any]) -> dict[str, Any]:
    """A ``Status`` as a record, its causes as a set: kube-apiserver walks a schema's
    properties, labels and an apply's errors in Go's map order, which varies from request to
    request; a refused patch's cause without the patched object it shows, whose times and
    identifiers the normalisation cannot reach inside a string."""
    message = str(document.get("message") or "")
    details = dict(document.get("details") or {})
    causes = []
    for cause in details.pop("causes", None) or []:
        if cause.get("field") == "patch":
            cause = {**cause, "message": str(cause.get("message")).rpartition('": ')[2]}
        causes.append(json.dumps(cause, sort_keys=True))
    if causes:
        message = message.partition(" is invalid: ")[0]  # the causes say the rest
    first, *lines = message.split("\n")
    return {"code": document.get("code"), "reason": document.get("reason"),
            "message": "\n".join([first, *sorted(lines)]), "causes": sorted(causes),
            "details": details}  # fmt: skip


def without_ips(document: Any) -> Any:
    """A Service with its allocated addresses masked (each server picks its own)."""
    if isinstance(document, dict) and document.get("kind") == "Service":
        spec = dict(document.get("spec") or {})
        for key in ("clusterIP", "clusterIPs"):
            if key in spec and spec[key] not in ("None", ["None"]):
                spec[key] = "<allocated>"
        return {**document, "spec": spec}
    return document
