"""A pod's AppArmor annotations and fields as kube-apiserver treats them (pure)."""

from __future__ import annotations

from typing import Any

from anyop.testing.fake.apparmor_rules import (
    PREFIX,
    annotation_causes,
    annotation_update_causes,
    match_causes,
    profile_causes,
    profile_for,
    with_profile_fields,
)


def _pod(annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "c", "image": "i"}])
    return {"metadata": {"annotations": annotations}, "spec": {"containers": containers, **spec}}


def _messages(causes: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [f"{field}: {cause['message']}" for field, cause in causes]


def test_an_annotation_names_a_profile_of_its_form() -> None:
    assert profile_for("unconfined") == {"type": "Unconfined"}
    assert profile_for("runtime/default") == {"type": "RuntimeDefault"}
    assert profile_for("localhost/p") == {"type": "Localhost", "localhostProfile": "p"}
    assert profile_for("localhost/") is None
    assert profile_for("other") is None


def test_a_new_pods_annotation_is_copied_into_its_container_and_warned_of() -> None:
    warnings: list[str] = []
    pod = with_profile_fields(_pod({f"{PREFIX}c": "runtime/default"}), warnings)
    container = pod["spec"]["containers"][0]
    assert container["securityContext"] == {"appArmorProfile": {"type": "RuntimeDefault"}}
    assert warnings == [
        f"metadata.annotations[{PREFIX}c]: "
        'deprecated since v1.30; use the "appArmorProfile" field instead'
    ]


def test_an_annotation_like_the_pods_profile_or_on_windows_is_not_copied() -> None:
    warnings: list[str] = []
    same = _pod({f"{PREFIX}c": "unconfined"},
                securityContext={"appArmorProfile": {"type": "Unconfined"}})  # fmt: skip
    assert with_profile_fields(same, warnings) == same
    windows = _pod({f"{PREFIX}c": "unconfined"}, os={"name": "windows"})
    assert with_profile_fields(windows, warnings) is windows
    assert warnings == []
    unnamed = _pod({f"{PREFIX}c": "localhost/"})
    assert with_profile_fields(unnamed, warnings) == unnamed
    assert len(warnings) == 1


def test_annotations_and_fields_are_checked() -> None:
    spec = {"containers": [{"name": "c"}]}
    assert _messages(annotation_causes({f"{PREFIX}x": "bad"}, spec, "metadata.annotations")) == [
        f'metadata.annotations[{PREFIX}x]: Invalid value: "x": container not found',
        f'metadata.annotations[{PREFIX}x]: Invalid value: "bad": '
        'invalid AppArmor profile name: "bad"',
    ]
    assert _messages(profile_causes({"type": "Other"}, "p")) == [
        'p.type: Unsupported value: "Other": supported values: "Localhost", "RuntimeDefault", '
        '"Unconfined"'
    ]
    assert _messages(profile_causes({"type": "Localhost"}, "p")) == [
        "p.localhostProfile: Required value: must be set when AppArmor type is Localhost"
    ]
    local = {"type": "Localhost", "localhostProfile": "a"}
    spec = {"containers": [{"name": "c", "securityContext": {"appArmorProfile": local}}]}
    metadata = {"annotations": {f"{PREFIX}c": "localhost/b"}}
    assert _messages(match_causes(metadata, spec, "spec")) == [
        "spec.containers[0].securityContext.appArmorProfile.localhostProfile: "
        "Forbidden: apparmor profile in annotation and field must match"
    ]


def test_an_update_may_not_touch_an_annotation() -> None:
    assert _messages(annotation_update_causes({f"{PREFIX}c": "a"}, {f"{PREFIX}d": "a"})) == [
        f"metadata.annotations[{PREFIX}c]: Forbidden: may not remove or update AppArmor "
        "annotations",
        f"metadata.annotations[{PREFIX}d]: Forbidden: may not add AppArmor annotations",
    ]
