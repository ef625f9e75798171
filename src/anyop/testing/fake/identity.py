"""Who the fake's callers are: it authenticates nobody, and takes every request for the
cluster admin's, the user the local control plane's admin kubeconfig names.

Pure. kube-apiserver shows that user (``SelfSubjectReview``, a CertificateSigningRequest's
``spec.username``/``groups``/``extra``) as ``anyop-admin``, in the groups ``system:masters`` and
``system:authenticated``, with the ``credential-id`` of its client certificate; the fake's is
the digest of a fixed text (the real one differs with every control plane's certificate).
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["ADMIN_TOKEN", "CREDENTIAL_ID", "admin_user"]

ADMIN_TOKEN = "fake"
"""The bearer token of the fake's kubeconfig: a TokenReview of it names the admin."""

CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
_ADMIN_DIGEST = hashlib.sha256(b"anyop-admin").hexdigest()


def admin_user() -> dict[str, Any]:
    """The admin as a ``UserInfo`` (a new copy each time)."""
    return {
        "username": "anyop-admin",
        "groups": ["system:masters", "system:authenticated"],
        "extra": {CREDENTIAL_ID: [f"X509SHA256={_ADMIN_DIGEST}"]},
    }
