"""manifests/rbac.yaml is enough: a non-admin identity bound to it runs the example operator."""

from __future__ import annotations

import datetime
import json
import signal
import ssl
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tests.e2e.conftest import MANIFESTS
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_cli_run import EXAMPLE, start_operator

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

ACCOUNT = "anyop-operator"


def issue_client_cert(plane: LocalControlPlane, user: str, folder: Path) -> tuple[Path, Path]:
    """A client certificate for ``user``, signed by the control plane's CA."""
    pki = plane.workdir / "pki"
    ca_cert = x509.load_pem_x509_certificate(plane.ca_path.read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, user),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:serviceaccounts"),
    ])  # fmt: skip
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    cert_path, key_path = folder / "operator.crt", folder / "operator.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def write_kubeconfig(plane: LocalControlPlane, cert: Path, key: Path, path: Path) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {
            "server": plane.server, "certificate-authority": str(plane.ca_path)}}],
        "users": [{"name": "operator", "user": {
            "client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "operator", "context": {"cluster": "local", "user": "operator"}}],
        "current-context": "operator",
    }  # fmt: skip
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_rbac_manifest_lets_a_non_admin_identity_run_the_example_operator(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    backend: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    manifest = (MANIFESTS / "rbac.yaml").read_text().replace("anyop-example", ns)
    kubectl(plane, "apply", "-f", "-", stdin=manifest)
    cert, key = issue_client_cert(plane, f"system:serviceaccount:{ns}:{ACCOUNT}", tmp_path)
    kubeconfig = write_kubeconfig(plane, cert, key, tmp_path / "kubeconfig")

    ctx = ssl.create_default_context(cafile=str(plane.ca_path))
    ctx.load_cert_chain(str(cert), str(key))
    with httpx.Client(base_url=plane.server, verify=ctx) as client:
        assert client.get(f"/api/v1/namespaces/{ns}/secrets").status_code == 403  # not an admin

    options = ("--leader-election", "--lease-name", "example")
    operator = start_operator(plane, str(EXAMPLE), ns, backend, *options, kubeconfig=kubeconfig)
    try:
        apply_kex(plane, ns, "kex-1", field="value")
        status = wait_for_status(plane, ns, "kex-1")
        assert status["create_fn"] == {"message": "hello world"}
        lease = json.loads(kubectl(plane, "get", "-n", ns, "lease", "example", "-o", "json"))
        assert lease["spec"]["holderIdentity"]
    finally:
        operator.send_signal(signal.SIGTERM)
        output, _ = operator.communicate(timeout=60)
    assert operator.returncode == 0, output
    assert f"[{ns}/kex-1] Handler 'create_fn' succeeded." in output
    assert "forbidden" not in output.lower(), output


def test_every_manifest_is_accepted_by_the_api_server(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str
) -> None:
    for name in ("peering.yaml", "rbac.yaml", "deployment.yaml"):
        manifest = (MANIFESTS / name).read_text().replace("anyop-example", anyop_namespace)
        output = kubectl(anyop_controlplane, "apply", "--dry-run=server", "-f", "-", stdin=manifest)
        assert "(server dry run)" in output, output
