"""The credentials vault and the default logins, on both Trio and asyncio."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
import yaml

from anyop.kube import auth
from anyop.kube.auth import LoginError, Vault, login_with_kubeconfig, login_with_service_account
from anyop.kube.config import ConnectionInfo

pytestmark = pytest.mark.anyio

SERVER = "https://api.example.com"
DEADLINE = 5  # seconds; generous, only hit when a test is broken


def cred(token: str, priority: int = 0, expiration: datetime | None = None) -> ConnectionInfo:
    """A token credential."""
    return ConnectionInfo(SERVER, token=token, priority=priority, expiration=expiration)


class FakeClock:
    """A wall clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


# Choosing


async def test_current_returns_the_highest_priority_credential() -> None:
    vault = Vault()
    await vault.populate({"low": cred("a", 10), "high": cred("b", 20), "mid": cred("c", 15)})
    assert await vault.current() == ("high", cred("b", 20))


async def test_credentials_of_equal_priority_are_all_used() -> None:
    vault = Vault()
    await vault.populate({"one": cred("a", 5), "two": cred("b", 5), "low": cred("c", 1)})
    keys = {(await vault.current())[0] for _ in range(200)}
    assert keys == {"one", "two"}


async def test_populate_replaces_the_item_under_the_same_key() -> None:
    vault = Vault()
    await vault.populate({"k": cred("old")})
    await vault.populate({"k": cred("new"), "other": cred("x", -1)})
    assert await vault.current() == ("k", cred("new"))


async def test_replace_drops_the_previous_items() -> None:
    vault = Vault()
    await vault.populate({"gone": cred("a", 99)})
    await vault.replace({"kept": cred("b", 1)})
    assert (await vault.current())[0] == "kept"


# Waiting


async def test_current_waits_while_the_vault_is_empty() -> None:
    vault = Vault()
    got: list[tuple[str, ConnectionInfo]] = []

    async def request() -> None:
        got.append(await vault.current())

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(request)
            await anyio.wait_all_tasks_blocked()
            assert got == []
            await vault.populate({"login": cred("t")})
    assert got == [("login", cred("t"))]


async def test_requests_wait_after_the_last_credential_is_invalidated() -> None:
    vault = Vault()
    await vault.populate({"login": cred("revoked")})
    key, info = await vault.current()
    await vault.invalidate(key, info)
    got: list[tuple[str, ConnectionInfo]] = []

    async def request() -> None:
        got.append(await vault.current())

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(request)
            await anyio.wait_all_tasks_blocked()
            assert got == []
            await vault.replace({"login": cred("fresh")})
    assert got == [("login", cred("fresh"))]


async def test_a_new_vault_needs_a_login_at_once() -> None:
    with anyio.fail_after(DEADLINE):
        await Vault().wait_for_emptiness()


async def test_login_is_not_needed_while_a_credential_is_valid() -> None:
    vault = Vault()
    await vault.populate({"login": cred("t")})
    with anyio.move_on_after(0.05) as scope:
        await vault.wait_for_emptiness()
    assert scope.cancelled_caught


async def test_login_is_needed_once_the_last_credential_is_invalidated() -> None:
    vault = Vault()
    first, second = cred("a"), cred("b")
    await vault.populate({"a": first, "b": second})
    woke: list[bool] = []

    async def login_activity() -> None:
        await vault.wait_for_emptiness()
        woke.append(True)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(login_activity)
            await anyio.wait_all_tasks_blocked()
            assert not await vault.invalidate("a", cred("a"))  # equal, yet not the one served
            assert await vault.invalidate("a", first)
            await anyio.wait_all_tasks_blocked()
            assert woke == []
            assert await vault.invalidate("b", second)
    assert woke == [True]


# Invalidating


async def test_invalidate_drops_a_credential_once_per_generation() -> None:
    vault = Vault()
    first = cred("t")
    await vault.populate({"login": first})
    results: list[bool] = []

    async def on_401() -> None:
        results.append(await vault.invalidate("login", first, RuntimeError("401")))

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(on_401)
    assert sorted(results) == [False] * 9 + [True]


async def test_invalidating_a_replaced_credential_keeps_the_new_one() -> None:
    vault = Vault()
    old, new = cred("old"), cred("new")
    await vault.populate({"login": old})
    await vault.replace({"login": new})
    assert not await vault.invalidate("login", old)
    assert await vault.current() == ("login", new)


async def test_relogin_returning_a_rejected_credential_is_ignored() -> None:
    vault = Vault()
    revoked = cred("revoked")
    await vault.populate({"login": revoked})
    await vault.invalidate("login", revoked)
    assert await vault.replace({"login": cred("revoked")}) == 0
    assert await vault.replace({"login": cred("rotated")}) == 1


# Expiring


async def test_expired_credentials_are_never_served() -> None:
    clock = FakeClock()
    vault = Vault(clock=clock)
    soon = clock.now + timedelta(minutes=1)
    await vault.populate({"short": cred("s", 50, soon), "long": cred("l", 1)})
    assert (await vault.current())[0] == "short"
    clock.now += timedelta(minutes=1)
    assert (await vault.current())[0] == "long"


async def test_a_lone_credential_is_not_served_once_it_expires() -> None:
    clock = FakeClock()
    vault = Vault(clock=clock)
    await vault.populate({"only": cred("o", expiration=clock.now + timedelta(minutes=1))})
    assert (await vault.current())[0] == "only"
    clock.now += timedelta(minutes=1)
    with anyio.move_on_after(0.05) as scope:
        await vault.current()  # waits for a login
    assert scope.cancelled_caught


async def test_naive_expirations_count_as_utc() -> None:
    clock = FakeClock()
    vault = Vault(clock=clock)
    naive_past = (clock.now - timedelta(seconds=1)).replace(tzinfo=None)
    assert await vault.populate({"old": cred("o", expiration=naive_past)}) == 0


async def test_login_is_needed_when_the_last_credential_expires() -> None:
    vault = Vault()
    await vault.populate(
        {"login": cred("t", expiration=datetime.now(UTC) + timedelta(seconds=0.1))}
    )
    with anyio.fail_after(DEADLINE):
        await vault.wait_for_emptiness()
    with anyio.move_on_after(0.05) as scope:
        await vault.current()
    assert scope.cancelled_caught


# Closing


async def test_closing_fails_waiting_and_later_requests_with_the_cause() -> None:
    vault = Vault()
    errors: list[BaseException] = []

    async def request() -> None:
        with pytest.raises(LoginError) as caught:
            await vault.current()
        errors.append(caught.value)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(request)
            await anyio.wait_all_tasks_blocked()
            vault.close(RuntimeError("no login handler succeeded"))
    assert str(errors[0].__cause__) == "no login handler succeeded"
    assert vault.closed
    with pytest.raises(LoginError, match="vault is closed"):
        await vault.current()
    with pytest.raises(LoginError):
        await vault.wait_for_emptiness()


async def test_the_last_rejection_is_the_cause_when_closed_without_one() -> None:
    vault = Vault()
    info = cred("t")
    await vault.populate({"login": info})
    await vault.invalidate("login", info, RuntimeError("401 Unauthorized"))
    vault.close()
    with pytest.raises(LoginError) as caught:
        await vault.current()
    assert str(caught.value.__cause__) == "401 Unauthorized"


# Default logins


def kubeconfig_file(folder: Path) -> Path:
    """A one-context kubeconfig with a static token."""
    document = {
        "clusters": [{"name": "c", "cluster": {"server": SERVER}}],
        "users": [{"name": "u", "user": {"token": "kube-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
    }
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_kubeconfig_login_has_priority_10_and_honours_trust_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file(tmp_path)))
    settings = SimpleNamespace(networking=SimpleNamespace(trust_env=True))
    info = await login_with_kubeconfig(settings=settings, logger=None, unknown="ignored")
    assert info is not None
    assert (info.token, info.priority, info.trust_env) == ("kube-token", 10, True)
    assert info.default_namespace == "ns"


async def test_kubeconfig_login_without_a_kubeconfig_returns_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert await login_with_kubeconfig() is None


async def test_service_account_login_has_priority_20(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("sa-token")
    monkeypatch.setattr(auth, "SERVICEACCOUNT_ROOT", str(tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    info = await login_with_service_account(logger=None)
    assert info is not None
    assert (info.server, info.token, info.priority) == ("https://10.96.0.1:443", "sa-token", 20)
    assert not info.trust_env


async def test_service_account_login_outside_a_cluster_returns_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert await login_with_service_account() is None
