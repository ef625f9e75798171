"""The login activity: filling the vault, rejecting garbage, and logging in again when emptied."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from anyop import ConnectionInfo, LoginError, on
from anyop.engine.operator.login import (
    BUILTIN_LOGINS,
    authenticate,
    keep_logged_in,
    login_handlers,
)
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio

SERVER = "https://127.0.0.1:6443"


def token(value: str) -> ConnectionInfo:
    return ConnectionInfo(SERVER, token=value)


def test_the_builtin_logins_serve_a_registry_without_login_handlers() -> None:
    assert login_handlers(OperatorRegistry()) is BUILTIN_LOGINS
    ids = [handler.id for handler in BUILTIN_LOGINS]
    assert ids == ["login_with_kubeconfig", "login_with_service_account"]


async def test_every_handlers_credentials_go_into_the_vault() -> None:
    registry = OperatorRegistry()
    on.login(registry=registry, id="a")(lambda **_: token("a"))
    on.login(registry=registry, id="b")(lambda **_: token("b"))
    on.login(registry=registry, id="none")(lambda **_: None)
    vault = Vault()
    assert await authenticate(vault, registry, settings=OperatorSettings(), memo=None) == 2
    _, info = await vault.current()
    assert info.token in {"a", "b"}


async def test_garbage_is_an_error_naming_the_handler_and_is_retried() -> None:
    registry = OperatorRegistry()
    answers: list[Any] = [42, token("good")]
    on.login(registry=registry, id="flaky", backoff=0.01)(lambda **_: answers.pop(0))
    vault = Vault()
    assert await authenticate(vault, registry, settings=OperatorSettings(), memo=None) == 1
    assert answers == []


async def test_garbage_until_the_retries_run_out_is_a_login_error_with_the_reason() -> None:
    registry = OperatorRegistry()
    on.login(registry=registry, id="broken", retries=2, backoff=0.01)(lambda **_: "token")
    with pytest.raises(LoginError, match="'broken' returned a str; it must return"):
        await authenticate(Vault(), registry, settings=OperatorSettings(), memo=None)


async def test_nothing_at_all_is_a_login_error() -> None:
    registry = OperatorRegistry()
    on.login(registry=registry, id="none")(lambda **_: None)
    with pytest.raises(LoginError, match="every login handler returned None"):
        await authenticate(Vault(), registry, settings=OperatorSettings(), memo=None)


async def test_an_emptied_vault_is_filled_again_and_a_useless_relogin_closes_it() -> None:
    registry = OperatorRegistry()
    answers = [token("first"), token("second"), token("second")]
    on.login(registry=registry, id="rotating")(lambda **_: answers.pop(0))
    vault = Vault()
    await authenticate(vault, registry, settings=OperatorSettings(), memo=None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            functools.partial(
                keep_logged_in, vault, registry, settings=OperatorSettings(), memo=None
            )
        )
        key, info = await vault.current()
        await vault.invalidate(key, info)
        with anyio.fail_after(5):
            _, renewed = await vault.current()
        assert renewed.token == "second"
        await vault.invalidate(key, renewed)  # the next login returns the rejected one again
        with anyio.fail_after(5), pytest.raises(LoginError, match="vault is closed"):
            await vault.current()
    assert answers == []
