"""ResourceSlices' rules (pure): what the conformance scenarios
(tests/conformance/test_resource_slices.py) cannot reach against the real server: the strategy's
warnings, a taint's time and the generation it counts, fields kept where the stored slice has
them, taints left unchecked where an update keeps them, the cut of long map keys."""

from __future__ import annotations

import copy
from typing import Any

from anyop.testing.fake.kind_warnings import warnings_on_create, warnings_on_update
from anyop.testing.fake.kinds import BUILTIN_KINDS
from anyop.testing.fake.resource_slice_rules import (
    CREATES,
    DEFAULTERS,
    UPDATES,
    prepared,
    truncated_key,
    warnings,
)

KEY = ("resource.k8s.io", "ResourceSlice")
NOW = "2026-01-01T00:00:05Z"


def _slice(*devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    pool = {"name": "p", "generation": 0, "resourceSliceCount": 1}
    return {"metadata": {"name": "s", "generation": 1},
            "spec": {"driver": "dra.example.com", "nodeName": "n", "devices": list(devices),
                     "pool": pool, **spec}}  # fmt: skip


def test_a_driver_in_upper_case_is_warned_of_on_create_and_update() -> None:
    obj = _slice(driver="DRA.example.com")
    expected = [
        'spec.driver: driver names should be lowercase; "DRA.example.com" contains uppercase '
        "characters"
    ]
    assert warnings(obj) == warnings(obj, _slice()) == expected
    assert warnings(_slice()) == []
    kind = next(kind for kind in BUILTIN_KINDS if (kind.group, kind.kind) == KEY)
    assert warnings_on_create(kind, obj) == expected
    assert warnings_on_update(kind, obj, _slice(), subresource=None) == expected


def test_a_taint_without_its_time_gets_the_servers_and_the_update_counts_it() -> None:
    timed = {"key": "k", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}
    old = _slice({"name": "a", "taints": [timed]})
    untimed = copy.deepcopy(old)
    del untimed["spec"]["devices"][0]["taints"][0]["timeAdded"]
    made = prepared(untimed, old=old, now=NOW)
    assert made["spec"]["devices"][0]["taints"][0]["timeAdded"] == NOW
    assert made["metadata"]["generation"] == 2
    assert "timeAdded" not in untimed["spec"]["devices"][0]["taints"][0]  # (a new object)
    assert prepared(copy.deepcopy(old), old=old, now=NOW) == old  # nothing to do
    created = prepared(copy.deepcopy(untimed), now=NOW)
    assert created["metadata"]["generation"] == 1


def test_the_fields_of_gates_off_are_dropped_unless_the_stored_slice_has_some() -> None:
    device = {"name": "a", "attributes": {"x": {"int": 1, "ints": [1]}},
              "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "c"}}}  # fmt: skip
    new = _slice(copy.deepcopy(device))
    DEFAULTERS[KEY](new)
    mapping = new["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["cpu"]
    assert mapping == {"capacityKey": "c", "allocationMultiplier": "1"}  # SetDefaults_Device
    dropped = prepared(new, now=NOW)["spec"]["devices"][0]
    assert dropped == {"name": "a", "attributes": {"x": {"int": 1}}}
    kept = prepared(_slice(copy.deepcopy(device)), old=_slice(device), now=NOW)
    assert kept["spec"]["devices"][0] == device


def test_an_update_checks_a_devices_taints_only_where_they_changed() -> None:
    bad = {"name": "a", "taints": [{"key": "k", "effect": "Bogus"}]}
    old = _slice(bad)
    assert [field for field, _ in CREATES[KEY](old)] == ["spec.devices[0].taints[0].effect"]
    assert UPDATES[KEY](old, _slice(copy.deepcopy(bad))) == []
    renamed = _slice({**bad, "name": "b"})  # another device: its taints are new
    assert [field for field, _ in UPDATES[KEY](old, renamed)] == [
        "spec.devices[0].taints[0].effect"
    ]


def test_an_update_names_each_immutable_field_after_the_pool() -> None:
    old = _slice()
    new = _slice(driver="other.example.com", nodeName=None, allNodes=True)
    new["spec"]["pool"] = {"name": "q", "generation": -1, "resourceSliceCount": 1}
    new["spec"].pop("nodeName")
    causes = UPDATES[KEY](old, new)
    assert [(field, cause["message"]) for field, cause in causes] == [
        ("spec.pool.generation", "Invalid value: -1: must be greater than or equal to zero"),
        ("spec.pool.name", 'Invalid value: "q": field is immutable'),
        ("spec.driver", 'Invalid value: "other.example.com": field is immutable'),
        ("spec.nodeName", "Invalid value: null: field is immutable"),
    ]


def test_a_step_of_zero_is_no_error_here() -> None:
    policy = {"default": "1", "validRange": {"min": "1", "step": "0"}}
    device = {"name": "a", "allowMultipleAllocations": True,
              "capacity": {"c": {"value": "4", "requestPolicy": policy}}}  # fmt: skip
    assert list(CREATES[KEY](_slice(device))) == []


def test_long_map_keys_are_cut_in_their_middle_as_go_shows_them() -> None:
    assert truncated_key("short", 96) == "short"
    assert truncated_key("a" * 20, 8) == "a" * 7 + "..." + "a" * 6  # at least 16
    key = "d" * 60 + ".com/" + "n" * 40
    assert truncated_key(key, 96) == "d" * 47 + "..." + "d.com/" + "n" * 40
