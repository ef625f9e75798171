"""Admission webhooks, called over HTTPS as the API server calls them: the async shell around
:mod:`anyop.testing.fake.admission_rules`.

A write that some webhook configuration concerns is first run dry (the store raises
:class:`~anyop.testing.fake.store.WouldCommit` with the object it would store); the mutating
webhooks get it in turn and their JSON patches apply one after another, then the validating
ones get the result; if none refuses, the write runs for real and stores the mutated object
(409 if the object changed meanwhile).

Deliberate differences: the webhook configurations and CRDs themselves are admitted without
webhooks; a mutated object is not checked against the schema again; ``reinvocationPolicy`` and
``matchPolicy: Equivalent`` are not followed (the exact resource and version must match).
"""

from __future__ import annotations

import dataclasses
import ssl
from typing import Any

import httpx

from anyop.testing.fake.admission_rules import (
    OPERATIONS,
    Admission,
    Verdict,
    Webhook,
    failure,
    matching_webhooks,
    review_of,
    verdict_of,
)
from anyop.testing.fake.api import ApiRequest, ApiResponse, handle
from anyop.testing.fake.json_patches import PatchFailed, apply_json_patch
from anyop.testing.fake.kind_warnings import warning_header
from anyop.testing.fake.kinds import CRD_KIND, MUTATING_KIND, VALIDATING_KIND
from anyop.testing.fake.routes import Route, parse_path
from anyop.testing.fake.statuses import success
from anyop.testing.fake.store import Store, WouldCommit, shown

__all__ = ["Outcome", "admit", "has_webhooks"]

Body = dict[str, Any]


def has_webhooks(store: Store) -> bool:
    """Whether any webhook configuration exists."""
    return any(
        store.objects[(kind.group, kind.plural)] for kind in (MUTATING_KIND, VALIDATING_KIND)
    )


def _would_write(store: Store, request: ApiRequest, address: str) -> WouldCommit | ApiResponse:
    """What the request would store, or its answer if it stores nothing (refused, or no
    change)."""
    store.dry_run = True
    try:
        answer = handle(store, request, address)
    except WouldCommit as would:
        return would
    finally:
        store.dry_run = False
    assert isinstance(answer, ApiResponse)  # watches are no writes
    return answer


def _admission(
    store: Store, request: ApiRequest, would: WouldCommit, *, dry_run: bool
) -> Admission | None:
    route = parse_path(request.path)
    if not isinstance(route, Route) or would.kind in (CRD_KIND, MUTATING_KIND, VALIDATING_KIND):
        return None
    operation = OPERATIONS[request.method]
    metadata = (would.old or would.obj).get("metadata") or {}
    namespace = metadata.get("namespace") if would.kind.namespaced else None
    found = store.namespace(namespace) if namespace else None
    return Admission(
        operation,
        would.kind,
        route.subresource,
        namespace,
        str(metadata.get("name") or ""),
        None if operation == "DELETE" else would.obj,
        would.old,
        namespace_labels=((found or {}).get("metadata") or {}).get("labels") or {},
        dry_run=dry_run,
    )


async def _call(webhook: Webhook, review: Body, uid: str) -> Verdict:
    """POST the review; the verdict. Raises what went wrong, for the failure policy."""
    pem = webhook.ca_bundle
    context = ssl.create_default_context(cadata=pem) if pem else ssl.create_default_context()
    async with httpx.AsyncClient(verify=context, timeout=webhook.timeout) as client:
        response = await client.post(webhook.url, json=review)
    if response.status_code != 200:
        raise ValueError(f"the server answered HTTP {response.status_code}")
    return verdict_of(webhook, response.json(), uid)


async def _consult(store: Store, webhook: Webhook, admission: Admission) -> Verdict:
    """The webhook's verdict, or the failure policy's."""
    uid = store.uid()
    try:
        return await _call(webhook, review_of(admission, uid), uid)
    except (httpx.HTTPError, ssl.SSLError, ValueError, OSError) as exc:
        error = f"failed to call webhook: {exc or type(exc).__name__}"
        return Verdict(failure(webhook, error) if webhook.fails_closed else None)


@dataclasses.dataclass
class Outcome:
    """What admission decided.

    Attributes:
        answer: The answer to send instead of running the write: a refusal, or a dry run's
            result; ``None`` to run it (with ``store.substitute`` set if it was mutated).
        warnings: The webhooks' warnings, for ``Warning`` headers.
    """

    answer: ApiResponse | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)

    def refuse(self, status: Body) -> Outcome:
        """Refuse the write with this ``Status``."""
        self.answer = ApiResponse(int(status["code"]), status)
        return self


async def _run_webhooks(
    store: Store, admission: Admission, outcome: Outcome
) -> tuple[Outcome, Body | None]:
    obj = admission.obj
    configurations = list(store.objects[(MUTATING_KIND.group, MUTATING_KIND.plural)].values())
    for webhook in matching_webhooks(configurations, admission, mutating=True):
        verdict = await _consult(store, webhook, admission)
        outcome.warnings += verdict.warnings
        if verdict.refusal is not None:
            return outcome.refuse(verdict.refusal), obj
        if verdict.patch and obj is not None:
            try:
                obj = apply_json_patch(obj, verdict.patch)
            except PatchFailed as exc:
                return outcome.refuse(failure(webhook, f"its patch does not apply: {exc}")), obj
            admission = dataclasses.replace(admission, obj=obj)
    configurations = list(store.objects[(VALIDATING_KIND.group, VALIDATING_KIND.plural)].values())
    for webhook in matching_webhooks(configurations, admission, mutating=False):
        verdict = await _consult(store, webhook, admission)
        outcome.warnings += verdict.warnings
        if verdict.refusal is not None:
            return outcome.refuse(verdict.refusal), obj
    return outcome, obj


async def admit(
    store: Store, request: ApiRequest, address: str, *, dry_run: bool = False
) -> Outcome:
    """Run the webhooks a write concerns; with ``dry_run``, answer it without storing."""
    would = _would_write(store, request, address)
    if isinstance(would, ApiResponse):
        return Outcome(would if dry_run else None)
    recorded = list(store.warnings or [])  # its run's, before other requests run meanwhile
    admission = _admission(store, request, would, dry_run=dry_run)
    outcome, obj = Outcome(), (None if would.type == "DELETED" else would.obj)
    if admission is not None:
        outcome, obj = await _run_webhooks(store, admission, outcome)
    if outcome.answer is not None:
        return outcome
    if dry_run:  # with the warnings its run recorded
        answer = _dry_answer(request, would, obj)
        headers = warning_header(recorded)
        outcome.answer = dataclasses.replace(answer, headers={**answer.headers, **headers})
    elif obj is not None and obj != would.obj:
        old_version = (would.old or {}).get("metadata", {}).get("resourceVersion")
        store.substitute = (old_version, obj)
    return outcome


def _dry_answer(request: ApiRequest, would: WouldCommit, obj: Body | None) -> ApiResponse:
    kind, metadata = would.kind, would.obj["metadata"]
    if would.type == "DELETED":
        return ApiResponse(
            200, success(metadata["name"], kind.group, kind.plural, uid=metadata["uid"])
        )
    return ApiResponse(201 if request.method == "POST" else 200, shown(kind, obj or would.obj))
