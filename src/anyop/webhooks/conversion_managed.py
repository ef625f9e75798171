"""The managed ``spec.conversion`` of CustomResourceDefinitions, and where conversions are served.

The webhook server serves the conversions of a custom resource at ``{root}/convert/{crd}``
(e.g. ``https://127.0.0.1:9443/hooks/convert/kopfexamples.kopf.dev``), beside the admission
handlers at ``{root}/{handler_id}``. With ``settings.admission.managed_conversion = True``, the
operator writes each CRD's ``spec.conversion`` at startup (and whenever the server's address
changes)::

    strategy: Webhook
    webhook:
      clientConfig: {url: https://host:port/path/convert/<crd>, caBundle: ...}  # or service
      conversionReviewVersions: [v1, v1beta1]

The builders are pure; :func:`read_crd` and :func:`apply_conversion` are the thin async shells.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.kube.client import KubeClient, PatchType
from anyop.kube.resources import Resource

__all__ = [
    "CONVERSION_PREFIX",
    "CRDS",
    "apply_conversion",
    "build_conversion",
    "conversion_client_config",
    "crd_versions",
    "read_crd",
]

CONVERSION_PREFIX = "convert"
"""The first path component after the server's root of conversion requests (the CRD follows)."""

CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    kind="CustomResourceDefinition",
    namespaced=False,
)
"""The resource of CustomResourceDefinitions."""


def conversion_client_config(config: Mapping[str, Any], crd: str) -> dict[str, Any]:
    """The server's client config with ``convert/<crd>`` appended to its URL or Service path."""
    suffix = f"/{CONVERSION_PREFIX}/{crd}"
    result = dict(config)
    if "url" in result:
        result["url"] = str(result["url"]).rstrip("/") + suffix
    if "service" in result:
        service = dict(result["service"])
        service["path"] = (service.get("path") or "").rstrip("/") + suffix
        result["service"] = service
    return result


def build_conversion(config: Mapping[str, Any], crd: str) -> dict[str, Any]:
    """The CRD's ``spec.conversion`` that sends its conversions to the server."""
    return {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": conversion_client_config(config, crd),
            "conversionReviewVersions": ["v1", "v1beta1"],
        },
    }


def crd_versions(crd: Mapping[str, Any]) -> tuple[str, ...]:
    """The versions an object of the CRD may be in or be asked for: the served ones, the
    storage one, and those that stored objects may still have (``status.storedVersions``)."""
    versions = [
        str(version.get("name"))
        for version in (crd.get("spec") or {}).get("versions") or ()
        if version.get("served") or version.get("storage")
    ]
    versions.extend(str(v) for v in (crd.get("status") or {}).get("storedVersions") or ())
    return tuple(dict.fromkeys(versions))


async def read_crd(client: KubeClient, name: str) -> dict[str, Any]:
    """The CustomResourceDefinition of that name.

    Raises:
        NotFoundError: There is none.
        ForbiddenError: The operator may not read it.
    """
    return await client.get(CRDS, name=name)


async def apply_conversion(client: KubeClient, crd: str, conversion: Mapping[str, Any]) -> None:
    """Replace the CRD's ``spec.conversion`` as a whole (a merge would keep a former ``service``
    beside a new ``url``).

    Raises:
        ApiError: The API server refused (e.g. 403 without the RBAC permission to patch CRDs).
    """
    operation = {"op": "add", "path": "/spec/conversion", "value": dict(conversion)}
    await client.patch(CRDS, [operation], name=crd, patch_type=PatchType.JSON)
