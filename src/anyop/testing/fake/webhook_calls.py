"""Admission webhooks, called over HTTPS as the API server calls them: the async shell around
:mod:`anyop.testing.fake.admission_rules`, in kube-apiserver's order.

A write that some webhook configuration concerns is run dry up to its mutating point (see
:mod:`anyop.testing.fake.admission_points`): the object as decoded, defaulted and given its
``managedFields``, before the strategy (no uid, creation time or generated name on a create,
the generation not yet counted on an update). The mutating webhooks get it in turn, their JSON
patches applied one after another; the write then runs dry again with the mutated object in
its place (the strategy prepares, validates, warns about it; a custom resource's is pruned and
defaulted again) up to its validating point, where the validating webhooks get the object as
it would be stored. If none refuses, the write runs for real with the mutated object (409 if
the object changed meanwhile). A DELETE's webhooks get the stored object (a mutating one may
not patch it). An update's ``resourceVersion`` precondition is checked on the object the
mutating webhooks leave (409 if stale, 422 if a custom resource's replace sends none), after
them. Warnings come in kube-apiserver's order: the request's fields', the mutating webhooks',
the strategy's, the validating webhooks'.

A field a mutating webhook adds to a custom resource that its schema does not declare reaches
the validating webhooks, and is pruned as the object is stored. A ``/scale`` write's webhooks
get ``autoscaling/v1`` Scales: the mutating ones with the ``managedFields`` of the replicas'
owners, the validating ones without; the mutated Scale's replicas (and ``resourceVersion``)
are what the write stores.

Deliberate differences: the webhook configurations and CRDs themselves are admitted without
webhooks; ``reinvocationPolicy`` and ``matchPolicy: Equivalent`` are not followed (the exact
resource and version must match); an update both stale and invalid is refused as invalid
without its webhooks (kube-apiserver: they are called, then it is refused as stale); the
webhooks are called once per write (kube-apiserver calls them again where its watch cache was
behind the stored object: the stale attempt fails to commit and is retried).
"""

from __future__ import annotations

import dataclasses
import json
import ssl
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from anyop.testing.fake.admission_points import AdmissionPoints, WouldMutate
from anyop.testing.fake.admission_rules import (
    Admission,
    Verdict,
    Webhook,
    failure,
    matching_webhooks,
    review_of,
    verdict_of,
)
from anyop.testing.fake.api import ApiRequest, ApiResponse, handle
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.json_patches import PatchFailed, apply_json_patch
from anyop.testing.fake.kind_warnings import warning_header
from anyop.testing.fake.kinds import CRD_KIND, MUTATING_KIND, VALIDATING_KIND, Kind
from anyop.testing.fake.managed_fields import entries_of, in_order, scale_entries
from anyop.testing.fake.routes import Route, parse_path
from anyop.testing.fake.scales import replicas_path, scale_of, scaled
from anyop.testing.fake.schemas import default, prune
from anyop.testing.fake.statuses import conflict, status_body, success
from anyop.testing.fake.store import Store, WouldCommit, shown

__all__ = ["Outcome", "admit", "has_webhooks"]

Body = dict[str, Any]
_UNADMITTED = {(kind.group, kind.plural) for kind in (CRD_KIND, MUTATING_KIND, VALIDATING_KIND)}
_DELETE_OPTIONS = ("gracePeriodSeconds", "preconditions", "orphanDependents",
                   "propagationPolicy", "dryRun")  # fmt: skip


def has_webhooks(store: Store) -> bool:
    """Whether any webhook configuration exists."""
    return any(
        store.objects[(kind.group, kind.plural)] for kind in (MUTATING_KIND, VALIDATING_KIND)
    )


class _Points(AdmissionPoints):
    """A request's admission points: ``find`` (a dry run: stop where the webhooks would be
    called), ``apply`` (a dry run with the mutated object), ``final`` (the write itself).
    Each point acts once, for the request's own resource (not a controller's write)."""

    def __init__(self, store: Store, route: Route, request: ApiRequest) -> None:
        self.store, self.route = store, route
        self.phase = "find"
        self.used: set[str] = set()
        self.view: Body | None = None  # what the mutating webhooks get
        self.old: Body | None = None
        self.early: list[str] = []  # the warnings recorded before the mutating point
        self.owners: list[Body] | None = None
        self.mutated: Body | None = None
        self.warnings: list[str] = []  # the mutating webhooks'
        self.inert = request.method == "DELETE"  # (its webhooks get the stored object)
        self.scale = route.subresource == "scale"  # (its webhooks get Scales)
        self.old_view: Body | None = None  # what the mutating webhooks get as the old object

    def _acts(self, kind: Kind, point: str) -> bool:
        if self.inert or (kind.group, kind.plural) != (self.route.group, self.route.plural):
            return False
        if point in self.used:
            return False
        self.used.add(point)
        return True

    def mutating(self, kind: Kind, old: Body | None, obj: Body) -> Body:
        if not self._acts(kind, "mutating"):
            return obj
        if self.phase == "find":
            self.old, self.early = old, list(self.store.warnings or [])
            self.old_view = old
            if self.scale and old is not None:
                self.view = scale_of(kind, obj, updating=True)
                self.old_view = scale_of(kind, old, updating=True)
                if entries := scale_entries(entries_of(old), replicas_path(kind)):
                    self.old_view["metadata"]["managedFields"] = in_order(entries)
                return obj
            view = json_copy(obj)
            metadata = view.setdefault("metadata", {})
            metadata.pop("managedFields", None)
            if kind.namespaced and self.route.namespace:
                metadata["namespace"] = self.route.namespace
            if kind.custom and kind.schema:  # as the request decoded it: defaulted, pruned
                view = prune(default(view, kind.schema), kind.schema)
            self.view = {**view, "apiVersion": kind.api_version, "kind": kind.kind}
            return obj
        version = ((self.old or {}).get("metadata") or {}).get("resourceVersion")
        if old is not None and (old.get("metadata") or {}).get("resourceVersion") != version:
            raise conflict(kind.plural, kind.group, str(old["metadata"].get("name")))
        if self.store.warnings is not None:
            self.store.warnings += self.warnings
        if self.mutated is None:
            return obj
        if self.scale:
            return scaled(kind, obj, self.mutated)
        from anyop.testing.fake.writes import decoded  # (the writes call the points)

        return decoded(kind, json_copy(self.mutated), stored=old)

    def made(self, kind: Kind) -> bool:
        # Found first (the webhooks are called with the object as sent), checked after them.
        return self.phase != "find" or (kind.group, kind.plural) != (
            self.route.group, self.route.plural)  # fmt: skip

    def owned(self, owners: list[Body] | None) -> list[Body] | None:
        if "mutating" not in self.used or "owned" in self.used:
            return owners
        self.used.add("owned")
        if self.phase != "find":
            return self.owners
        self.owners = owners
        assert self.view is not None
        kind = self._kind()
        shown = scale_entries(owners, replicas_path(kind)) if self.scale and owners else owners
        if shown:
            self.view["metadata"]["managedFields"] = in_order(json_copy(shown))
        raise WouldMutate(kind, self.view, old=json_copy(self.old_view))

    def validating(self, kind: Kind, obj: Body) -> None:
        if self.phase != "final" and self.store.dry_run and self._acts(kind, "validating"):
            type_, seen = ("ADDED" if self.old is None else "MODIFIED"), json_copy(obj)
            if self.old is not None and not seen["metadata"].get("resourceVersion"):
                seen["metadata"]["resourceVersion"] = self.old["metadata"]["resourceVersion"]
            if self.mutated is not None and kind.custom and kind.schema and not self.scale:
                self._unpruned(kind, seen)
            if self.scale:
                seen = scale_of(kind, seen, updating=True)
            raise WouldCommit(kind, type_, seen, old=json_copy(self.old))

    def _unpruned(self, kind: Kind, seen: Body) -> None:
        """Put back in ``seen`` the fields the mutating webhooks added to a custom resource that
        its schema prunes: kube-apiserver prunes them as it stores the object, after the
        validating webhooks got it (those a strategy resets excepted: the other part than a
        ``/status`` write's, a main write's status)."""
        assert self.mutated is not None
        status = self.route.subresource == "status"
        mutated = {key: value for key, value in self.mutated.items()
                   if key not in ("apiVersion", "kind", "metadata")
                   and ((key == "status") == status or not kind.status)}  # fmt: skip
        _graft(seen, mutated, prune(default(mutated, kind.schema), kind.schema))

    def _kind(self) -> Kind:
        found = self.store.kind(self.route.group, self.route.version, self.route.plural)
        assert found is not None
        return found

    def validated_old(self, kind: Kind) -> Body | None:
        """The old object the validating webhooks get (a ``/scale`` write's: its Scale, without
        ``managedFields``)."""
        if self.scale and self.old is not None:
            return scale_of(kind, self.old, updating=True)
        return self.old

    def again(self, phase: str) -> None:
        """Ready the points for the next run of the write."""
        self.phase, self.used = phase, set()


def _graft(seen: Any, mutated: Any, pruned: Any) -> None:
    """Put in ``seen`` what pruning took from ``mutated`` (``pruned`` is what it left): the
    fields, not the nulls, at the places ``seen`` still has."""
    if isinstance(seen, dict) and isinstance(mutated, Mapping) and isinstance(pruned, Mapping):
        for key, value in mutated.items():
            if key not in pruned and value is not None:
                seen[key] = json_copy(value)
            elif key in seen and key in pruned:
                _graft(seen[key], value, pruned[key])
    elif isinstance(seen, list) and isinstance(mutated, list) and isinstance(pruned, list):
        for inside, value, left in zip(seen, mutated, pruned, strict=False):  # (same lengths)
            _graft(inside, value, left)


def _dry(
    store: Store, request: ApiRequest, address: str, points: AdmissionPoints
) -> WouldMutate | WouldCommit | ApiResponse:
    """The request run dry with these admission points: where it stopped, or its answer
    (refused, or no change). (The points are the store's for the run alone: other requests
    run while the webhooks are called.)"""
    store.dry_run, store.admission = True, points
    try:
        answer = handle(store, request, address)
        assert isinstance(answer, ApiResponse)  # watches are no writes
        return answer
    except (WouldMutate, WouldCommit) as stopped:
        return stopped
    finally:
        store.dry_run, store.admission = False, AdmissionPoints()


def _drawn(
    store: Store, request: ApiRequest, address: str, points: AdmissionPoints
) -> tuple[WouldMutate | WouldCommit | ApiResponse, tuple[Any, Any]]:
    """:func:`_dry`, and the store's random state before and after it."""
    before = store.rng.getstate()
    stopped = _dry(store, request, address, points)
    return stopped, (before, store.rng.getstate())


def _options(request: ApiRequest, operation: str) -> Body:
    """The request's options, as the webhooks get them."""
    kinds = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
    options: Body = {"kind": kinds[operation], "apiVersion": "meta.k8s.io/v1"}
    query = request.query
    if operation == "DELETE":
        try:
            body = json.loads(request.body) if request.body else {}
        except ValueError:
            body = {}
        body = body if isinstance(body, Mapping) else {}
        options |= {key: body[key] for key in _DELETE_OPTIONS if body.get(key) is not None}
        if "gracePeriodSeconds" in query and query["gracePeriodSeconds"].lstrip("-").isdigit():
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        if query.get("propagationPolicy"):
            options["propagationPolicy"] = query["propagationPolicy"]
    else:
        for key in ("fieldManager", "fieldValidation"):
            if query.get(key):
                options[key] = query[key]
    if query.get("dryRun") == "All":
        options["dryRun"] = ["All"]
    return options


def _admission(
    store: Store, request: ApiRequest, route: Route, kind: Kind, obj: Body | None,
    old: Body | None, *, dry_run: bool,
) -> Admission:  # fmt: skip
    operation = "DELETE" if request.method == "DELETE" else "CREATE" if old is None else "UPDATE"
    metadata = (old or obj or {}).get("metadata") or {}
    namespace = (metadata.get("namespace") or route.namespace) if kind.namespaced else None
    found = store.namespace(namespace) if namespace else None
    return Admission(
        operation,
        kind,
        route.subresource,
        namespace,
        str(metadata.get("name") or ""),
        None if operation == "DELETE" else obj,
        old,
        namespace_labels=((found or {}).get("metadata") or {}).get("labels") or {},
        dry_run=dry_run,
        options=_options(request, operation),
        object_kind=("autoscaling", "v1", "Scale") if route.subresource == "scale" else None,
    )


def _go_error(webhook: Webhook, url: str, exc: Exception) -> str:
    """What Go's HTTP client says of a failed call."""
    if isinstance(exc, httpx.TimeoutException):
        return f'Post "{url}": context deadline exceeded'
    if isinstance(exc, httpx.ConnectError) and "SSL" not in str(exc):
        address = httpx.URL(url)
        port = address.port or 443
        return f'Post "{url}": dial tcp {address.host}:{port}: connect: connection refused'
    return str(exc) or type(exc).__name__


async def _call(webhook: Webhook, review: Body, uid: str) -> Verdict:
    """POST the review; the verdict. Raises what went wrong, for the failure policy."""
    pem = webhook.ca_bundle
    context = ssl.create_default_context(cadata=pem) if pem else ssl.create_default_context()
    seconds = int(webhook.timeout)
    url = f"{webhook.url}{'&' if '?' in webhook.url else '?'}timeout={seconds}s"
    try:
        async with httpx.AsyncClient(verify=context, timeout=webhook.timeout) as client:
            response = await client.post(url, json=review)
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        raise ValueError(_go_error(webhook, url, exc)) from exc
    if response.status_code != 200:
        raise ValueError(f"the server answered HTTP {response.status_code}")
    return verdict_of(webhook, response.json(), uid)


async def _consult(store: Store, webhook: Webhook, admission: Admission) -> Verdict:
    """The webhook's verdict, or the failure policy's."""
    uid = str(uuid.uuid4())  # (not the store's: its uids are the objects')
    try:
        return await _call(webhook, review_of(admission, uid), uid)
    except ValueError as exc:
        error = f"failed to call webhook: {exc}"
        return Verdict(failure(webhook, error) if webhook.fails_closed else None)


@dataclasses.dataclass
class Outcome:
    """What admission decided.

    Attributes:
        answer: The answer to send instead of running the write: a refusal, or a dry run's
            result; ``None`` to run it (with ``store.admission`` set for its points).
        warnings: The warnings to send after the answer's own, for ``Warning`` headers.
    """

    answer: ApiResponse | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)

    def refuse(self, status: Body) -> Outcome:
        """Refuse the write with this ``Status``."""
        self.answer = ApiResponse(int(status["code"]), status)
        return self


def _configurations(store: Store, kind: Kind) -> list[Body]:
    return list(store.objects[(kind.group, kind.plural)].values())


async def _mutate(store: Store, admission: Admission, outcome: Outcome) -> Body | None:
    """Run the mutating webhooks; the object they leave (``None``: refused, or unchanged)."""
    obj, changed = admission.obj, False
    for webhook in matching_webhooks(_configurations(store, MUTATING_KIND), admission,
                                     mutating=True):  # fmt: skip
        verdict = await _consult(store, webhook, admission)
        outcome.warnings += verdict.warnings
        if verdict.refusal is not None:
            outcome.refuse(verdict.refusal)
            return None
        if verdict.patch and admission.operation == "DELETE":
            message = f'admission webhook "{webhook.name}" attempted to modify the object, ' \
                "which is not supported for this operation"  # fmt: skip
            outcome.refuse(status_body(500, "InternalError", f"Internal error occurred: {message}",
                                       details={"causes": [{"message": message}]}))  # fmt: skip
            return None
        if verdict.patch and obj is not None:
            try:
                obj, changed = apply_json_patch(obj, verdict.patch), True
            except PatchFailed as exc:
                outcome.refuse(failure(webhook, f"its patch does not apply: {exc}"))
                return None
            admission = dataclasses.replace(admission, obj=obj)
    return obj if changed else None


async def _validate(store: Store, admission: Admission, outcome: Outcome) -> None:
    for webhook in matching_webhooks(_configurations(store, VALIDATING_KIND), admission,
                                     mutating=False):  # fmt: skip
        verdict = await _consult(store, webhook, admission)
        outcome.warnings += verdict.warnings
        if verdict.refusal is not None:
            outcome.refuse(verdict.refusal)
            return


async def admit(
    store: Store, request: ApiRequest, address: str, *, dry_run: bool = False
) -> Outcome:
    """Run the webhooks a write concerns; with ``dry_run``, answer it without storing.
    Without an answer, the write is to run next (at once: no other request between) with
    ``store.admission`` as left here (reset it after)."""
    route = parse_path(request.path)
    if not isinstance(route, Route) or (route.group, route.plural) in _UNADMITTED:
        would = _dry(store, request, address, AdmissionPoints())
        if not dry_run:
            return Outcome()
        if isinstance(would, WouldCommit):
            return Outcome(_dry_answer(request, would, store.warnings or []))
        assert isinstance(would, ApiResponse)  # (no admission points here)
        return Outcome(would)
    points = _Points(store, route, request)
    outcome = Outcome()
    stopped, drawn = _drawn(store, request, address, points)
    if isinstance(stopped, WouldMutate):
        admission = _admission(store, request, route, stopped.kind, stopped.obj, stopped.old,
                               dry_run=dry_run)  # fmt: skip
        points.mutated = await _mutate(store, admission, outcome)
        points.warnings = outcome.warnings
        if outcome.answer is not None:
            outcome.warnings = points.early + outcome.warnings
            return outcome
        points.again("apply")
        stopped, drawn = _drawn(store, request, address, points)
    assert not isinstance(stopped, WouldMutate)  # (its mutating point acts once)
    if not isinstance(stopped, WouldCommit):  # refused, or (a create's) nothing to admit
        return Outcome(stopped if dry_run or stopped.status >= 400 else None)
    recorded = list(store.warnings or [])
    old = points.validated_old(stopped.kind) if points.view is not None else stopped.old
    obj = None if request.method == "DELETE" else stopped.obj
    admission = _admission(store, request, route, stopped.kind, obj, old, dry_run=dry_run)
    outcome = Outcome()
    if admission.operation == "DELETE":
        await _mutate(store, admission, outcome)
    if outcome.answer is None:
        await _validate(store, admission, outcome)
    if outcome.answer is not None:
        outcome.warnings = recorded + outcome.warnings
        return outcome
    points.again("final")
    if store.rng.getstate() == drawn[1]:  # the uid and name it drew, drawn again (unless
        store.rng.setstate(drawn[0])  # another request drew meanwhile)
    if dry_run:
        final = _dry(store, request, address, points)
        if isinstance(final, WouldCommit):
            final = _dry_answer(request, final, store.warnings or [])
        assert isinstance(final, ApiResponse)  # (no mutating point acts again)
        outcome.answer = final
    else:
        store.admission = points  # for the write itself, next
    return outcome


def _dry_answer(request: ApiRequest, would: WouldCommit, warnings: list[str]) -> ApiResponse:
    kind, metadata = would.kind, would.obj["metadata"]
    headers = warning_header(warnings)
    if would.type == "DELETED":
        body = success(metadata["name"], kind.group, kind.plural, uid=metadata["uid"])
        return ApiResponse(200, body, headers=headers)
    status = 201 if request.method == "POST" or would.old is None else 200
    return ApiResponse(status, shown(kind, would.obj), headers=headers)
