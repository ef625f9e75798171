"""Kubernetes' Go rules for Jobs, CronJobs, StatefulSets, claims, bindings and Ingresses, as the
fake keeps them (the conformance suite compares each with kube-apiserver's answers)."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake.batch_rules import (
    cron_job_causes,
    job_causes,
    job_update_causes,
    schedule_error,
    with_generated_selector,
)
from anyop.testing.fake.claim_rules import claim_causes, claim_update_causes
from anyop.testing.fake.ingress_rules import ingress_causes
from anyop.testing.fake.pod_rules import stateful_set_update_causes, workload_causes
from anyop.testing.fake.rbac_rules import binding_causes, binding_update_causes

UID = "0a0a0a0a-0000-0000-0000-000000000000"


def _fields(causes: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [field for field, _ in causes]


def _job(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "a", "image": "x"}], "restartPolicy": "Never"}}
    return {"metadata": {"name": "j", "uid": UID}, "spec": {"template": template, **spec}}


def test_a_new_job_gets_its_selector_and_labels_generated() -> None:
    job = with_generated_selector(_job())
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels == {"job-name": "j", "batch.kubernetes.io/job-name": "j",
                      "controller-uid": UID, "batch.kubernetes.io/controller-uid": UID}  # fmt: skip
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    assert job["metadata"]["labels"] == labels
    assert job_causes(job) == []
    manual = with_generated_selector(_job(manualSelector=True))
    assert "selector" not in manual["spec"]
    assert _fields(job_causes(manual)) == ["spec.selector", "spec.template.metadata.labels"]


def test_a_jobs_numbers_mode_and_restart_policy_are_checked() -> None:
    job = with_generated_selector(_job(backoffLimit=-1, completionMode="Sometimes"))
    job["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    causes = dict(job_causes(job))
    assert causes["spec.backoffLimit"]["message"] == (
        "Invalid value: -1: must be greater than or equal to 0"
    )
    assert "supported values" in causes["spec.completionMode"]["message"]
    assert causes["spec.template.spec.restartPolicy"]["message"] == (
        'Required value: valid values: "OnFailure", "Never"'
    )


def test_a_jobs_template_may_change_only_while_it_is_suspended_and_then_only_resources() -> None:
    old = with_generated_selector(_job())
    new = {**old, "spec": {**old["spec"], "template": {
        **old["spec"]["template"], "spec": {**old["spec"]["template"]["spec"],
                                            "restartPolicy": "OnFailure"}}}}  # fmt: skip
    assert "spec.template" in _fields(job_update_causes(old, new))
    suspended = {**old, "spec": {**old["spec"], "suspend": True}}
    resized = {**suspended, "spec": {**suspended["spec"], "template": {
        **old["spec"]["template"], "spec": {**old["spec"]["template"]["spec"], "containers": [
            {"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}  # fmt: skip
    assert job_update_causes(suspended, resized) == []


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("*/5 * * * *", None),
        ("@hourly", None),
        ("0 0 * * mon-fri", None),
        ("bogus", "expected exactly 5 fields, found 1: [bogus]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("@sometimes", "unrecognized descriptor: @sometimes"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
    ],
)
def test_a_schedule_is_read_as_kubernetes_cron_parser_reads_it(
    schedule: str, error: str | None
) -> None:
    assert schedule_error(schedule) == error


def test_a_cron_jobs_template_may_not_choose_its_selector() -> None:
    job = _job(manualSelector=True, selector={"matchLabels": {"a": "b"}})
    cron = {"spec": {"schedule": "* * * * *", "concurrencyPolicy": "Sometimes",
                     "timeZone": "Mars/Base", "jobTemplate": {"spec": job["spec"]}}}  # fmt: skip
    assert sorted(_fields(cron_job_causes(cron))) == [
        "spec.concurrencyPolicy",
        "spec.jobTemplate.spec.manualSelector",
        "spec.jobTemplate.spec.selector",
        "spec.timeZone",
    ]


def test_a_stateful_set_checks_its_policies_and_may_change_few_fields() -> None:
    spec = {"selector": {"matchLabels": {"a": "b"}}, "podManagementPolicy": "Sometimes",
            "updateStrategy": {"type": "Bogus"}, "serviceName": "s",
            "template": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "x"}],
                                                  "restartPolicy": "Always"}}}  # fmt: skip
    causes = dict(workload_causes("StatefulSet", {"spec": spec}))
    assert causes["spec.template.metadata.labels"]["message"].startswith("Invalid value: null")
    assert causes["spec.updateStrategy"]["message"] == (
        'Invalid value: {"Type":"Bogus","RollingUpdate":null}: must be \'RollingUpdate\' or '
        "'OnDelete'"
    )
    assert "spec.podManagementPolicy" in causes
    renamed = {"spec": {**spec, "serviceName": "other"}}
    assert _fields(stateful_set_update_causes({"spec": spec}, renamed)) == ["spec"]
    assert stateful_set_update_causes({"spec": spec}, {"spec": {**spec, "replicas": 3}}) == []


def test_a_claim_needs_modes_and_storage_and_its_spec_stays() -> None:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Filesystem"}  # fmt: skip
    assert claim_causes({"spec": spec}) == []
    bad = {"accessModes": ["Sometimes"], "resources": {"requests": {"storage": "0"}}}
    assert sorted(_fields(claim_causes({"spec": bad}))) == [
        "spec.accessModes",
        "spec.resources[storage]",
    ]
    changed = {"spec": {**spec, "accessModes": ["ReadWriteMany"]}}
    [(field, cause)] = claim_update_causes({"spec": spec}, changed)
    assert field == "spec"
    assert '-  "ReadWriteOnce"' in cause["message"]
    assert '+  "ReadWriteMany"' in cause["message"]


def test_a_binding_refers_to_a_role_with_subjects_it_knows_and_keeps_it() -> None:
    binding = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Deployment",
                           "name": ""},
               "subjects": [{"kind": "Robot", "name": "r"},
                            {"kind": "ServiceAccount", "name": ""}]}  # fmt: skip
    assert sorted(_fields(binding_causes(binding, namespaced=True))) == [
        "roleRef.kind",
        "roleRef.name",
        "subjects[0].kind",
        "subjects[1].name",
    ]
    old = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}}
    new = {"roleRef": {**old["roleRef"], "name": "b"}}
    [(field, cause)] = binding_update_causes(old, new)
    assert field == "roleRef"
    assert cause["message"] == (
        'Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"b"}: '
        "cannot change roleRef"
    )


def test_an_ingress_needs_rules_with_dns_hosts_typed_paths_and_named_services() -> None:
    path = {"path": "api", "pathType": "Prefix",
            "backend": {"service": {"name": "Web", "port": {"number": 70000}}}}  # fmt: skip
    ingress = {"spec": {"rules": [{"host": "1.2.3.4", "http": {"paths": [path]}}]}}
    assert sorted(_fields(ingress_causes(ingress))) == [
        "spec.rules[0].host",
        "spec.rules[0].http.paths[0].backend.service.name",
        "spec.rules[0].http.paths[0].backend.service.port.number",
        "spec.rules[0].http.paths[0].path",
    ]
    [(_, cause)] = ingress_causes({"spec": {}}, raw={"spec": {"rules": []}})
    assert cause["message"].startswith("Invalid value: []: either `defaultBackend`")
    [(_, cause)] = ingress_causes({"spec": {}})
    assert cause["message"].startswith("Invalid value: null: either `defaultBackend`")
