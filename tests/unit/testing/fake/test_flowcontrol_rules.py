"""API Priority and Fairness' kinds in FakeCluster: their defaults and checks (pure), and the
config consumer's ``Dangling`` condition, set before the write that called for it is answered,
with or without the fake's controllers (compared with kube-apiserver in
tests/conformance/test_flowcontrol.py)."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.apf_config_consumer import (
    CONSUMER,
    apf_config_consumer,
    dangling_condition,
)
from anyop.testing.fake.flowcontrol_rules import CREATES, DEFAULTERS
from anyop.testing.fake.history import Change

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
GROUP = "flowcontrol.apiserver.k8s.io"
FS = f"/apis/{GROUP}/v1/flowschemas"
PLC = f"/apis/{GROUP}/v1/prioritylevelconfigurations"


def _defaulted(kind: str, spec: Body) -> Body:
    obj: Body = {"metadata": {"name": "x"}, "spec": spec}
    DEFAULTERS[(GROUP, kind)](obj)
    return obj["spec"]


def _messages(kind: str, name: str, spec: Body) -> list[str]:
    obj = {"metadata": {"name": name}, "spec": spec}
    return [f"{field}: {cause['message']}" for field, cause in CREATES[(GROUP, kind)](obj)]


def test_a_flow_schema_gets_its_matching_precedence() -> None:
    assert _defaulted("FlowSchema", {})["matchingPrecedence"] == 1000
    assert _defaulted("FlowSchema", {"matchingPrecedence": 0})["matchingPrecedence"] == 1000
    assert _defaulted("FlowSchema", {"matchingPrecedence": 7})["matchingPrecedence"] == 7


def test_a_limited_level_keeps_zero_shares_but_fills_missing_ones_and_its_queuing() -> None:
    queue = {"type": "Queue", "queuing": {}}
    spec = {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": queue}}
    assert _defaulted("PriorityLevelConfiguration", spec)["limited"] == {
        "nominalConcurrencyShares": 0, "lendablePercent": 0,
        "limitResponse": {"type": "Queue",
                          "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}},
    }  # fmt: skip
    limited = _defaulted("PriorityLevelConfiguration", {"limited": {}})["limited"]
    assert limited["nominalConcurrencyShares"] == 30
    exempt = _defaulted("PriorityLevelConfiguration", {"exempt": {"lendablePercent": 5}})
    assert exempt["exempt"] == {"lendablePercent": 5, "nominalConcurrencyShares": 0}


def test_a_flow_schema_is_checked_in_gos_order_with_its_words() -> None:
    urls = [{"verbs": ["*", "get"], "nonResourceURLs": ["a"]}]
    spec = {"matchingPrecedence": 1, "distinguisherMethod": {"type": "X"},
            "rules": [{"subjects": [{"kind": "User", "group": {"name": "g"}}],
                       "nonResourceRules": urls}]}  # fmt: skip
    assert _messages("FlowSchema", "mine", spec) == [
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have "
        "matchingPrecedence 1",
        'spec.distinguisherMethod.type: Unsupported value: {"Type":"X"}: supported values: '
        '"ByNamespace", "ByUser"',
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
        "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is "
        "'User'",
        "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not "
        "'Group'",
        'spec.rules[0].nonResourceRules[0].verbs: Invalid value: ["*","get"]: if \'*\' is '
        "present, must not specify other verbs",
        'spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "a": must start '
        "with slash",
    ]  # fmt: skip


def test_a_level_is_checked_with_its_queuing_and_shuffle_sharding() -> None:
    spec = {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
        "queues": 128, "handSize": 10, "queueLengthLimit": 0}}}}  # fmt: skip
    assert _messages("PriorityLevelConfiguration", "mine", spec) == [
        "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits "
        "of deckSize 128 and handSize 10 should not be greater than 60",
    ]
    queuing = {"type": "Limited", "limited": {"limitResponse": {"type": "Queuing"}}}
    assert _messages("PriorityLevelConfiguration", "mine", queuing) == [
        'spec.limited.limitResponse.type: Unsupported value: "Queuing": supported values: '
        '"Queue", "Reject"'
    ]


def test_the_mandatory_objects_show_their_spec_as_gos_internal_struct() -> None:
    spec = {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0,
                                           "limitResponse": {"type": "Reject"}}}  # fmt: skip
    assert _messages("PriorityLevelConfiguration", "catch-all", spec) == []
    spec["limited"]["borrowingLimitPercent"] = 1
    assert _messages("PriorityLevelConfiguration", "catch-all", spec) == [
        'spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":5,'
        '"LimitResponse":{"Type":"Reject","Queuing":null},"LendablePercent":0,'
        '"BorrowingLimitPercent":1},"Exempt":null}: spec of \'catch-all\' must equal the fixed '
        "value"
    ]  # fmt: skip
    exempt = {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 9}}
    assert _messages("PriorityLevelConfiguration", "exempt", exempt) == []


def test_the_consumer_ignores_other_resources_at_once() -> None:
    class Untouchable:
        @property
        def objects(self) -> Any:
            raise AssertionError("read the store")

    change = Change(1, ("", "configmaps"), "ADDED", {"metadata": {"name": "c"}}, None)
    apf_config_consumer(Untouchable(), change)  # type: ignore[arg-type]


@pytest.mark.parametrize("controllers", [False, True])
async def test_a_flow_schema_says_whether_its_level_exists_before_the_answer(
    controllers: bool,
) -> None:
    fake = FakeCluster(controllers=controllers)
    schema = {"metadata": {"name": "mine"}, "spec": {"priorityLevelConfiguration": {"name": "p"}}}
    rejecting = {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}
    level = {"metadata": {"name": "p"}, "spec": rejecting}
    async with fake.client() as api:
        made = (await api.post(FS, json=schema)).json()
        missing = (await api.get(f"{FS}/mine")).json()
        await api.post(PLC, json=level)
        found = (await api.get(f"{FS}/mine")).json()
        await api.delete(f"{PLC}/p")
        gone = (await api.get(f"{FS}/mine")).json()
    assert made["status"] == {}
    conditions = [
        [{k: v for k, v in item.items() if k != "lastTransitionTime"}
         for item in body["status"]["conditions"]]
        for body in (missing, found, gone)
    ]  # fmt: skip
    assert conditions == [[dangling_condition("p", found=False)],
                          [dangling_condition("p", found=True)],
                          [dangling_condition("p", found=False)]]  # fmt: skip
    assert conditions[0][0]["reason"] == "NotFound"
    owners = [(entry["manager"], entry.get("subresource")) for entry in
              found["metadata"]["managedFields"]]  # fmt: skip
    assert (CONSUMER, "status") in owners
    made_at, missing_at = (int(body["metadata"]["resourceVersion"]) for body in (made, missing))
    assert missing_at == made_at + 1
    assert fake.store.controller_errors == []
