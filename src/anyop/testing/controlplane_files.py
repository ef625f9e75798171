"""The files a local control plane's processes read: its PKI and the admin kubeconfig.

The PKI lives in ``<workdir>/pki`` (``ca.crt``, ``admin.crt``/``admin.key`` for the admin
client, ``apiserver.crt``/``.key``, the service-account key pair); a restart keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anyop.webhooks.certs import (
    CertificateAuthority,
    generate_private_key,
    private_key_pem,
    public_key_pem,
)

__all__ = ["write_kubeconfig", "write_pki"]


def write_pki(pki: Path, *, advertise: str) -> None:
    """Create the CA and the certificates and keys in ``pki``, unless they exist."""
    pki.mkdir(parents=True, exist_ok=True)
    if (pki / "ca.crt").exists():
        return  # a restart keeps its certificates
    ca = CertificateAuthority("anyop-controlplane-ca")
    (pki / "ca.crt").write_bytes(ca.cert_pem)
    sans = [
        "127.0.0.1",
        "localhost",
        advertise,
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    ca.issue("kube-apiserver", sans=sans, server=True).write(
        pki / "apiserver.crt", pki / "apiserver.key"
    )
    ca.issue("anyop-admin", organizations=["system:masters"], client=True).write(
        pki / "admin.crt", pki / "admin.key"
    )
    sa_key = generate_private_key()
    (pki / "sa.pub").write_bytes(public_key_pem(sa_key))
    _write_secret(pki / "sa.key", private_key_pem(sa_key))
    _write_secret(pki / "ca.key", ca.key_pem)


def _write_secret(path: Path, data: bytes) -> None:
    path.touch(mode=0o600)
    path.write_bytes(data)


def write_kubeconfig(path: Path, *, server: str, pki: Path) -> None:
    """The admin's kubeconfig: context ``anyop``, user ``anyop-admin`` (``system:masters``)."""
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "anyop",
                "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "anyop-admin",
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": "anyop",
                "context": {"cluster": "anyop", "user": "anyop-admin", "namespace": "default"},
            }
        ],
        "current-context": "anyop",
    }
    path.write_text(json.dumps(config, indent=2))
