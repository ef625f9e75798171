"""Kopf's public names (Kopf 1.45, ``tests/unit/kopf-names.txt``) exist in anyop, with Kopf's
meanings (or, where one cannot work here, an error that says what to use instead)."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest

import anyop
from anyop.errors import ConfigError
from anyop.webhooks.server import WebhookServer

KOPF_NAMES = [
    line.strip()
    for line in (Path(__file__).parent / "kopf-names.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]


def test_every_kopf_name_exists_but_the_listed_ones() -> None:
    assert len(KOPF_NAMES) == 108
    assert {name for name in KOPF_NAMES if not hasattr(anyop, name)} == set()


def test_an_aiohttp_session_is_refused_naming_the_alternative() -> None:
    with pytest.raises(ConfigError, match=r"Return anyop.ConnectionInfo\(server="):
        anyop.AiohttpSession(aiohttp_session=object(), server="https://k8s")


def test_kopfs_type_names_mean_what_kopfs_do() -> None:
    assert anyop.SyncDaemonStopperChecker is anyop.SyncDaemonStopped
    assert anyop.AsyncDaemonStopperChecker is anyop.AsyncDaemonStopped
    assert anyop.HandlerId("parent/child") == "parent/child"
    assert set(typing.get_args(anyop.Operation)) == {"CREATE", "UPDATE", "DELETE", "CONNECT"}
    assert set(typing.get_args(anyop.RawEventType)) == {None, "ADDED", "MODIFIED", "DELETED"}
    assert set(typing.get_type_hints(anyop.UserInfo)) == {"username", "uid", "groups"}
    assert set(typing.get_type_hints(anyop.OwnerReference)) == {
        "controller", "blockOwnerDeletion", "apiVersion", "kind", "name", "uid",
    }  # fmt: skip
    assert set(typing.get_type_hints(anyop.ObjectReference)) == {
        "apiVersion", "kind", "namespace", "name", "uid",
    }  # fmt: skip
    assert {format.name for format in anyop.LogFormat} >= {"PLAIN", "FULL", "JSON"}
    assert anyop.FieldPath == tuple[str, ...]


def test_the_references_built_are_of_kopfs_reference_types() -> None:
    body = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
    }  # fmt: skip
    owner = anyop.build_owner_reference(body)
    assert set(owner) <= set(typing.get_type_hints(anyop.OwnerReference))
    reference = anyop.build_object_reference(body)
    assert set(reference) <= set(typing.get_type_hints(anyop.ObjectReference))


def test_the_webhook_server_has_the_protocols_shape() -> None:
    protocol = typing.get_type_hints(anyop.WebhookServerProtocol.__call__)
    server = typing.get_type_hints(WebhookServer.__call__)
    assert set(protocol) == set(server) == {"fn", "return"}


def test_a_webhook_server_takes_kopfs_arguments_in_kopfs_order() -> None:
    server = WebhookServer("127.0.0.1", 9443, "/hooks", "example.test")
    assert (server.addr, server.port, server.path, server.host) == (
        "127.0.0.1", 9443, "/hooks", "example.test",
    )  # fmt: skip
