"""Kubernetes' Go rules for the kinds operators write, as the fake keeps them: Services' checks
and allocations, Secrets' types, Events of either API, Pods' updates, and what kube-apiserver's
decoder and converter say of a value of the wrong type. The conformance suite compares each
with the real API server (``test_generated_requests``); these pin the rules down without one."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake.builtin_rules import create_causes, update_causes
from anyop.testing.fake.event_rules import event_causes
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.pod_spec_diff import pod_spec_diff, with_sent_empties
from anyop.testing.fake.service_rules import allocated, kept_allocations, service_causes
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.typed_decoding import decode
from anyop.testing.fake.write_path import admitted

POD = Kind("", "v1", "pods", "pod", "Pod", status=True, generation=True)
SECRET = Kind("", "v1", "secrets", "secret", "Secret")


def _fields(causes: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [field for field, _ in causes]


def _service(**spec: Any) -> dict[str, Any]:
    base = {"type": "ClusterIP", "sessionAffinity": "None"}
    return {"metadata": {"name": "s"}, "spec": {**base, **spec}}


def test_a_service_with_two_ports_names_both_and_no_pair_twice() -> None:
    ports = [{"port": 80, "protocol": "TCP", "targetPort": 80},
             {"port": 80, "protocol": "TCP", "targetPort": "web-1"}]  # fmt: skip
    causes = service_causes(_service(ports=ports))
    assert _fields(causes) == ["spec.ports[0].name", "spec.ports[1].name", "spec.ports[1]"]
    assert causes[2][1]["message"] == (
        'Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,'
        '"TargetPort":0,"NodePort":0}'
    )


def test_a_service_port_out_of_range_and_an_unknown_type_are_refused() -> None:
    causes = service_causes(_service(type="Bogus", ports=[
        {"port": 70000, "protocol": "HTTP", "targetPort": "a b"}]))  # fmt: skip
    messages = dict(causes)
    assert messages["spec.ports[0].port"]["message"] == (
        "Invalid value: 70000: must be between 1 and 65535, inclusive"
    )
    assert 'Unsupported value: "HTTP"' in messages["spec.ports[0].protocol"]["message"]
    assert messages["spec.type"]["message"].startswith('Unsupported value: "Bogus": supported')
    assert _fields(causes).count("spec.ports[0].targetPort") == 1  # a space is no port name


def test_an_external_name_service_needs_a_name_and_no_ports() -> None:
    assert _fields(service_causes(_service(type="ExternalName"))) == ["spec.externalName"]
    named = _service(type="ExternalName", externalName="db.example.com.")
    assert service_causes(named) == []


def test_allocation_gives_an_address_and_one_family_and_refuses_dual_stack() -> None:
    spec: dict[str, Any] = {"type": "ClusterIP", "selector": {"a": "b"}}
    assert allocated(spec, service_ip=lambda: "10.0.0.7") == []
    assert spec["clusterIPs"] == ["10.0.0.7"]
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    bare: dict[str, Any] = {"type": "ClusterIP", "clusterIP": "None"}
    assert allocated(bare, service_ip=lambda: pytest.fail("no address for a headless one")) == []
    assert bare["ipFamilyPolicy"] == "RequireDualStack"
    assert bare["ipFamilies"] == ["IPv4", "IPv6"]
    dual: dict[str, Any] = {"type": "ClusterIP", "ipFamilyPolicy": "RequireDualStack"}
    assert _fields(allocated(dual, service_ip=lambda: "10.0.0.8")) == ["spec.ipFamilyPolicy"]
    bad: dict[str, Any] = {"type": "ClusterIP", "clusterIP": "10.0.0.999"}
    assert _fields(allocated(bad, service_ip=lambda: "x")) == ["spec.clusterIPs[0]"]


def test_an_update_keeps_the_allocated_address_and_a_new_one_replaces_it() -> None:
    old = {"spec": {"type": "ClusterIP", "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"],
                    "ipFamilyPolicy": "SingleStack"}}  # fmt: skip
    kept = kept_allocations(old, {"spec": {"type": "ClusterIP"}})
    assert kept["spec"]["clusterIPs"] == ["10.0.0.7"]
    assert kept["spec"]["ipFamilyPolicy"] == "SingleStack"
    changed = kept_allocations(old, {"spec": {"type": "ClusterIP", "clusterIP": "None",
                                              "clusterIPs": ["10.0.0.7"]}})  # fmt: skip
    assert changed["spec"]["clusterIPs"] == ["None"]
    external = kept_allocations(old, {"spec": {"type": "ExternalName", "clusterIP": "10.0.0.7",
                                               "clusterIPs": ["10.0.0.7"]}})  # fmt: skip
    assert "clusterIP" not in external["spec"]
    assert "ipFamilyPolicy" not in external["spec"]


@pytest.mark.parametrize(
    ("kind", "data", "fields"),
    [
        ("kubernetes.io/tls", {"tls.crt": "eA=="}, ["data[tls.key]"]),
        ("kubernetes.io/basic-auth", {}, ["data[username]", "data[password]"]),
        ("kubernetes.io/basic-auth", {"password": ""}, []),
        ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": "W10="}, [
            "data[.dockerconfigjson]"]),  # "[]": not a JSON object
        ("kubernetes.io/service-account-token", {}, [
            "metadata.annotations[kubernetes.io/service-account.name]"]),
        ("example.com/anything", {}, []),
    ],
)  # fmt: skip
def test_a_secret_holds_what_its_type_needs(
    kind: str, data: dict[str, str], fields: list[str]
) -> None:
    secret = {"metadata": {"name": "s"}, "type": kind, "data": data}
    assert _fields(create_causes(SECRET, secret)) == fields


def test_an_events_k8s_io_event_is_checked_strictly_when_made_and_kept_when_updated() -> None:
    event = {"metadata": {"name": "e", "namespace": "ns"}, "regarding": {"namespace": "ns"},
             "type": "Info", "reportingController": "example.com/op",
             "reportingInstance": "i", "action": "A", "reason": "R"}  # fmt: skip
    assert _fields(event_causes("events.k8s.io", event)) == ["eventTime", "type"]
    legacy = {**event, "involvedObject": event["regarding"]}
    assert event_causes("", legacy) == []  # v1: the legacy checks alone
    made = {**event, "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal"}
    assert event_causes("events.k8s.io", made) == []
    changed = {**made, "note": "other", "regarding": {"namespace": "ns", "name": "x"}}
    causes = dict(event_causes("events.k8s.io", changed, old=made))
    assert causes["message"]["message"] == 'Invalid value: "other": field is immutable'
    assert causes["involvedObject"]["message"] == (
        'Invalid value: {"Kind":"","Namespace":"ns","Name":"x","UID":"","APIVersion":"",'
        '"ResourceVersion":"","FieldPath":""}: field is immutable'
    )


def _pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    base = {"restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}  # fmt: skip
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers), **base, **spec}}


def test_a_pod_update_may_not_add_a_container_nor_raise_its_deadline() -> None:
    app = {"name": "app", "image": "nginx"}
    old = _pod(app, activeDeadlineSeconds=60)
    added = _pod(app, {"name": "b", "image": "x"}, activeDeadlineSeconds=60)
    assert _fields(update_causes(POD, old, added)) == ["spec.containers"]
    raised = _pod(app, activeDeadlineSeconds=120)
    assert dict(update_causes(POD, old, raised))["spec.activeDeadlineSeconds"]["message"] == (
        "Invalid value: 120: must be less than or equal to previous value"
    )
    assert update_causes(POD, old, _pod({"name": "app", "image": "busybox"},
                                        activeDeadlineSeconds=30)) == []  # fmt: skip


def test_a_refused_pod_spec_change_shows_the_internal_specs_diff() -> None:
    old = _pod({"name": "app", "image": "nginx", "ports": [{"containerPort": 80,
                                                           "protocol": "UDP"}]})  # fmt: skip
    new = _pod({"name": "app", "image": "nginx"})
    [(field, cause)] = update_causes(POD, old, new)
    assert field == "spec"
    lines = cause["message"].split("\n")
    assert lines[1].startswith("@@ -")
    assert lines[-1] == ""
    assert '-   "Ports": [' in lines
    assert '+   "Ports": null,' in lines
    assert '-     "ContainerPort": 80,' in lines
    assert '-     "HostIP": ""' in lines
    assert pod_spec_diff(old["spec"], old["spec"]) == ""


def test_admission_adds_the_default_tolerations_and_keeps_the_priority_on_update() -> None:
    made = admitted(POD, _pod({"name": "app", "image": "x"}))
    keys = [t["key"] for t in made["spec"]["tolerations"]]
    assert keys == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert made["spec"]["priority"] == 0
    assert made["status"]["phase"] == "Pending"
    everything = _pod({"name": "app", "image": "x"}, tolerations=[{"operator": "Exists"}])
    assert len(admitted(POD, everything, old=made)["spec"]["tolerations"]) == 1
    updated = admitted(POD, _pod({"name": "app", "image": "x"}), old=made)
    assert updated["spec"]["priority"] == 0
    assert "status" not in updated


def _refusal(body: dict[str, Any], kind: str = "Service", *, converter: bool = False) -> str:
    with pytest.raises(StatusError) as refused:
        decode("", "v1", kind, body, unstructured=converter)
    return str(refused.value.body["message"])


def test_decoding_errors_name_go_types_and_stop_at_an_unmarshallers_error() -> None:
    port = {"spec": {"ports": [{"port": 80, "protocol": True}]}}
    assert _refusal(port).endswith(
        "Go struct field ServicePort.spec.ports.protocol of type v1.Protocol"
    )
    # A label of the wrong type is noted and decoding goes on; a target port's own decoder
    # stops it, and its error wins.
    both = {"metadata": {"labels": {"a": 1}}, "spec": {"ports": [{"port": 80, "targetPort": 1.5}]}}
    assert _refusal(both).endswith(
        "json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.targetPort"
        " of type int32"
    )


def test_the_converter_meets_fields_in_their_go_order_and_names_kinds() -> None:
    lease = {"spec": {"leaseTransitions": 1.5, "holderIdentity": 7}}
    with pytest.raises(StatusError) as refused:
        decode("coordination.k8s.io", "v1", "Lease", lease, unstructured=True)
    assert refused.value.body["message"] == "cannot convert int64 to string"
    assert _refusal({"spec": {"type": 1.5}}, converter=True) == "unrecognized type: string"


def test_go_leaves_out_an_omitempty_fields_zero_value() -> None:
    decoded = decode("", "v1", "Pod", {"spec": {"hostNetwork": False, "hostname": "",
                                                "containers": []}})  # fmt: skip
    assert "hostNetwork" not in decoded["spec"]
    assert "hostname" not in decoded["spec"]
    requests = {"requests": {"cpu": None}}
    quantities = {"spec": {"containers": [{"name": "a", "resources": requests}]}}
    decoded = decode("", "v1", "Pod", quantities)
    assert decoded["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "0"}


def test_a_refusals_diff_shows_what_the_request_sent_empty() -> None:
    """Go's object holds a list sent empty as empty, not nil, until it is written."""
    assert with_sent_empties({"a": 1}, {"a": 1, "b": [], "c": {}}) == {"a": 1, "b": [], "c": {}}
    nested = with_sent_empties({"r": {"x": 1}}, {"r": {"x": 1, "requests": {}}})
    assert nested == {"r": {"x": 1, "requests": {}}}
    assert with_sent_empties({"a": [{"b": 1}]}, None) == {"a": [{"b": 1}]}
