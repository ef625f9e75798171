"""API Priority and Fairness' config producer in FakeCluster: its decisions (pure), and its pass
at the first request after each minute of the fake's clock, on both backends (compared with
kube-apiserver in tests/conformance/test_flowcontrol_producer.py)."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.apf_config_producer import AUTO_UPDATE, MANAGER, revision, unwanted
from anyop.testing.fake.bootstrap import flow_control_configuration

Body = dict[str, Any]
FS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _current(kind: str, name: str, *, said: str | None, generation: int = 1,
             **spec: Any) -> Body:  # fmt: skip
    """A stored bootstrap object with that annotation (``None``: none), generation and spec
    changes."""
    obj = copy.deepcopy(flow_control_configuration()[kind][name])
    obj["metadata"]["generation"] = generation
    obj["metadata"]["annotations"] = {} if said is None else {AUTO_UPDATE: said}
    obj["spec"].update(spec)
    return obj


def _bootstrap(kind: str, name: str) -> Body:
    return flow_control_configuration()[kind][name]


def test_a_suggested_object_as_bootstrapped_is_left_alone() -> None:
    for said in ("true", "True", "1", "t"):  # strconv.ParseBool's ways to say true
        current = _current("FlowSchema", "probes", said=said, generation=4)
        assert revision("FlowSchema", current, _bootstrap("FlowSchema", "probes"),
                        mandatory=False) is None  # fmt: skip


def test_a_suggested_object_that_says_true_gets_its_spec_back() -> None:
    current = _current("FlowSchema", "probes", said="true", generation=2, matchingPrecedence=9)
    revised = revision("FlowSchema", current, _bootstrap("FlowSchema", "probes"), mandatory=False)
    assert revised is not None
    assert revised["spec"] == _bootstrap("FlowSchema", "probes")["spec"]
    assert revised["metadata"]["annotations"] == {AUTO_UPDATE: "true"}  # (as it was)
    assert revised["metadata"]["generation"] == 2  # the rest is the current object's


def test_a_suggested_object_that_says_false_keeps_its_spec() -> None:
    for said in ("false", "0", "F"):
        current = _current("FlowSchema", "probes", said=said, matchingPrecedence=9)
        assert revision("FlowSchema", current, _bootstrap("FlowSchema", "probes"),
                        mandatory=False) is None  # fmt: skip


def test_without_a_boolean_generation_one_decides() -> None:
    bootstrap = _bootstrap("FlowSchema", "probes")
    for said in (None, "yes", ""):
        first = _current("FlowSchema", "probes", said=said, generation=1, matchingPrecedence=9)
        revised = revision("FlowSchema", first, bootstrap, mandatory=False)
        assert revised is not None
        assert revised["spec"] == bootstrap["spec"]
        assert revised["metadata"]["annotations"] == {AUTO_UPDATE: "true"}
        later = _current("FlowSchema", "probes", said=said, generation=2, matchingPrecedence=9)
        revised = revision("FlowSchema", later, bootstrap, mandatory=False)
        assert revised is not None
        assert revised["spec"]["matchingPrecedence"] == 9  # kept: only the annotation is set
        assert revised["metadata"]["annotations"] == {AUTO_UPDATE: "false"}


def test_a_mandatory_object_is_always_set_right() -> None:
    bootstrap = _bootstrap("FlowSchema", "catch-all")
    current = _current("FlowSchema", "catch-all", said="false", generation=3)
    revised = revision("FlowSchema", current, bootstrap, mandatory=True)
    assert revised is not None
    assert revised["metadata"]["annotations"] == {AUTO_UPDATE: "true"}
    assert revised["spec"] == bootstrap["spec"]


def test_the_exempt_levels_numbers_are_its_own() -> None:
    bootstrap = _bootstrap("PriorityLevelConfiguration", "exempt")
    changed = {"nominalConcurrencyShares": 10, "lendablePercent": 50}
    current = _current("PriorityLevelConfiguration", "exempt", said="true", exempt=changed)
    assert revision("PriorityLevelConfiguration", current, bootstrap, mandatory=True) is None
    limited = _current("PriorityLevelConfiguration", "catch-all", said="true",
                       limited={"nominalConcurrencyShares": 6, "lendablePercent": 0,
                                "limitResponse": {"type": "Reject"}})  # fmt: skip
    catch_all = _bootstrap("PriorityLevelConfiguration", "catch-all")
    revised = revision("PriorityLevelConfiguration", limited, catch_all, mandatory=True)
    assert revised is not None
    assert revised["spec"]["limited"]["nominalConcurrencyShares"] == 5


def test_the_unwanted_objects_say_true() -> None:
    def named(name: str, said: str | None) -> Body:
        annotations = {} if said is None else {AUTO_UPDATE: said}
        return {"metadata": {"name": name, "annotations": annotations}}

    objects = [named("z", "true"), named("a", "1"), named("kept", "false"), named("odd", "yes"),
               named("bare", None), named("probes", "true")]  # fmt: skip
    assert unwanted(objects, ["probes"]) == ["a", "z"]


# -- the pass of each minute, on both backends ----------------------------------------------------


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The event loop's time as the fake reads it, set by the test (on either backend)."""
    now = [1000.0]
    monkeypatch.setattr(anyio, "current_time", lambda: now[0])
    return now


@pytest.mark.anyio
async def test_the_producer_passes_at_the_first_request_after_each_minute(
    clock: list[float],
) -> None:
    fake = FakeCluster()
    async with fake.client() as api:
        assert (await api.delete(f"{FS}/probes")).status_code == 200
        body = {"metadata": {"name": "mine", "annotations": {AUTO_UPDATE: "true"}},
                "spec": {"priorityLevelConfiguration": {"name": "global-default"}}}  # fmt: skip
        assert (await api.post(FS, json=body)).status_code == 201
        clock[0] += 59.9
        assert (await api.get(f"{FS}/probes")).status_code == 404  # not yet a minute
        clock[0] += 0.1
        probes = await api.get(f"{FS}/probes")
        assert probes.status_code == 200
        assert probes.json()["metadata"]["creationTimestamp"] == "2026-01-01T00:01:00Z"
        owners = [entry["manager"] for entry in probes.json()["metadata"]["managedFields"]]
        assert MANAGER in owners
        assert (await api.get(f"{FS}/mine")).status_code == 404
        patch = {"spec": {"matchingPrecedence": 7777}}
        changed = await api.patch(f"{FS}/service-accounts", json=patch, headers=MERGE)
        assert changed.json()["spec"]["matchingPrecedence"] == 7777
        clock[0] += 59.0  # the second minute is not over
        found = (await api.get(f"{FS}/service-accounts")).json()
        assert found["spec"]["matchingPrecedence"] == 7777
        clock[0] += 1.0
        found = (await api.get(f"{FS}/service-accounts")).json()
        assert found["spec"]["matchingPrecedence"] == 9000
        assert found["metadata"]["generation"] == 3
    assert fake.store.controller_errors == []
