"""The warnings of each kind's own (pure): the branches kube-apiserver's validation keeps the
conformance scenarios from (leading zeros, IPv4-mapped addresses, feature-gated and update-only
warnings), the header's quoting, de-duplication and truncation, TLS pairs."""

from __future__ import annotations

import base64
import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from anyop.testing.fake.address_warnings import cidr_warnings, ip_warnings
from anyop.testing.fake.kind_warnings import (
    deprecation_warning,
    warning_header,
    warnings_on_create,
    warnings_on_update,
)
from anyop.testing.fake.kinds import BUILTIN_KINDS, Kind
from anyop.testing.fake.pod_warnings import template_warnings
from anyop.testing.fake.tls_pairs import key_pair_error


def _kind(group: str, name: str) -> Kind:
    return next(kind for kind in BUILTIN_KINDS if (kind.group, kind.kind) == (group, name))


def test_ip_warnings_name_leading_zeros_mapped_and_uncanonical_addresses() -> None:
    assert ip_warnings("f", "010.1.2.3") == [
        'f: non-standard IP address "010.1.2.3" is invalid: use "10.1.2.3"'
    ]
    assert ip_warnings("f", "::ffff:1.2.3.4") == [
        'f: non-standard IP address "::ffff:1.2.3.4" is invalid: use "1.2.3.4"'
    ]
    assert ip_warnings("f", "2001:DB8::1") == [
        'f: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")'
    ]
    assert ip_warnings("f", "10.1.2.3") == ip_warnings("f", "not an ip") == []


def test_cidr_warnings_name_bits_beyond_the_prefix_leading_zeros_and_uncanonical_forms() -> None:
    assert cidr_warnings("f", "10.0.0.1/8") == [
        'f: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or '
        '"10.0.0.1/32"?)'
    ]
    assert cidr_warnings("f", "010.0.0.0/08") == [
        'f: non-standard CIDR value "010.0.0.0/08" is invalid: use "10.0.0.0/8"'
    ]
    assert cidr_warnings("f", "2001:DB8::/32") == [
        'f: IPv6 CIDR value "2001:DB8::/32" should be in RFC 5952 canonical format '
        '("2001:db8::/32")'
    ]
    assert cidr_warnings("f", "10.0.0.0/8") == []


def test_a_replication_controllers_update_warns_of_its_old_template_as_go_does() -> None:
    kind = _kind("", "ReplicationController")
    old_template = {"spec": {"nodeSelector": {"beta.kubernetes.io/os": "linux"}}}
    old = {"metadata": {"name": "rc", "generation": 1}, "spec": {"template": old_template}}
    new = {"metadata": {"name": "rc", "generation": 2}, "spec": {"template": {"spec": {}}}}
    assert warnings_on_update(kind, new, old, subresource=None) == [
        "spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "
        '"kubernetes.io/os" instead'
    ]
    same = {**new, "metadata": {"name": "rc", "generation": 1}}
    assert warnings_on_update(kind, same, old, subresource=None) == []


def test_a_cron_jobs_update_warns_of_a_time_zone_in_its_schedule_under_go_s_path() -> None:
    kind = _kind("batch", "CronJob")
    old = {"metadata": {"name": "c", "generation": 1}, "spec": {"schedule": "TZ=UTC * * * * *"}}
    (warning,) = warnings_on_update(kind, old, old, subresource=None)
    assert warning.startswith("cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone")
    assert warnings_on_create(kind, old) == []


def test_status_scale_and_other_subresources_take_their_own_strategy_s_warnings() -> None:
    service = _kind("", "Service")
    obj = {"metadata": {"name": "s"}, "spec": {"externalIPs": ["1.2.3.4"], "type": "ClusterIP"},
           "status": {"loadBalancer": {"ingress": [{"ip": "2001:DB8::1"}]}}}  # fmt: skip
    (status,) = warnings_on_update(service, obj, obj, subresource="status")
    assert status.startswith("status.loadBalancer.ingress[0]: IPv6 address")
    assert warnings_on_update(service, obj, obj, subresource=None) == [
        "spec.externalIPs is deprecated and may no longer be implemented in some clusters"
    ]
    pod = _kind("", "Pod")
    assert warnings_on_update(pod, {"spec": {"nodeName": "x"}}, {}, subresource="binding") == []


def test_a_pod_template_s_apparmor_annotation_is_warned_of_unless_the_pod_profile_matches() -> None:
    annotation = {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}
    spec = {"containers": [{"name": "c"}]}
    template = {"metadata": {"annotations": annotation}, "spec": spec}
    assert template_warnings("template", template) == [
        "template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: "
        'deprecated since v1.30; use the "appArmorProfile" field instead'
    ]
    matching = {**spec, "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}
    assert template_warnings("template", {**template, "spec": matching}) == []


def test_static_suffixed_admission_configurations_and_endpoints_deprecation() -> None:
    kind = _kind("admissionregistration.k8s.io", "ValidatingAdmissionPolicy")
    (warning,) = warnings_on_create(kind, {"metadata": {"name": "p.static.k8s.io"}})
    assert warning.startswith('metadata.name: names ending with ".static.k8s.io" are reserved')
    assert deprecation_warning(_kind("", "Endpoints")) == (
        "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    )
    assert deprecation_warning(_kind("discovery.k8s.io", "EndpointSlice")) is None


def test_the_header_quotes_deduplicates_and_truncates_as_the_warning_recorder() -> None:
    assert warning_header([]) == {}
    assert warning_header(['a "b" \\c', "x", "x"]) == {
        "Warning": '299 - "a \\"b\\" \\\\c", 299 - "x"'
    }
    long = [f"{index}" + "y" * 1000 for index in range(6)]
    header = warning_header(long)["Warning"]
    parts = header.split(", 299 - ")
    assert len(parts) == 6
    assert all(len(part) <= 256 + len('299 - ""') for part in parts)


def _pem(kind: str, der: bytes) -> bytes:
    body = base64.encodebytes(der).decode()
    return f"-----BEGIN {kind}-----\n{body}-----END {kind}-----\n".encode()


def _certificate(key: ec.EllipticCurvePrivateKey) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(1).not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256())
    )  # fmt: skip
    return _pem("CERTIFICATE", certificate.public_bytes(serialization.Encoding.DER))


def _key(key: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey) -> bytes:
    der = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return _pem("PRIVATE KEY", der)


def test_tls_pairs_are_refused_as_go_s_x509_key_pair_refuses_them() -> None:
    mine = ec.generate_private_key(ec.SECP256R1())
    certificate = _certificate(mine)
    assert key_pair_error(certificate, _key(mine)) is None
    other = ec.generate_private_key(ec.SECP256R1())
    assert key_pair_error(certificate, _key(other)) == "tls: private key does not match public key"
    assert key_pair_error(certificate, _key(ed25519.Ed25519PrivateKey.generate())) == (
        "tls: private key type does not match public key type"
    )
    assert key_pair_error(certificate, certificate) == (
        "tls: found a certificate rather than a key in the PEM for the private key"
    )
    assert key_pair_error(b"", b"") == "tls: failed to find any PEM data in certificate input"
