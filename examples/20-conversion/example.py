"""Conversion webhooks: one custom resource in two versions, converted by the operator.

``Backend`` objects (``examples/20-conversion/crd.yaml``) have two versions: in ``v1alpha1``,
``spec.endpoint`` holds ``host:port``; in ``v1``, ``spec.host`` and ``spec.port`` hold them
apart. The API server stores one version and asks the operator's webhook server to convert
whenever a client reads or writes the other one. The two functions below are the two steps;
anyop serves them at ``/hooks/convert/backends.convert.anyop.dev`` on the same HTTPS server
as admission webhooks, and (``managed_conversion``) points the CRD's ``spec.conversion`` there
at startup, with the CA it generated.

Try it::

    kubectl create -f - <<< '{"apiVersion": "convert.anyop.dev/v1alpha1", "kind": "Backend",
        "metadata": {"name": "db"}, "spec": {"endpoint": "db.example:5432"}}'
    kubectl get backends.v1.convert.anyop.dev db -o yaml         # spec: {host, port}
    kubectl get backends.v1alpha1.convert.anyop.dev db -o yaml   # spec: {endpoint}
"""

from typing import Any

import anyop


@anyop.on.startup()
def configure(settings: anyop.OperatorSettings, **_: Any) -> None:
    settings.admission.server = anyop.WebhookServer(addr="127.0.0.1", port=0, path="/hooks")
    settings.admission.managed_conversion = True


@anyop.on.convert("convert.anyop.dev", "backends", from_="v1alpha1", to="v1")
def split_endpoint(spec: dict[str, Any], **_: Any) -> None:
    """``host:port`` in two fields; an endpoint without a port cannot be converted, and the
    client that sent it sees this message."""
    endpoint = spec.pop("endpoint", "")
    host, colon, port = endpoint.rpartition(":")
    if not colon or not host or not port.isdigit():
        raise anyop.PermanentError(f"The endpoint {endpoint!r} is not host:port.")
    spec["host"], spec["port"] = host, int(port)


@anyop.on.convert("convert.anyop.dev", "backends", from_="v1", to="v1alpha1")
def join_endpoint(spec: dict[str, Any], **_: Any) -> dict[str, Any]:
    """The way back: the two fields in one (returning the converted fields is the other way
    to answer; the rest of the object is kept)."""
    return {"spec": {"endpoint": f"{spec['host']}:{spec['port']}"}}


@anyop.on.create("convert.anyop.dev", "backends")
def greet(spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> dict[str, Any]:
    """The operator watches the preferred version, v1, whatever version the object came in."""
    logger.info(f"Backend at host {spec['host']}, port {spec['port']}.")
    return {"address": f"{spec['host']}:{spec['port']}"}
