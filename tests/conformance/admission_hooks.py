"""A small HTTPS admission webhook server for the conformance suite, and the configurations
that send it a scenario's writes (on the real control plane and on FakeCluster alike).

The server records every ``AdmissionReview`` it receives and answers by the script in the
webhook's URL path, ``/<m|v>/<name>/<action>[+<action>...]``: ``allow``, ``warn`` (a warning
naming the webhook and the operation), ``deny`` (403 and a message), ``deny0`` (no code, a
reason), ``label`` (a JSON patch adding the label ``mutated: "yes"``), ``arch`` (a Deployment's
pod template's ``nodeSelector`` with the deprecated ``beta.kubernetes.io/arch``), ``badkey``
(a ConfigMap key that is invalid), ``big`` (a Gizmo's ``spec.size`` past its maximum),
``unsize`` (a Gizmo's ``spec.size`` removed), ``extra`` (a field no schema knows),
``status`` (a status set on a Gizmo), ``slow`` (an answer after 3 seconds).
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import h11
from anyio.abc import SocketAttribute
from anyio.streams.tls import TLSListener, TLSStream
from tests.conformance.harness import Target

from anyop.testing.fake.managed_fields import in_order
from anyop.webhooks.certs import CertificateAuthority

__all__ = ["ADMISSION", "HookServer", "hook", "registered", "send"]

Body = dict[str, Any]
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CONFIGMAPS = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
_ALL = ["CREATE", "UPDATE", "DELETE"]


def _patch_of(action: str, request: Mapping[str, Any]) -> list[Body]:
    obj = request.get("object") or {}
    metadata = obj.get("metadata") or {}
    if action == "label":
        if metadata.get("labels"):
            return [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
        return [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
    if action == "arch":
        selector = {"beta.kubernetes.io/arch": "amd64"}
        return [{"op": "add", "path": "/spec/template/spec/nodeSelector", "value": selector}]
    if action == "badkey":
        data = {**(obj.get("data") or {}), "bad key!": "x"}
        return [{"op": "add", "path": "/data", "value": data}]
    if action == "big":
        return [{"op": "add", "path": "/spec/size", "value": 50}]
    if action == "unsize":
        return [{"op": "remove", "path": "/spec/size"}]
    if action == "triple":  # a Scale's replicas
        return [{"op": "add", "path": "/spec/replicas", "value": 3}]
    if action == "extra":
        return [{"op": "add", "path": "/spec/unknownField", "value": "x"}]
    if action == "status":
        return [{"op": "add", "path": "/status", "value": {"replicas": 7}}]
    return []


class HookServer:
    """The webhook server: ``async with HookServer.running() as server``."""

    def __init__(self) -> None:
        self.ca = CertificateAuthority()
        pair = self.ca.issue("hooks", sans=["127.0.0.1"], server=True)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as folder:
            cert, key = Path(folder, "tls.crt"), Path(folder, "tls.key")
            pair.write(cert, key)
            self.context.load_cert_chain(cert, key)
        self.port = 0
        self.received: list[tuple[str, Body]] = []
        self.probed: set[str] = set()

    @classmethod
    @asynccontextmanager
    async def running(cls) -> AsyncIterator[HookServer]:
        server = cls()
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        server.port = listener.extra(SocketAttribute.local_port)
        tls = TLSListener(listener, server.context, standard_compatible=False)
        async with listener, anyio.create_task_group() as group:
            group.start_soon(tls.serve, server._connection)
            try:
                yield server
            finally:
                group.cancel_scope.cancel()

    @property
    def bundle(self) -> str:
        """The ``caBundle`` of the webhook configurations."""
        return base64.b64encode(self.ca.cert_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def take(self) -> list[Body]:
        """What the webhooks received since the last call, as records: the mutating ones in
        the order they were called, then the validating ones by name (kube-apiserver calls
        them in parallel)."""
        taken, self.received = self.received, []
        mutating = [_shown(path, review) for path, review in taken if path.startswith("/m/")]
        validating = [_shown(path, review) for path, review in taken if path.startswith("/v/")]
        return mutating + sorted(validating, key=lambda record: str(record["path"]))

    async def _connection(self, stream: TLSStream) -> None:
        connection = h11.Connection(h11.SERVER)
        try:
            async with stream:
                while True:
                    target, body = "", b""
                    while True:
                        event = connection.next_event()
                        if event is h11.NEED_DATA:
                            connection.receive_data(await stream.receive(65536))
                            continue
                        if isinstance(event, h11.Request):
                            target = event.target.decode()
                        elif isinstance(event, h11.Data):
                            body += bytes(event.data)
                        elif isinstance(event, h11.EndOfMessage):
                            break
                        elif isinstance(event, h11.ConnectionClosed):
                            return
                    answer = json.dumps(await self._answer(target, json.loads(body))).encode()
                    headers = [("Content-Type", "application/json"),
                               ("Content-Length", str(len(answer)))]  # fmt: skip
                    await stream.send(
                        connection.send(h11.Response(status_code=200, headers=headers))
                    )
                    await stream.send(connection.send(h11.Data(data=answer)))
                    await stream.send(connection.send(h11.EndOfMessage()))
                    if connection.our_state is h11.MUST_CLOSE:
                        return
                    connection.start_next_cycle()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ssl.SSLError, h11.ProtocolError,
                OSError, anyio.ClosedResourceError):  # fmt: skip
            return

    async def _answer(self, target: str, review: Body) -> Body:
        request = review["request"]
        path = target.partition("?")[0]
        _, side, name, actions = path.split("/", 3)
        response: Body = {"uid": request["uid"], "allowed": True}
        labels = [((request.get(key) or {}).get("metadata") or {}).get("labels") or {}
                  for key in ("object", "oldObject")]  # fmt: skip
        if side == "probe":
            self.probed.add(name)
            return {**review, "response": response}
        if any("probe" in found for found in labels):
            return {**review, "response": response}
        self.received.append((target, review))
        patch: list[Body] = []
        for action in actions.split("+"):
            if action == "warn":
                response["warnings"] = [f"{name} warns on {request['operation']}"]
            elif action == "deny":
                response["allowed"] = False
                response["status"] = {"code": 403, "message": f"{name} says no"}
            elif action == "deny0":
                response["allowed"] = False
                response["status"] = {"reason": "NotAcceptable", "message": f"{name} refuses"}
            elif action == "slow":
                await anyio.sleep(3)
            else:
                patch += _patch_of(action, request)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": response}  # fmt: skip


def _owners(obj: Any) -> Any:
    """An object with its ``managedFields`` under ``owners`` (times dropped): the harness's
    normalisation drops ``managedFields``. The entries come in Go's order as if their times
    were the same (operation, manager, version, subresource): the API server orders entries of
    one operation by their times' seconds first, and two writes a moment apart fall in one
    second on one server and in two on the other."""
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return obj
    metadata = dict(obj["metadata"])
    if "managedFields" in metadata:
        owners = [{key: value for key, value in entry.items() if key != "time"}
                  for entry in metadata.pop("managedFields") or ()]  # fmt: skip
        metadata["owners"] = in_order(owners)  # without their times
    return {**obj, "metadata": metadata}


def _shown(path: str, review: Body) -> Body:
    request = dict(review["request"])
    request.pop("uid", None)
    user = dict(request.get("userInfo") or {})
    user.pop("uid", None)
    user.pop("extra", None)
    request["userInfo"] = user
    for key in ("object", "oldObject"):
        request[key] = _owners(request.get(key))
    return {"path": path, "apiVersion": review.get("apiVersion"), "request": request}


def hook(
    server: HookServer,
    t: Target,
    name: str,
    action: str,
    *,
    mutating: bool,
    rules: Sequence[Body] | None = None,
    **extra: Any,
) -> Body:
    """One webhook of a configuration: for the scenario's namespace (probes excepted)."""
    side = "m" if mutating else "v"
    url = extra.pop("url", None) or server.url(f"/{side}/{name}/{action}")
    return {
        "name": f"{name}.anyop.dev",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"url": url, "caBundle": server.bundle},
        "rules": list(rules or [{**CONFIGMAPS, "operations": _ALL}]),
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.namespace}},
        "objectSelector": {"matchExpressions": [{"key": "probe", "operator": "DoesNotExist"}]},
        **extra,
    }


async def _probe(t: Target, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": "probe-", "labels": {"probe": name}}}  # fmt: skip
    await t.api.post(t.cm(), json=body, params={"dryRun": "All"})


@asynccontextmanager
async def registered(
    t: Target,
    server: HookServer,
    *,
    mutating: Sequence[Body] = (),
    validating: Sequence[Body] = (),
) -> AsyncIterator[None]:
    """The webhooks, in a Mutating and a Validating configuration named after the namespace,
    active on the target (unrecorded) for the block, deleted after it."""
    made: list[tuple[str, str]] = []
    try:
        for plural, kind, hooks in (
            ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", mutating),
            ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", validating),
        ):
            if not hooks:
                continue
            name = f"anyop-adm-{t.namespace}-{plural[0]}"
            probe = {
                "name": "probe.anyop.dev",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"url": server.url(f"/probe/{name}/allow"),
                                 "caBundle": server.bundle},
                "rules": [{**CONFIGMAPS, "operations": ["CREATE"]}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.namespace}},
                "objectSelector": {"matchLabels": {"probe": name}},
            }  # fmt: skip
            body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                    "metadata": {"name": name}, "webhooks": [probe, *hooks]}  # fmt: skip
            answer = await t.api.post(f"{ADMISSION}/{plural}", json=body)
            assert answer.status_code == 201, answer.text
            made.append((plural, name))
        with anyio.fail_after(60):
            for _, name in made:
                while name not in server.probed:
                    await _probe(t, name)
                    await anyio.sleep(0.1)
        server.received.clear()
        yield
    finally:  # and gone from the target (kube-apiserver sees it a moment later)
        for plural, name in made:
            await t.api.delete(f"{ADMISSION}/{plural}/{name}")
        with anyio.fail_after(60):
            for _, name in made:
                while True:
                    server.probed.discard(name)
                    await _probe(t, name)
                    if name not in server.probed:
                        break
                    await anyio.sleep(0.1)


_GENERATED = re.compile(r"\b(gen-)[a-z0-9]{5}\b")
_WARNING = re.compile(r'\d{3} [^ ]+ "((?:[^"\\]|\\.)*)"')


def _shown_answer(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return document
    return _owners(document)


async def send(
    t: Target,
    server: HookServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    ct: str = "application/json",
    params: Mapping[str, str] | None = None,
) -> Any:
    """Send a request; record its status, body (``managedFields`` as ``owners``), warnings
    in order, and what the webhooks received for it; return the body. An update, patch or
    delete is sent once the server's cache holds every write before it (see
    :meth:`Target.cache_fresh`): its webhooks are called once, as on an idle server."""
    if method in ("PUT", "PATCH", "DELETE"):
        await t.cache_fresh(path)
    content = None if body is None else json.dumps(body)
    headers = {"Content-Type": ct} if body is not None else {}
    response = await t.api.request(method, path, content=content, headers=headers, params=params)
    try:
        document = response.json()
    except ValueError:
        document = response.text
    warnings = _WARNING.findall(", ".join(response.headers.get_list("warning")))
    record = {"call": f"{method} {path}", "params": dict(params or {}),
              "code": response.status_code, "body": _shown_answer(document),
              "warnings": warnings, "reviews": server.take()}  # fmt: skip
    t.records.append(json.loads(_GENERATED.sub(r"\1<random>", json.dumps(record))))
    return document
