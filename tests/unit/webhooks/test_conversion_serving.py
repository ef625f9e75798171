"""The converter and the webhook router: what the functions get, what the API server gets back,
and bad input over HTTPS with the real server. Both backends."""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import anyop.on as on
from anyop.engine.operator.admission_reviews import Reviewer, open_admission
from anyop.engine.operator.conversion_reviews import (
    Converter,
    WebhookRouter,
    find_conversions,
    served_versions,
)
from anyop.errors import ConfigError, PermanentError
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.settings import OperatorSettings
from anyop.webhooks.conversion_routes import plan_routes
from anyop.webhooks.managed import WebhookClientConfig
from anyop.webhooks.review import ReviewError
from anyop.webhooks.server import WebhookServer

pytestmark = pytest.mark.anyio

GROUP = "convert.anyop.dev"
CRD = f"backends.{GROUP}"
RESOURCES = [
    Resource(GROUP, version, "backends", kind="Backend", namespaced=True, preferred=version == "v1")
    for version in ("v1alpha1", "v1beta1", "v1")
]
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)


def backend(version: str, name: str = "db", **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "9"}
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Backend",
        "metadata": metadata,
        "spec": spec,
    }


def review(target: str, *objects: dict[str, Any]) -> dict[str, Any]:
    request = {"uid": "r-1", "desiredAPIVersion": f"{GROUP}/{target}", "objects": list(objects)}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request}


def hub(registry: OperatorRegistry) -> None:
    """v1 is the hub; v1alpha1 has ``endpoint``, v1beta1 ``address``, v1 ``host`` and ``port``."""

    @on.convert(GROUP, "backends", from_="v1alpha1", to="v1", registry=registry, id="a-up")
    def alpha_up(spec: dict[str, Any], **_: Any) -> None:
        host, _, port = spec.pop("endpoint").partition(":")
        if not port:
            raise PermanentError(f"No port in {host!r}.")
        spec.update(host=host, port=int(port))

    @on.convert(GROUP, "backends", from_="v1", to="v1alpha1", registry=registry, id="a-down")
    async def alpha_down(spec: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {"spec": {"endpoint": f"{spec['host']}:{spec['port']}"}}

    @on.convert(GROUP, "backends", from_="v1beta1", to="v1", registry=registry, id="b-up")
    def beta_up(spec: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {"spec": dict(spec["address"])}

    @on.convert(GROUP, "backends", from_="v1", to="v1beta1", registry=registry, id="b-down")
    async def beta_down(spec: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {"spec": {"address": dict(spec)}}


def converter_of(registry: OperatorRegistry, *, versions: int = 3) -> Converter:
    """The converter of the registry's functions; ``versions=2``: without v1beta1."""
    resources = RESOURCES if versions == 3 else [RESOURCES[0], RESOURCES[2]]
    plans = {
        crd: plan_routes(
            crd,
            group=resource.group,
            kind=str(resource.kind),
            versions=served_versions(resource, resources),
            steps=handlers,
        )
        for crd, (resource, handlers) in find_conversions(registry, resources).items()
    }
    return Converter(plans, OperatorSettings())


@pytest.fixture
def converter() -> Converter:
    registry = OperatorRegistry()
    hub(registry)
    return converter_of(registry)


async def test_every_object_is_converted_in_order_along_its_route(converter: Converter) -> None:
    objects = [
        backend("v1alpha1", "a", endpoint="a:1"),
        backend("v1", "b", host="b", port=2),
        backend("v1beta1", "c", address={"host": "c", "port": 3}),
    ]
    answer = await converter(review("v1beta1", *objects), crd=CRD)
    response = answer["response"]
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert response["uid"] == "r-1"
    assert response["result"] == {"status": "Success"}
    assert [o["spec"] for o in response["convertedObjects"]] == [
        {"address": {"host": "a", "port": 1}},
        {"address": {"host": "b", "port": 2}},
        {"address": {"host": "c", "port": 3}},
    ]
    assert {o["apiVersion"] for o in response["convertedObjects"]} == {f"{GROUP}/v1beta1"}
    assert [o["metadata"] for o in response["convertedObjects"]] == [o["metadata"] for o in objects]


async def test_the_functions_get_the_conversion_kwargs() -> None:
    registry = OperatorRegistry()
    seen: dict[str, Any] = {}

    @on.convert(GROUP, "backends", from_="v1alpha1", to="v1", registry=registry, param="p")
    def up(**kwargs: Any) -> None:
        seen.update(kwargs, thread=threading.current_thread())

    @on.convert(GROUP, "backends", from_="v1", to="v1alpha1", registry=registry)
    def down(**_: Any) -> None:
        pass

    original = backend("v1alpha1", endpoint="x:1")
    original["metadata"]["labels"] = {"a": "1"}
    await converter_of(registry, versions=2)(review("v1", original), crd=CRD)
    assert seen["body"]["spec"] == {"endpoint": "x:1"}
    assert seen["spec"] is seen["body"]["spec"]
    assert seen["meta"] is seen["metadata"] is seen["body"]["metadata"]
    assert seen["labels"] == {"a": "1"}
    assert seen["annotations"] == {}
    assert seen["status"] == {}
    assert (seen["name"], seen["namespace"], seen["uid"]) == ("db", "ns", "uid-db")
    assert (seen["from_version"], seen["to_version"]) == ("v1alpha1", "v1")
    assert seen["param"] == "p"
    assert isinstance(seen["settings"], OperatorSettings)
    assert seen["logger"] is not None
    assert seen["body"] is not original
    assert original["spec"] == {"endpoint": "x:1"}
    assert seen["thread"] is not threading.current_thread()  # never blocks the event loop


async def test_changes_in_place_add_no_empty_parts_and_returned_fields_keep_the_rest() -> None:
    registry = OperatorRegistry()

    @on.convert(GROUP, "backends", from_="v1alpha1", to="v1", registry=registry)
    def up(spec: dict[str, Any], annotations: dict[str, str], **_: Any) -> None:
        spec["port"] = 1
        annotations["converted"] = "yes"

    @on.convert(GROUP, "backends", from_="v1", to="v1alpha1", registry=registry)
    def down(**_: Any) -> dict[str, Any]:
        return {"spec": {"endpoint": "x"}, "metadata": {"labels": {"b": "2"}}}

    converter = converter_of(registry, versions=2)
    with_status = backend("v1", port=1) | {"status": {"ok": True}}
    up_answer = await converter(review("v1", backend("v1alpha1")), crd=CRD)
    down_answer = await converter(review("v1alpha1", with_status), crd=CRD)
    converted_up = up_answer["response"]["convertedObjects"][0]
    converted_down = down_answer["response"]["convertedObjects"][0]
    assert set(converted_up) == {"apiVersion", "kind", "metadata", "spec"}
    assert converted_up["metadata"]["annotations"] == {"converted": "yes"}
    assert "labels" not in converted_up["metadata"]
    assert converted_down["status"] == {"ok": True}
    assert converted_down["spec"] == {"endpoint": "x"}
    assert converted_down["metadata"]["labels"] == {"b": "2"}
    assert converted_down["metadata"]["name"] == "db"


async def test_a_failing_function_fails_the_review_with_its_message(
    converter: Converter, caplog: pytest.LogCaptureFixture
) -> None:
    objects = [
        backend("v1alpha1", "good", endpoint="a:1"),
        backend("v1alpha1", "bad", endpoint="a"),
    ]
    answer = await converter(review("v1beta1", *objects), crd=CRD)
    assert answer["response"]["uid"] == "r-1"
    assert answer["response"]["convertedObjects"] == []
    assert answer["response"]["result"] == {
        "status": "Failed",
        "message": "Conversion 'a-up' (v1alpha1 -> v1) failed: No port in 'a'.",
    }
    assert any("failed permanently: No port in 'a'." in r.getMessage() for r in caplog.records)
    assert not [record for record in caplog.records if record.exc_info]


async def test_an_unexpected_error_is_logged_with_its_traceback_and_fails_the_review(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()

    @on.convert(GROUP, "backends", from_="v1alpha1", to="v1", registry=registry, id="buggy")
    def buggy(spec: dict[str, Any], **_: Any) -> None:
        spec["port"] = int(spec["endpoint"])

    @on.convert(GROUP, "backends", from_="v1", to="v1alpha1", registry=registry)
    def down(**_: Any) -> None:
        pass

    item = backend("v1alpha1", endpoint="x")
    answer = await converter_of(registry, versions=2)(review("v1", item), crd=CRD)
    message = answer["response"]["result"]["message"]
    assert message.startswith("Conversion 'buggy' (v1alpha1 -> v1) failed: invalid literal")
    assert [r.getMessage() for r in caplog.records if r.exc_info] == [
        "Conversion 'buggy' (v1alpha1 -> v1) failed with an exception."
    ]


@pytest.mark.parametrize(
    ("result", "culprit"),
    [
        ("a string", "returned str; expected the converted fields"),
        (
            {"metadata": {"name": "renamed"}},
            "may change only the labels and annotations, not metadata.name",
        ),
    ],
)
async def test_a_result_that_kubernetes_would_refuse_fails_the_review(
    result: Any, culprit: str
) -> None:
    registry = OperatorRegistry()

    @on.convert(GROUP, "backends", from_="v1alpha1", to="v1", registry=registry, id="bad")
    def bad(**_: Any) -> Any:
        return result

    @on.convert(GROUP, "backends", from_="v1", to="v1alpha1", registry=registry)
    def down(**_: Any) -> None:
        pass

    answer = await converter_of(registry, versions=2)(review("v1", backend("v1alpha1")), crd=CRD)
    assert answer["response"]["result"]["status"] == "Failed"
    assert "Conversion 'bad' (v1alpha1 -> v1)" in answer["response"]["result"]["message"]
    assert culprit in answer["response"]["result"]["message"]


@pytest.mark.parametrize(
    ("target", "item", "culprit"),
    [
        ("v2", backend("v1"), "no conversion from v1 to v2"),
        ("v1", backend("v9"), "no conversion from v9 to v1"),
        ("v1", backend("v1") | {"apiVersion": "other.dev/v1"}, "not from other.dev"),
        ("v1", backend("v1") | {"apiVersion": "v1"}, "Not an apiVersion of a custom resource"),
        ("v1", backend("v1") | {"kind": "Pod"}, "converts Backend, not 'Pod'"),
    ],
)
async def test_unconvertible_objects_fail_the_review_with_the_reason(
    converter: Converter, target: str, item: dict[str, Any], culprit: str
) -> None:
    answer = await converter(review(target, item), crd=CRD)
    assert answer["response"]["result"]["status"] == "Failed"
    assert culprit in answer["response"]["result"]["message"]


async def test_an_unknown_crd_is_404_and_a_malformed_review_400(converter: Converter) -> None:
    with pytest.raises(ReviewError, match=r"No conversions for 'pods\.core'") as unknown:
        await converter(review("v1", backend("v1")), crd="pods.core")
    with pytest.raises(ReviewError, match="no uid") as malformed:
        await converter({**review("v1"), "request": {"desiredAPIVersion": "a/b"}}, crd=CRD)
    assert unknown.value.status == 404
    assert malformed.value.status == 400


def test_an_admission_id_on_the_conversion_path_is_refused() -> None:
    registry = OperatorRegistry()
    on.validate("kopfexamples", registry=registry, id="convert/x")(lambda **_: None)
    with pytest.raises(ConfigError, match="reserved for the conversion webhooks"):
        find_conversions(registry, [*RESOURCES, KEX])


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (("nothing",), "matches: none"),
        (("pods",), "is not a custom resource"),
        (("backends",), "matches: backends.convert.anyop.dev, backends.other.dev"),
    ],
)
def test_a_function_without_one_custom_resource_is_refused(
    args: tuple[str, ...], culprit: str
) -> None:
    registry = OperatorRegistry()
    on.convert(*args, from_="v1", to="v2", registry=registry)(lambda **_: None)
    pods = Resource("", "v1", "pods", kind="Pod", namespaced=True)
    others = Resource("other.dev", "v1", "backends", kind="Backend", namespaced=True)
    with pytest.raises(ConfigError, match=culprit):
        find_conversions(registry, [*RESOURCES, pods, others])


# -- over HTTPS, with the real server --------------------------------------------------------------


@contextlib.asynccontextmanager
async def client_of(server: WebhookServer, cadump: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The server with the router (admission and conversions); a client of its origin."""
    registry = OperatorRegistry()
    hub(registry)
    on.validate("kopfexamples", registry=registry, id="check")(lambda **_: None)
    reviewer = Reviewer(registry, OperatorSettings(), [KEX], new_memo=dict)
    router = WebhookRouter(reviewer, converter_of(registry))
    send, receive = anyio.create_memory_object_stream[WebhookClientConfig](1)

    async def pump() -> None:
        async with send, contextlib.aclosing(server(router)) as configs:
            async for config in configs:
                await send.send(config)

    async with receive, anyio.create_task_group() as tg:
        tg.start_soon(pump)
        config = await receive.receive()
        ctx = ssl.create_default_context(cafile=str(cadump))
        origin = httpx.URL(config["url"]).copy_with(path="/")
        async with httpx.AsyncClient(base_url=origin, verify=ctx, timeout=10) as client:
            yield client
        tg.cancel_scope.cancel()


def admission_review() -> dict[str, Any]:
    request = {
        "uid": "a-1",
        "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
        "operation": "CREATE",
        "object": {"metadata": {"name": "x"}},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@pytest.mark.parametrize(
    ("path", "payload", "status", "culprit"),
    [
        (f"/hooks/convert/{CRD}", admission_review(), 400, "Expected kind ConversionReview"),
        ("/hooks/check", review("v1", backend("v1")), 400, "Expected kind AdmissionReview"),
        ("/hooks/convert/pods.core", review("v1", backend("v1")), 404, "No conversions for"),
        ("/hooks/convert", review("v1", backend("v1")), 404, "convert/<crd>"),
        (
            f"/hooks/convert/{CRD}",
            {"kind": "ConversionReview"},
            400,
            "got 'ConversionReview' of None",
        ),
        (f"/hooks/convert/{CRD}", "x" * 2048, 413, "larger than 1024 bytes"),
    ],
)
async def test_bad_conversion_requests_get_a_4xx_and_the_server_keeps_serving(
    tmp_path: Path, path: str, payload: Any, status: int, culprit: str
) -> None:
    cadump = tmp_path / "ca.pem"
    server = WebhookServer(
        addr="127.0.0.1", port=0, path="/hooks", cadump=cadump, max_body_size=1024
    )
    async with client_of(server, cadump) as client:
        bad = await client.post(path, json=payload)
        converted = await client.post(
            f"/hooks/convert/{CRD}", json=review("v1", backend("v1alpha1", endpoint="a:1"))
        )
        admitted = await client.post("/hooks/check", json=admission_review())
    assert bad.status_code == status
    assert culprit in bad.json()["error"]
    assert converted.json()["response"]["convertedObjects"][0]["spec"] == {"host": "a", "port": 1}
    assert admitted.json()["response"]["allowed"] is True


async def test_conversions_without_a_webhook_server_refuse_to_start() -> None:
    registry = OperatorRegistry()
    hub(registry)
    client: Any = None  # never reached: the settings are checked first
    with pytest.raises(ConfigError, match=r"\(@on\.convert\), but no webhook server"):
        async with open_admission(client, registry, OperatorSettings(), new_memo=dict):
            pass
