"""The reviewer: which handlers run for a review, with what kwargs, and what is answered."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import anyio
import pytest

import anyop.on as on
from anyop.engine.cycle.object_memories import Memories
from anyop.engine.operator.admission_reviews import Reviewer, open_admission
from anyop.errors import AdmissionError, ConfigError, PermanentError, TemporaryError
from anyop.handlers.causes import WebhookType
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings
from anyop.webhooks.review import ReviewError

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
OLD = {"metadata": {"name": "x", "namespace": "ns", "labels": {"a": "1"}}, "spec": {"v": 1}}
NEW = {"metadata": {"name": "x", "namespace": "ns", "labels": {"a": "1"}}, "spec": {"v": 2}}


def review(**request: Any) -> dict[str, Any]:
    base = {
        "uid": "u-1",
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "UPDATE",
        "object": NEW,
        "oldObject": OLD,
        "userInfo": {"username": "alice"},
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": base | request,
    }


def reviewer(registry: OperatorRegistry) -> Reviewer:
    return Reviewer(registry, OperatorSettings(), [KEX], new_memo=lambda: {"fresh": True})


async def test_handlers_get_the_admission_kwargs() -> None:
    registry = OperatorRegistry()
    seen: dict[str, Any] = {}

    @on.validate("kopfexamples", registry=registry, id="v")
    async def check(**kwargs: Any) -> None:
        seen.update(kwargs)

    await reviewer(registry)(
        review(dryRun=True, subResource="status"),
        headers={"authorization": "Bearer t"},
        sslpeer={"subject": ()},
    )
    assert seen == {}  # subresource=None handlers skip the status subresource
    await reviewer(registry)(review(dryRun=True), headers={"authorization": "Bearer t"})
    assert seen["operation"] == "UPDATE"
    assert seen["subresource"] is None
    assert seen["dryrun"] is True
    assert seen["userinfo"] == {"username": "alice"}
    assert seen["headers"] == {"authorization": "Bearer t"}
    assert seen["headers"]["Authorization"] == "Bearer t"  # any case, as Kopf's handlers read it
    assert seen["sslpeer"] == {}  # no client certificate: an empty mapping, as in Kopf
    assert seen["old"] == OLD
    assert seen["new"] == NEW
    assert [tuple(item)[:2] for item in seen["diff"]] == [("change", ("spec", "v"))]
    assert seen["spec"] == {"v": 2}
    assert seen["labels"] == {"a": "1"}
    assert seen["name"] == "x"
    assert seen["memo"] == {"fresh": True}
    assert seen["reason"] == WebhookType.VALIDATING
    assert seen["warnings"] == []


async def test_a_known_object_gets_its_own_memo_and_a_creation_a_memo_of_its_own() -> None:
    """As in Kopf: validators of an update or a deletion see the memo the object's resource
    handlers fill; a creation (no uid yet) gets a fresh one, which is not kept."""
    registry = OperatorRegistry()
    memos: list[Any] = []
    on.validate("kopfexamples", registry=registry, id="v")(lambda memo, **_: memos.append(memo))
    memories = Memories(lambda: {"kept": True})
    memories.recall("uid-x").memo["seen"] = 3
    known = {**NEW, "metadata": {**NEW["metadata"], "uid": "uid-x"}}
    settings = OperatorSettings()
    new_memo = lambda: {"fresh": True}  # noqa: E731
    server = Reviewer(registry, settings, [KEX], new_memo=new_memo, memories=memories)
    await server(review(object=known, oldObject=known))
    await server(review(operation="DELETE", object=None, oldObject=known))
    await server(review(operation="CREATE", oldObject=None))
    assert memos[0] is memos[1] is memories.recall("uid-x").memo
    assert memos[2] == {"fresh": True}
    assert len(memories) == 1


async def test_an_error_denies_and_the_admission_error_wins(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="a")
    def a(**_: Any) -> None:
        raise TemporaryError("later")

    @on.validate("kopfexamples", registry=registry, id="b")
    def b(**_: Any) -> None:
        raise AdmissionError("not like this", code=422)

    answer = await reviewer(registry)(review())
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"] == {"message": "not like this", "code": 422}
    answer = await reviewer(registry)(review(), webhook="a")
    assert answer["response"]["status"] == {"message": "later", "code": 500}
    denial = [r for r in caplog.records if "'b'" in r.getMessage()]
    assert [r.getMessage() for r in denial] == ["Webhook 'b' denied: not like this"]
    assert denial[0].levelno == logging.INFO  # a denial as meant: normal operation
    assert denial[0].exc_info is None
    assert any("'a' failed with an exception." in r.getMessage() for r in caplog.records)


async def test_a_permanent_error_that_is_no_admission_error_is_logged_as_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="c")
    def c(**_: Any) -> None:
        raise PermanentError("broken")

    answer = await reviewer(registry)(review())
    assert answer["response"]["allowed"] is False
    failures = [r for r in caplog.records if "'c'" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in failures] == [
        (logging.ERROR, "Webhook 'c' failed permanently: broken")
    ]


async def test_mutations_are_patched_but_not_on_deletion_nor_by_validators() -> None:
    registry = OperatorRegistry()

    @on.mutate("kopfexamples", registry=registry, id="m")
    def mutate(patch: Any, **_: Any) -> None:
        patch.spec["w"] = 3

    @on.validate("kopfexamples", registry=registry, id="v")
    def validate(patch: Any, **_: Any) -> None:
        patch.spec["ignored"] = True

    answer = await reviewer(registry)(review(), webhook="m")
    ops = json.loads(base64.b64decode(answer["response"]["patch"]))
    assert ops == [{"op": "add", "path": "/spec/w", "value": 3}]
    validated = await reviewer(registry)(review(), webhook="v")
    assert "patch" not in validated["response"]
    deleted = await reviewer(registry)(review(operation="DELETE", object=None), webhook="m")
    assert "patch" not in deleted["response"]


async def test_operations_and_filters_select_the_handlers() -> None:
    registry = OperatorRegistry()
    calls: list[str] = []
    on.validate("kopfexamples", registry=registry, id="c", operation="CREATE")(
        lambda **_: calls.append("c")
    )
    on.validate("kopfexamples", registry=registry, id="l", labels={"a": "2"})(
        lambda **_: calls.append("l")
    )
    on.validate("kopfexamples", registry=registry, id="w", when=lambda spec, **_: spec["v"] == 2)(
        lambda **_: calls.append("w")
    )
    await reviewer(registry)(review())
    assert calls == ["w"]


@pytest.mark.fake_time
async def test_a_slow_handler_is_answered_for_by_its_policy() -> None:
    registry = OperatorRegistry()
    options: dict[str, Any] = {"registry": registry, "timeout": 1.2}

    async def slow(**_: Any) -> None:
        await anyio.sleep(10)  # fake time: the handler's work costs no wall time

    on.validate("kopfexamples", id="strict", **options)(slow)
    on.validate("kopfexamples", id="lax", ignore_failures=True, **options)(slow)
    with anyio.fail_after(5):
        strict = await reviewer(registry)(review(), webhook="strict")
        lax = await reviewer(registry)(review(), webhook="lax")
    assert strict["response"]["allowed"] is False
    assert "did not finish within 0.6s" in strict["response"]["status"]["message"]
    assert lax["response"]["allowed"] is True
    assert "Ignored" in lax["response"]["warnings"][0]


async def test_unknown_resources_and_webhook_ids_are_404() -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="v")(lambda **_: None)
    pods = {"group": "", "version": "v1", "resource": "pods"}
    with pytest.raises(ReviewError, match=r"pods\.v1 is not served") as info:
        await reviewer(registry)(review(resource=pods))
    assert info.value.status == 404
    with pytest.raises(ReviewError, match="'nope'"):
        await reviewer(registry)(review(), webhook="nope")


async def test_admission_handlers_without_a_server_fail_the_startup() -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="v")(lambda **_: None)
    with pytest.raises(ConfigError, match=r"settings\.admission\.server"):
        async with open_admission(None, registry, OperatorSettings(), new_memo=dict):  # type: ignore[arg-type]
            pass
