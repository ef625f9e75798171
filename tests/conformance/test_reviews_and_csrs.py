"""Conformance of the kinds beyond the workloads that operators use: CertificateSigningRequests
(their strategy, checks, approval and status), the authentication and authorization reviews
(and a ServiceAccount's token), and ValidatingAdmissionPolicies' checks."""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target, status_shown

pytestmark = pytest.mark.anyio

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
AUTHN = "/apis/authentication.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
_CREDENTIAL = "authentication.kubernetes.io/credential-id"


def _pem_pair() -> tuple[str, str]:
    """A certificate request and a self-signed certificate, base64 of their PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bob")])
    request = (
        x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    encoded = [
        base64.b64encode(item.public_bytes(serialization.Encoding.PEM)).decode()
        for item in (request, certificate)
    ]
    return encoded[0], encoded[1]


REQUEST, CERTIFICATE = _pem_pair()


def shown(document: Any) -> Any:
    """A Status as the harness shows it; an object without its user's credential id (the real
    one is its client certificate's digest)."""
    if not isinstance(document, dict):
        return document
    if document.get("kind") == "Status":
        return status_shown(document)
    return _blanked(document)


def _blanked(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: "<credential>" if key == _CREDENTIAL else _blanked(value)
            for key, value in node.items()
            if key != "token"
        }
    if isinstance(node, list):
        return [_blanked(item) for item in node]
    return node


def _csr(t: Target, name: str, **spec: Any) -> dict[str, Any]:
    body = {"request": REQUEST, "signerName": f"example.com/{t.namespace}",
            "usages": ["client auth"], **spec}  # fmt: skip
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": f"{t.namespace}-{name}"}, "spec": body}  # fmt: skip


def _conditions(document: Any) -> Any:
    if document.get("kind") == "Status":
        return status_shown(document)
    return document.get("status")


async def _cleanup_csrs(t: Target, *names: str) -> None:
    for name in names:
        await t.api.delete(f"{CSRS}/{t.namespace}-{name}")


async def test_a_csr_gets_its_requester_and_no_status(conform: Conform) -> None:
    """A valid request: the user fields sent are replaced by the requester's, the status sent
    is dropped; a read of it and of its approval subresource."""

    async def scenario(t: Target) -> None:
        try:
            body = _csr(t, "a", username="mallory", groups=["x"], uid="1", expirationSeconds=700)
            body["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
            await t.post(CSRS, body, record=shown)
            await t.get(f"{CSRS}/{t.namespace}-a/approval", record=shown)
        finally:
            await _cleanup_csrs(t, "a")

    await conform(scenario)


async def test_a_csrs_usages_signer_and_expiration_are_checked(conform: Conform) -> None:
    """Unknown and repeated usages, a signer name without a path, a short expiration; a
    request that is not PEM without signer name nor usages."""

    async def scenario(t: Target) -> None:
        bad = _csr(t, "b", usages=["client auth", "nope", "client auth"], signerName="bad",
                   expirationSeconds=5)  # fmt: skip
        await t.post(CSRS, bad, record=shown)
        text = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        await t.post(CSRS, {**bad, "spec": {"request": text.decode()}}, record=shown)

    await conform(scenario)


async def test_a_csrs_signer_name_forms(conform: Conform) -> None:
    """Signer names: a one-label domain, upper case, too many slashes, the legacy signer."""

    async def scenario(t: Target) -> None:
        for index, signer in enumerate(("example/x", "Example.com/x", "a.b/c/d", "a.b/C_d",
                                        "kubernetes.io/legacy-unknown")):  # fmt: skip
            await t.post(CSRS, _csr(t, f"s{index}", signerName=signer), record=shown)

    await conform(scenario)


async def test_a_csr_is_approved_through_its_approval_subresource(conform: Conform) -> None:
    """Approval adds the condition (with its times); an update of the object keeps its spec
    and conditions; /status may not add an approval nor remove one."""

    async def scenario(t: Target) -> None:
        path = f"{CSRS}/{t.namespace}-p"
        try:
            created = await t.post(CSRS, _csr(t, "p"), record=shown)
            approved = {
                **created,
                "status": {
                    "conditions": [
                        {"type": "Approved", "status": "True", "reason": "Ok", "message": "fine"}
                    ]
                },
            }
            await t.put(f"{path}/approval", approved, record=_conditions)
            current = await t.get(path, record=_conditions)
            changed = {**current, "spec": {**current["spec"], "usages": ["server auth"]},
                       "status": {}}  # fmt: skip
            await t.put(path, changed, record=lambda d: shown(d).get("spec", {}).get("usages")
                        if d.get("kind") != "Status" else status_shown(d))  # fmt: skip
            current = await t.get(path, record=_conditions)
            await t.put(f"{path}/status", {**current, "status": {"conditions": []}},
                        record=_conditions)  # fmt: skip
            denied = {
                **current,
                "status": {
                    "conditions": [
                        *current["status"]["conditions"],
                        {"type": "Denied", "status": "True"},
                    ]
                },
            }
            await t.put(f"{path}/status", denied, record=_conditions)
            await t.put(f"{path}/approval", denied, record=_conditions)
        finally:
            await _cleanup_csrs(t, "p")

    await conform(scenario)


async def test_a_csrs_certificate_is_set_through_status_once(conform: Conform) -> None:
    """status.certificate: not PEM is refused; a certificate is taken once, then not replaced;
    the object itself may not set it."""

    async def scenario(t: Target) -> None:
        path = f"{CSRS}/{t.namespace}-c"
        try:
            created = await t.post(CSRS, _csr(t, "c"), record=shown)
            garbage = base64.b64encode(b"garbage").decode()
            await t.put(f"{path}/status", {**created, "status": {"certificate": garbage}},
                        record=_conditions)  # fmt: skip
            done = await t.put(f"{path}/status", {**created, "status": {
                "certificate": CERTIFICATE, "conditions": [
                    {"type": "Failed", "status": "True", "reason": "R"}]}},
                record=lambda d: sorted(_conditions(d)))  # fmt: skip
            await t.put(f"{path}/status", {**done, "status": {**done["status"],
                        "certificate": base64.b64encode(base64.b64decode(CERTIFICATE) * 2)
                        .decode()}}, record=_conditions)  # fmt: skip
            await t.put(f"{path}/status", {**done, "status": {**done["status"], "conditions": [
                {"type": "Failed", "status": "False"}]}}, record=_conditions)  # fmt: skip
        finally:
            await _cleanup_csrs(t, "c")

    await conform(scenario)


async def test_csrs_are_selected_by_their_signer_name(conform: Conform) -> None:
    """The ``spec.signerName`` field selector (and one it does not support)."""

    async def scenario(t: Target) -> None:
        try:
            await t.post(CSRS, _csr(t, "f1"), record=lambda d: d.get("kind"))
            other = _csr(t, "f2", signerName=f"example.com/{t.namespace}-other")
            await t.post(CSRS, other, record=lambda d: d.get("kind"))

            def names(d: Any) -> Any:
                if d.get("kind") == "Status":
                    return shown(d)
                return sorted(i["metadata"]["name"] for i in d["items"])

            for selector in (f"spec.signerName=example.com/{t.namespace}",
                             f"spec.signerName!=example.com/{t.namespace},metadata.name="
                             f"{t.namespace}-f2", "spec.usages=x"):  # fmt: skip
                await t.get(CSRS, params={"fieldSelector": selector}, record=names)
        finally:
            await _cleanup_csrs(t, "f1", "f2")

    await conform(scenario)


async def test_the_self_subject_review_names_the_admin(conform: Conform) -> None:
    """Who the caller is: the admin of the local plane's kubeconfig."""

    async def scenario(t: Target) -> None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        await t.post(f"{AUTHN}/selfsubjectreviews", body, record=shown)

    await conform(scenario)


async def test_the_admin_may_do_anything(conform: Conform) -> None:
    """SelfSubjectAccessReviews of the admin: a resource, a subresource, a non-resource URL;
    a SubjectAccessReview of a member of system:masters."""

    async def scenario(t: Target) -> None:
        kind = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview"}
        for spec in ({"resourceAttributes": {"verb": "delete", "resource": "nodes"}},
                     {"resourceAttributes": {"verb": "get", "resource": "pods",
                                             "subresource": "log", "namespace": t.namespace}},
                     {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}):  # fmt: skip
            await t.post(f"{AUTHZ}/selfsubjectaccessreviews", {**kind, "spec": spec},
                         record=shown)  # fmt: skip
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": "someone",
                "groups": ["system:masters"],
                "resourceAttributes": {"verb": "create", "resource": "secrets"},
            },
        }
        await t.post(f"{AUTHZ}/subjectaccessreviews", review, record=shown)

    await conform(scenario)


async def test_access_reviews_are_checked(conform: Conform) -> None:
    """Neither attributes, both, no user nor group, metadata set; a LocalSubjectAccessReview
    of another namespace and of a non-resource URL; a SelfSubjectRulesReview without a
    namespace."""

    async def scenario(t: Target) -> None:
        both = {
            "resourceAttributes": {"verb": "get"},
            "nonResourceAttributes": {"path": "/x", "verb": "get"},
        }
        ssar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview"}
        await t.post(f"{AUTHZ}/selfsubjectaccessreviews", {**ssar, "spec": {}}, record=shown)
        await t.post(f"{AUTHZ}/selfsubjectaccessreviews", {**ssar, "spec": both}, record=shown)
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}
        await t.post(
            f"{AUTHZ}/subjectaccessreviews",
            {**sar, "spec": {"resourceAttributes": {"verb": "get"}}},
            record=shown,
        )
        await t.post(f"{AUTHZ}/subjectaccessreviews", {**sar, "spec": both}, record=shown)
        local = f"/apis/authorization.k8s.io/v1/namespaces/{t.namespace}/localsubjectaccessreviews"
        lsar = {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview"}
        await t.post(
            local,
            {
                **lsar,
                "spec": {
                    "user": "u",
                    "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"},
                },
            },
            record=shown,
        )
        await t.post(
            local,
            {**lsar, "spec": {"user": "u", "nonResourceAttributes": {"verb": "get", "path": "/x"}}},
            record=shown,
        )
        rules = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "spec": {},
        }
        await t.post(f"{AUTHZ}/selfsubjectrulesreviews", rules, record=shown)

    await conform(scenario)


async def test_subject_access_reviews_follow_rbac(conform: Conform) -> None:
    """A user bound to a ClusterRole that may get /metrics; one bound to a missing role; a
    service account bound in a namespace to a Role that may get pods by name."""

    async def scenario(t: Target) -> None:
        ns = t.namespace
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{ns}-metrics"},
            "rules": [{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}],
        }

        def binding(
            name: str,
            role_name: str,
            subject: dict[str, Any],
            kind: str = "ClusterRoleBinding",
            role_kind: str = "ClusterRole",
        ) -> Any:
            meta = {"name": name} | ({"namespace": ns} if kind == "RoleBinding" else {})
            return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                "name": role_name}, "subjects": [subject]}  # fmt: skip

        user = {"kind": "User", "name": f"{ns}-u", "apiGroup": "rbac.authorization.k8s.io"}
        other = {"kind": "User", "name": f"{ns}-v", "apiGroup": "rbac.authorization.k8s.io"}
        try:
            await t.post(f"{RBAC}/clusterroles", role, record=lambda d: d.get("kind"))
            await t.post(f"{RBAC}/clusterrolebindings", binding(f"{ns}-b", f"{ns}-metrics", user),
                         record=lambda d: d.get("kind"))  # fmt: skip
            await t.post(f"{RBAC}/clusterrolebindings", binding(f"{ns}-m", f"{ns}-gone", other),
                         record=lambda d: d.get("kind"))  # fmt: skip
            pods = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "pods", "namespace": ns},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["pods", "pods/log"],
                        "resourceNames": ["p"],
                        "verbs": ["get"],
                    }
                ],
            }
            await t.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", pods,
                         record=lambda d: d.get("kind"))  # fmt: skip
            sa = {"kind": "ServiceAccount", "name": "sa"}
            await t.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                         binding("rb", "pods", sa, "RoleBinding", "Role"),
                         record=lambda d: d.get("kind"))  # fmt: skip
            sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}
            for spec in (
                {"user": f"{ns}-u", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}},
                {"user": f"{ns}-u", "nonResourceAttributes": {"path": "/debug/x", "verb": "get"}},
                {"user": f"{ns}-u", "nonResourceAttributes": {"path": "/metrics", "verb": "put"}},
                {"user": f"{ns}-v", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}},
                {
                    "user": f"system:serviceaccount:{ns}:sa",
                    "resourceAttributes": {
                        "verb": "get",
                        "resource": "pods",
                        "name": "p",
                        "namespace": ns,
                    },
                },
                {
                    "user": f"system:serviceaccount:{ns}:sa",
                    "resourceAttributes": {
                        "verb": "get",
                        "resource": "pods",
                        "subresource": "log",
                        "name": "p",
                        "namespace": ns,
                    },
                },
                {
                    "user": f"system:serviceaccount:{ns}:sa",
                    "resourceAttributes": {
                        "verb": "get",
                        "resource": "pods",
                        "name": "q",
                        "namespace": ns,
                    },
                },
            ):
                await t.post(f"{AUTHZ}/subjectaccessreviews", {**sar, "spec": spec},
                             record=lambda d: shown(d).get("status"))  # fmt: skip
        finally:
            for name in (f"{ns}-b", f"{ns}-m"):
                await t.api.delete(f"{RBAC}/clusterrolebindings/{name}")
            await t.api.delete(f"{RBAC}/clusterroles/{ns}-metrics")

    await conform(scenario)


async def test_token_reviews_of_service_account_tokens(conform: Conform) -> None:
    """A token requested for a ServiceAccount is reviewed as it (and for other audiences
    not); a made-up token is not; an empty one is refused; the token request's checks."""

    async def scenario(t: Target) -> None:
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "m"}}
        await t.post(t.core("serviceaccounts"), sa, record=lambda d: d.get("kind"))
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        issued = await t.post(t.core("serviceaccounts", "m") + "/token", request, record=shown)
        await t.post(t.core("serviceaccounts", "missing") + "/token", request, record=shown)
        await t.post(t.core("serviceaccounts", "m") + "/token",
                     {**request, "spec": {"expirationSeconds": 60}}, record=shown)  # fmt: skip
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
        token = issued["status"]["token"]
        for spec in ({"token": token}, {"token": token, "audiences": ["other"]},
                     {"token": "made-up"}, {}):  # fmt: skip
            await t.post(f"{AUTHN}/tokenreviews", {**review, "spec": spec},
                         record=lambda d: shown(d).get("status", shown(d)))  # fmt: skip

    await conform(scenario)


async def test_reviews_take_only_a_create(conform: Conform) -> None:
    """A list, a read, a delete and a named create of review resources."""

    async def scenario(t: Target) -> None:
        await t.get(f"{AUTHN}/tokenreviews", record=shown)
        await t.get(f"{AUTHN}/tokenreviews/x", record=shown)
        await t.delete(f"{AUTHZ}/subjectaccessreviews", record=shown)
        await t.post(f"{AUTHN}/tokenreviews/x", {"spec": {"token": "t"}}, record=shown)

    await conform(scenario)


async def test_admission_policies_and_bindings_are_checked(conform: Conform) -> None:
    """A policy without validations, match constraints or rules; a bad failure policy and
    message expression; bindings with both Deny and Warn, an unknown action, a param ref of
    neither name nor selector, no policy name."""

    async def scenario(t: Target) -> None:
        policy = {"apiVersion": "admissionregistration.k8s.io/v1",
                  "kind": "ValidatingAdmissionPolicy", "metadata": {"name": f"{t.namespace}-p"},
                  "spec": {}}  # fmt: skip
        await t.post(f"{ADMISSION}/validatingadmissionpolicies", policy, record=shown)
        spec = {"failurePolicy": "Sometimes",
                "matchConstraints": {"resourceRules": [], "matchPolicy": "Loose"},
                "validations": [{"expression": "true", "messageExpression": "'a' +",
                                 "message": " ", "reason": "Teapot"}]}  # fmt: skip
        await t.post(f"{ADMISSION}/validatingadmissionpolicies", {**policy, "spec": spec},
                     record=shown)  # fmt: skip
        binding = {"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingAdmissionPolicyBinding",
                   "metadata": {"name": f"{t.namespace}-b"}}  # fmt: skip
        for spec in ({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny"]},
                     {"policyName": "p", "validationActions": ["Block"],
                      "paramRef": {"parameterNotFoundAction": "Maybe"}},
                     {"validationActions": ["Audit"],
                      "paramRef": {"name": "a", "selector": {}}}):  # fmt: skip
            await t.post(f"{ADMISSION}/validatingadmissionpolicybindings",
                         {**binding, "spec": spec}, record=shown)  # fmt: skip

    await conform(scenario)


def _jwt(token: str) -> Any:
    """What a token shows of itself: its header's algorithm, a key id's length, its claims
    (their times as the token's lifetime)."""
    parts = token.split(".")
    if len(parts) != 3:
        return "not a JWT"

    def decoded(part: str) -> Any:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))

    header, claims = decoded(parts[0]), decoded(parts[1])
    claims["jti"] = len(claims["jti"])  # (a new uuid each)
    claims["lifetime"] = [claims.pop("exp") - claims["iat"], claims.pop("nbf") - claims.pop("iat")]
    return {"alg": header.get("alg"), "kid": len(header.get("kid", "")), "claims": claims,
            "signature": len(base64.urlsafe_b64decode(parts[2] + "=="))}  # fmt: skip


async def test_service_account_tokens_are_jwts_bound_to_their_objects(conform: Conform) -> None:
    """Tokens are kube-apiserver's JWTs (ES256, claims), bound to a Pod (its node named), a
    Secret or nothing; what a binding may not name; reviews of bound tokens, of a tampered one,
    and of one whose Secret is gone."""

    async def scenario(t: Target) -> None:
        for name in ("m", "other"):
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
            await t.post(t.core("serviceaccounts"), sa, record=lambda d: d.get("kind"))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "serviceAccountName": "m",
                "nodeName": "n1",
                "containers": [{"name": "c", "image": "registry.example/app:1"}],
            },
        }
        made = await t.post(t.core("pods"), pod, record=lambda d: d.get("kind"))
        secret = await t.post(t.core("secrets"), {"metadata": {"name": "s"}},
                              record=lambda d: d.get("kind"))  # fmt: skip
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
        token = t.core("serviceaccounts", "m") + "/token"
        issued: dict[str, str] = {}
        refs = {
            "plain": None,
            "pod": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": made["metadata"]["uid"]},
            "secret": {"kind": "Secret", "apiVersion": "v1", "name": "s"},
            "stale pod": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "x"},
            "missing pod": {"kind": "Pod", "apiVersion": "v1", "name": "q"},
            "missing node": {"kind": "Node", "apiVersion": "v1", "name": "n1"},
            "deployment": {"kind": "Deployment", "apiVersion": "apps/v1", "name": "d"},
        }
        for label, ref in refs.items():
            spec: dict[str, Any] = {"audiences": ["a1"]} if label == "pod" else {}
            if ref is not None:
                spec["boundObjectRef"] = ref
            answer = await t.post(token, {**request, "spec": spec}, record=shown)
            if answer.get("kind") == "TokenRequest":
                issued[label] = answer["status"]["token"]
                t.note(label, _jwt(answer["status"]["token"]))
        other = t.core("serviceaccounts", "other") + "/token"
        await t.post(other, {**request, "spec": {"boundObjectRef": refs["pod"]}}, record=shown)
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
        head, body, signature = issued["plain"].split(".")
        tampered = f"{head}.{body}.{signature[:-4]}AAAA"
        for spec in ({"token": issued["pod"], "audiences": ["a1"]}, {"token": issued["pod"]},
                     {"token": issued["secret"]}, {"token": tampered}):  # fmt: skip
            await t.post(f"{AUTHN}/tokenreviews", {**review, "spec": spec},
                         record=lambda d: shown(d).get("status", shown(d)))  # fmt: skip
        await t.api.delete(t.core("secrets", "s"))  # authenticated a moment ago: still so
        await t.post(f"{AUTHN}/tokenreviews", {**review, "spec": {"token": issued["secret"]}},
                     record=lambda d: shown(d).get("status", shown(d)))  # fmt: skip
        del secret

    await conform(scenario)
