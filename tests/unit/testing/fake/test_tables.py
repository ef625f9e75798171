"""Table views of FakeCluster without a server: content negotiation, ages on the fake's own
(virtual) clock, printer columns and their JSONPath, Go's way of printing numbers.
(Compared with the real API server in ``tests/conformance/test_tables.py``.)"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.virtual import run_virtual

from anyop.testing import FakeCluster
from anyop.testing.fake.ages import human_duration
from anyop.testing.fake.column_paths import first_value, go_text
from anyop.testing.fake.media_types import Conversion, negotiate, parse_accept
from anyop.testing.fake.statuses import StatusError

KUBECTL = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def test_kubectl_get_is_answered_with_a_v1_table() -> None:
    found = negotiate(KUBECTL, custom=False, collection=True)
    assert found == Conversion("Table", "v1")


@pytest.mark.parametrize("custom", [False, True])
def test_plain_reads_are_not_converted(custom: bool) -> None:
    for header in ("", "*/*", "application/json", "application/vnd.kubernetes.protobuf,*/*"):
        assert negotiate(header, custom=custom, collection=False) is None


def test_quality_orders_the_clauses_before_the_clients_order() -> None:
    header = "application/json;q=0.5,application/json;as=Table;v=v1beta1;g=meta.k8s.io"
    assert [clause.quality for clause in parse_accept(header)] == [1.0, 0.5]
    assert negotiate(header, custom=True, collection=True) == Conversion("Table", "v1beta1")


@pytest.mark.parametrize(
    ("header", "custom", "message"),
    [
        ("application/foo", False, "406: Not Acceptable\n\nAvailable representations: "),
        ("application/foo", True, "only the following media types are accepted: "),
        ("application/json;as=Table;v=v2;g=meta.k8s.io", False, "only the following"),
        ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", False, "only the"),
        ("application/vnd.kubernetes.protobuf", True, "only the following"),
    ],
)
def test_nothing_servable_is_406(header: str, custom: bool, message: str) -> None:
    with pytest.raises(StatusError) as caught:
        negotiate(header, custom=custom, collection=True)
    assert caught.value.code == 406
    assert caught.value.body["message"].startswith(message)


def test_a_watch_needs_a_media_type_that_streams() -> None:
    with pytest.raises(StatusError) as caught:
        negotiate("application/yaml", custom=False, collection=True, watch=True)
    assert "application/json;stream=watch" in caught.value.body["message"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"),
     (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600 + 60, "3h1m"), (8 * 3600, "8h"),
     (47 * 3600, "47h"), (50 * 3600, "2d2h"), (8 * 86400, "8d"), (729 * 86400, "729d"),
     (731 * 86400, "2y1d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_ages_are_written_as_the_api_server_writes_them(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [("s", "s"), (3, "3"), (0.5, "0.5"), (1e6, "1e+06"), (1234567.5, "1.2345675e+06"),
     (123456.5, "123456.5"), (1e-05, "1e-05"), (True, "true"), (None, "null"),
     (["x", 1], '["x",1]'), ({"b": 1, "a": "v"}, '{"a":"v","b":1}')],
)  # fmt: skip
def test_string_columns_print_values_as_go_does(value: Any, text: str) -> None:
    assert go_text(value) == text


def test_printer_column_paths_take_the_first_value_found() -> None:
    obj = {"status": {"conditions": [{"type": "Synced", "status": "False"},
                                     {"type": "Ready", "status": "True"}]},
           "spec": {"items": [{"key": "p"}, {"key": "q"}], "a.b": 1}}  # fmt: skip
    assert first_value(obj, '.status.conditions[?(@.type=="Ready")].status') == "True"
    assert first_value(obj, ".spec.items[*].key") == "p"
    assert first_value(obj, ".spec.items[-1].key") == "q"
    assert first_value(obj, "{.spec['a.b']}") == 1
    assert first_value(obj, "..key") == "p"
    assert first_value(obj, ".spec.missing.deeper") is None
    assert first_value(obj, ".spec.items[1:].key") == "q"
    assert first_value(obj, ".spec.items[a:b].key") is None  # unreadable, not an error


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ages_count_on_the_fakes_own_clock(backend: str) -> None:
    async def main() -> list[Any]:
        fake = FakeCluster()
        async with fake.client() as api:
            body = {"metadata": {"name": "c"}, "data": {"a": "b", "c": "d"}}
            (await api.post("/api/v1/namespaces/default/configmaps", json=body)).raise_for_status()
            await anyio.sleep(3 * 3600 + 65)
            path = "/api/v1/namespaces/default/configmaps/c"
            table = (await api.get(path, headers={"Accept": KUBECTL})).json()
        return [table["kind"], table["rows"][0]["cells"]]

    assert run_virtual(main, backend=backend) == ["Table", ["c", 2, "3h1m"]]


@pytest.mark.anyio
async def test_an_unknown_include_object_is_400() -> None:
    fake = FakeCluster()
    async with fake.client() as api:
        path = "/api/v1/namespaces"
        params = {"includeObject": "Everything"}
        response = await api.get(path, headers={"Accept": KUBECTL}, params=params)
    assert response.status_code == 400
    assert "includeObject: Invalid value" in response.json()["message"]
