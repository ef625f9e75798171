"""``metadata`` checked as apimachinery's ``ValidateObjectMeta`` checks every kind's (pure)."""

from __future__ import annotations

import pytest

from anyop.testing.fake.object_meta import label_key_errors, metadata_causes

KEY_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    "key", ["app", "example.com/key", "a.b-c_d", "A1", "k8s.io/x" + "y" * 60, "x" * 63]
)
def test_valid_label_keys_have_no_errors(key: str) -> None:
    assert label_key_errors(key) == []


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        ("a b", [f"name part {KEY_RULE}"]),
        ("-app", [f"name part {KEY_RULE}"]),
        ("x" * 64, ["name part must be no more than 63 bytes"]),
        ("/app", ["prefix part must be non-empty"]),
        ("example.com/", ["name part must be non-empty", f"name part {KEY_RULE}"]),
        ("a/b/c", [f"a valid label key {KEY_RULE} with an optional DNS subdomain prefix and '/' "
                   "(e.g. 'example.com/MyName')"]),
    ],
)  # fmt: skip
def test_label_keys_are_refused_with_apimachinerys_messages(key: str, errors: list[str]) -> None:
    assert label_key_errors(key) == errors


def test_an_uppercase_prefix_is_not_a_dns_subdomain() -> None:
    (error,) = label_key_errors("Example.com/key")
    assert error.startswith("prefix part a lowercase RFC 1123 subdomain must consist of")
    assert "(e.g. 'example.com', regex used for validation is" in error


def test_labels_values_annotations_and_finalizers_of_a_create() -> None:
    causes = metadata_causes(
        {
            "labels": {"app": "x" * 64, "ok": "fine"},
            "annotations": {"Example.com/Key": "any value at all", "a b": ""},
            "finalizers": ["example.com/f", "not a name"],
        },
        creating=True,
    )
    assert [field for field, _ in causes] == [
        "metadata.labels",
        "metadata.annotations",
        "metadata.finalizers",
    ]
    messages = [cause["message"] for _, cause in causes]
    assert messages[0] == f'Invalid value: "{"x" * 64}": must be no more than 63 bytes'
    assert messages[1] == f'Invalid value: "a b": name part {KEY_RULE}'
    assert messages[2] == f'Invalid value: "not a name": name part {KEY_RULE}'


def test_an_update_does_not_check_finalizer_names() -> None:
    assert metadata_causes({"finalizers": ["not a name"]}, creating=False) == []
    assert metadata_causes({"finalizers": ["not a name"]}, creating=True) != []


def test_orphan_and_foreground_deletion_finalizers_together_are_refused() -> None:
    causes = metadata_causes({"finalizers": ["orphan", "foregroundDeletion"]}, creating=True)
    assert causes == [
        (
            "metadata.finalizers",
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
                "foregroundDeletion cannot be both set",
            },
        )
    ]


def test_owner_references_need_a_version_a_kind_a_name_and_a_uid() -> None:
    causes = metadata_causes(
        {"ownerReferences": [{"apiVersion": "a/b/c", "kind": "", "name": "n"}]}, creating=False
    )
    empty = 'Invalid value: "": must not be empty'
    assert [(field, cause["message"]) for field, cause in causes] == [
        (
            "metadata.ownerReferences.apiVersion",
            'Invalid value: "a/b/c": version must not be empty',
        ),
        ("metadata.ownerReferences.kind", empty),
        ("metadata.ownerReferences.uid", empty),
    ]


def test_only_one_owner_reference_may_be_the_controller() -> None:
    references = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": True},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "b",
            "uid": "2",
            "controller": True,
        },
    ]
    ((field, cause),) = metadata_causes({"ownerReferences": references}, creating=True)
    assert field == "metadata.ownerReferences"
    assert cause["message"].startswith(
        'Invalid value: [{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"1",'
        '"controller":true},'
    )
    assert cause["message"].endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and Deployment/b"
    )


def test_annotations_may_hold_256_kib_in_all() -> None:
    small = metadata_causes({"annotations": {"a": "x" * (256 * 1024 - 1)}}, creating=True)
    large = metadata_causes({"annotations": {"a": "x" * (256 * 1024)}}, creating=True)
    assert small == []
    assert large == [
        (
            "metadata.annotations",
            {
                "reason": "FieldValueTooLong",
                "message": "Too long: may not be more than 262144 bytes",
            },
        )
    ]
