"""Service account tokens as kube-apiserver issues and authenticates them: JWTs signed ES256.

Sync. Each store signs with a P-256 key of its own, made when it first issues a token (the
``kid`` is the key's SHA-256, as kube-apiserver's). A token's claims are kube-apiserver's
(``aud``, ``exp``, ``iat``, ``iss``, ``jti``, ``kubernetes.io`` with the namespace, the service
account and what the token is bound to, ``nbf``, ``sub``), written with their keys sorted as
go-jose writes them. Authenticating one checks, in kube-apiserver's order, its signature, its
issuer, the audiences, its times (a minute of leeway), the service account (name and uid) and
the bound object (a Pod, a Secret or a Node: still there, same uid, not deleted), with the
server's words for each failure.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["ISSUER", "Authenticated", "Refused", "authenticate", "issue"]

ISSUER = "https://kubernetes.default.svc"
"""The tokens' issuer: the local control plane's ``--service-account-issuer``."""
_LEEWAY = 60  # seconds: go-jose's DefaultLeeway

Body = dict[str, Any]
Lookup = Callable[[str, str, str], Body | None]
"""``(plural, namespace, name)`` to the stored object, if any (``""``: a cluster-wide one)."""
Authenticated = tuple[Body, list[str]]
"""The user a token stands for, and the audiences it is good for."""

_keys: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()


def _key(owner: Any) -> tuple[Any, str]:
    """The owner's (a store's) signing key and its ``kid``, made on first use."""
    found = _keys.get(owner)
    if found is None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        private = ec.generate_private_key(ec.SECP256R1())
        public = private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        found = _keys[owner] = private, _b64(hashlib.sha256(public).digest())
    return found


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _seconds(stamp: str) -> int:
    """A timestamp (``2026-01-01T00:00:00Z``) in seconds since the epoch."""
    moment = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    return int(moment.replace(tzinfo=datetime.UTC).timestamp())


def issue(
    owner: Any,
    *,
    now: str,
    seconds: int,
    audiences: Sequence[str],
    namespace: str,
    account: Mapping[str, Any],
    bound: Mapping[str, Mapping[str, str]],
    jti: str,
) -> str:
    """A token for ``account`` (a ServiceAccount as stored), made at ``now`` for ``seconds``;
    ``bound``: the ``kubernetes.io`` references to what it is bound to (``pod``, ``node``,
    ``secret``: ``{"name": ..., "uid": ...}``)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    private, kid = _key(owner)
    start = _seconds(now)
    metadata = account["metadata"]
    private_claims: Body = {"namespace": namespace, **{k: dict(v) for k, v in bound.items()},
                            "serviceaccount": {"name": metadata["name"],
                                               "uid": metadata.get("uid", "")}}  # fmt: skip
    claims = {
        "aud": list(audiences),
        "exp": start + seconds,
        "iat": start,
        "iss": ISSUER,
        "jti": jti,
        "kubernetes.io": dict(sorted(private_claims.items())),
        "nbf": start,
        "sub": f"system:serviceaccount:{namespace}:{metadata['name']}",
    }
    header = _b64(json.dumps({"alg": "ES256", "kid": kid}, separators=(",", ":")).encode())
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signed = f"{header}.{payload}".encode()
    r, s = decode_dss_signature(private.sign(signed, ec.ECDSA(hashes.SHA256())))
    return f"{header}.{payload}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class Refused(Exception):
    """The token does not authenticate: why, in kube-apiserver's words (``""``: none given)."""


def _claims(owner: Any, token: str) -> Body:
    """The token's claims, once its signature holds.

    Raises:
        Refused: Not a JWT of this issuer (``""``), or its signature does not hold.
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    parts = token.split(".")
    if len(parts) != 3:
        raise Refused("")
    try:
        header, claims = json.loads(_unb64(parts[0])), json.loads(_unb64(parts[1]))
        signature = _unb64(parts[2])
    except ValueError:
        raise Refused("") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise Refused("")
    if claims.get("iss") != ISSUER:
        raise Refused("")  # another issuer's: not this authenticator's to judge
    private, _ = _key(owner)
    try:
        if header.get("alg") != "ES256" or len(signature) != 64:
            raise InvalidSignature
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                   int.from_bytes(signature[32:], "big"))  # fmt: skip
        private.public_key().verify(der, f"{parts[0]}.{parts[1]}".encode(),
                                    ec.ECDSA(hashes.SHA256()))  # fmt: skip
    except InvalidSignature:
        raise Refused("go-jose/go-jose: error in cryptographic primitive") from None
    return claims


def _quoted(values: Sequence[str]) -> str:
    return "[" + " ".join(f'"{value}"' for value in values) + "]"


def authenticate(
    owner: Any, token: str, *, wanted: Sequence[str], now: str, lookup: Lookup
) -> Authenticated:
    """The user and audiences of a token ``owner`` issued, for the audiences ``wanted`` (none:
    the API server's).

    Raises:
        Refused: It does not authenticate (see the module).
    """
    claims = _claims(owner, token)
    audiences = [str(audience) for audience in claims.get("aud") or ()] or [ISSUER]
    asked = list(wanted) or [ISSUER]
    common = [audience for audience in audiences if audience in asked]
    if not common:
        raise Refused(f"token audiences {_quoted(audiences)} is invalid for the target "
                      f"audiences {_quoted(asked)}")  # fmt: skip
    moment = _seconds(now)
    if int(claims.get("exp", 0)) + _LEEWAY < moment:
        raise Refused("service account token has expired")
    if moment + _LEEWAY < int(claims.get("nbf", 0)):
        raise Refused("service account token is not valid yet")
    private = claims.get("kubernetes.io") or {}
    namespace = str(private.get("namespace", ""))
    reference = private.get("serviceaccount") or {}
    account = lookup("serviceaccounts", namespace, str(reference.get("name", "")))
    if account is None:
        raise Refused(f'serviceaccounts "{reference.get("name", "")}" not found')
    uid = account["metadata"].get("uid")
    if uid != reference.get("uid"):
        raise Refused(f"service account UID ({uid}) does not match claim ({reference.get('uid')})")
    if _deleted_before(account, moment):
        raise Refused(f"service account {namespace}/{reference.get('name')} has been deleted")
    extra: dict[str, list[str]] = {"authentication.kubernetes.io/credential-id":
                                   [f"JTI={claims.get('jti', '')}"]}  # fmt: skip
    for plural, kind, where in (("secrets", "secret", namespace), ("pods", "pod", namespace)):
        ref = private.get(kind)
        if ref is None:
            continue
        found = lookup(plural, where, str(ref.get("name", "")))
        if found is None or _deleted_before(found, moment):
            raise Refused("service account token has been invalidated")
        if found["metadata"].get("uid") != ref.get("uid"):
            raise Refused(f"{kind} UID ({found['metadata'].get('uid')}) does not match service "
                          f"account {kind} ref claim ({ref.get('uid')})")  # fmt: skip
        if kind == "pod":
            extra["authentication.kubernetes.io/pod-name"] = [str(ref.get("name", ""))]
            extra["authentication.kubernetes.io/pod-uid"] = [str(ref.get("uid", ""))]
    node = private.get("node")
    if node is not None:
        if private.get("pod") is None:  # bound to the Node itself
            found = lookup("nodes", "", str(node.get("name", "")))
            if found is None or _deleted_before(found, moment):
                raise Refused("service account token has been invalidated")
            if found["metadata"].get("uid") != node.get("uid"):
                raise Refused(f"node UID ({found['metadata'].get('uid')}) does not match service "
                              f"account node ref claim ({node.get('uid')})")  # fmt: skip
        extra["authentication.kubernetes.io/node-name"] = [str(node.get("name", ""))]
        if node.get("uid"):
            extra["authentication.kubernetes.io/node-uid"] = [str(node["uid"])]
    user = {
        "username": str(claims.get("sub", "")),
        "uid": str(uid),
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                   "system:authenticated"],
        "extra": dict(sorted(extra.items())),
    }  # fmt: skip
    return user, common


def _deleted_before(obj: Mapping[str, Any], moment: int) -> bool:
    """Whether the object's deletion began over a minute before ``moment``."""
    stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
    return bool(stamp) and _seconds(str(stamp)) < moment - _LEEWAY
