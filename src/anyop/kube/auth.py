"""The credentials vault, and the default logins that fill it.

Login handlers (or the defaults here) return :class:`ConnectionInfo` objects; the engine puts them
in a :class:`Vault` keyed by handler id. Every API request takes :meth:`Vault.current`. A 401 makes
the engine call :meth:`Vault.invalidate`; when no valid credential is left, requests wait and the
login activity, parked in :meth:`Vault.wait_for_emptiness`, wakes up to log in again.

The vault is not thread-safe: use it from the event loop's tasks only (Trio or asyncio).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio

from anyop.errors import LoginError
from anyop.kube.config import (
    SERVICEACCOUNT_ROOT,
    ConnectionInfo,
    KubeConfig,
    kubeconfig_paths,
    load_incluster,
    load_kubeconfig,
)
from anyop.threads import run_in_thread

__all__ = ["LoginError", "Vault", "login_with_kubeconfig", "login_with_service_account"]

KUBECONFIG_PRIORITY = 10
SERVICE_ACCOUNT_PRIORITY = 20
_REJECTED_MEMORY = 256


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Vault:
    """Credentials keyed by the login handler that produced them; requests take the best valid one.

    Guarantees:
        * :meth:`current` returns an item with the highest ``priority`` among those that are
          neither expired nor invalidated (chosen at random among equals), and waits while there
          is none.
        * An invalidated credential, and any equal one that a later login returns, is never
          served again, so a revoked token cannot cause a tight re-login loop.
        * Invalidating an item that was already invalidated or replaced does nothing: many
          concurrent 401s for one credential drop it once.

    Caveats:
        The vault does not log in by itself; the engine's login activity waits in
        :meth:`wait_for_emptiness`, runs the login handlers, and calls :meth:`replace`. If the
        logins produce nothing usable, the activity decides when to give up and :meth:`close`.
    """

    def __init__(self, *, clock: Callable[[], datetime] = _utc_now) -> None:
        """Create an empty vault.

        Args:
            clock: Returns the current time, to judge expiration; a seam for tests.
        """
        self._clock = clock
        self._items: dict[str, ConnectionInfo] = {}
        self._rejected: dict[ConnectionInfo, None] = {}
        self._filled = anyio.Event()
        self._emptied = anyio.Event()
        self._emptied.set()
        self._closed = False
        self._cause: BaseException | None = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def populate(self, items: Mapping[str, ConnectionInfo]) -> int:
        """Add credentials; an item replaces the one stored under the same key.

        Already expired items, and items equal to invalidated ones, are ignored.

        Returns:
            How many items were accepted.
        """
        accepted = self._acceptable(items)
        self._items.update(accepted)
        self._update_signals()
        return len(accepted)

    async def replace(self, items: Mapping[str, ConnectionInfo]) -> int:
        """Drop all credentials and store these instead, as after a complete re-login.

        Returns:
            How many items were accepted (see :meth:`populate`).
        """
        self._items.clear()
        return await self.populate(items)

    async def current(self) -> tuple[str, ConnectionInfo]:
        """Return the key and the best valid credential, waiting until there is one.

        Raises:
            LoginError: The vault is closed, or gets closed while waiting.
        """
        while True:
            self._raise_if_closed()
            if len(self._items) == 1:  # the usual vault: one credential, often without expiry
                ((key, info),) = self._items.items()
                if info.expiration is None:
                    return key, info
            self._drop_expired()
            if self._items:
                return self._best()
            await self._filled.wait()

    async def invalidate(
        self, key: str, info: ConnectionInfo, exc: BaseException | None = None
    ) -> bool:
        """Drop a credential that the API server rejected, if it is still the stored one.

        Args:
            key: The key that :meth:`current` returned with ``info``.
            info: The very credential that was used.
            exc: Why it was rejected; it becomes the cause of a later :class:`LoginError`.

        Returns:
            Whether the credential was dropped now (``False`` if an earlier call did, or if a
            re-login has already replaced it).
        """
        if self._items.get(key) is not info:
            return False
        del self._items[key]
        self._rejected[info] = None
        while len(self._rejected) > _REJECTED_MEMORY:
            del self._rejected[next(iter(self._rejected))]
        self._cause = exc if exc is not None else self._cause
        self._update_signals()
        return True

    async def wait_for_emptiness(self) -> None:
        """Return when no valid credential is left: at first, after invalidation, on expiry.

        Raises:
            LoginError: The vault is closed, or gets closed while waiting.
        """
        while True:
            self._raise_if_closed()
            self._drop_expired()
            if not self._items:
                return
            with anyio.move_on_after(self._seconds_to_next_expiry()):
                await self._emptied.wait()

    def close(self, exc: BaseException | None = None) -> None:
        """Close the vault: every waiting and future :meth:`current` raises :class:`LoginError`.

        Args:
            exc: Why (such as the last login failure); it becomes the error's ``__cause__``.
        """
        self._closed = True
        self._cause = exc if exc is not None else self._cause
        self._filled.set()
        self._emptied.set()

    def _raise_if_closed(self) -> None:
        if self._closed:
            raise LoginError("the credentials vault is closed: no login succeeded") from self._cause

    def _acceptable(self, items: Mapping[str, ConnectionInfo]) -> dict[str, ConnectionInfo]:
        now = self._clock()
        return {
            key: info
            for key, info in items.items()
            if info not in self._rejected and not info.is_expired(now)
        }

    def _drop_expired(self) -> None:
        now = self._clock()
        for key in [key for key, info in self._items.items() if info.is_expired(now)]:
            del self._items[key]
        self._update_signals()

    def _best(self) -> tuple[str, ConnectionInfo]:
        top = max(info.priority for info in self._items.values())
        return random.choice([item for item in self._items.items() if item[1].priority == top])

    def _seconds_to_next_expiry(self) -> float:
        now = self._clock()
        return max(0.0, min(info.seconds_to_expiry(now) for info in self._items.values()))

    def _update_signals(self) -> None:
        """WARNING: replace an event only once it is set, or its waiters would never wake."""
        if self._items:
            self._filled.set()
            if self._emptied.is_set() and not self._closed:
                self._emptied = anyio.Event()
        else:
            self._emptied.set()
            if self._filled.is_set() and not self._closed:
                self._filled = anyio.Event()


async def login_with_kubeconfig(**kwargs: Any) -> ConnectionInfo | None:
    """Log in with the current context of ``KUBECONFIG`` or ``~/.kube/config`` (priority 10).

    Runs the context's credential plugin, if any. Honours ``settings.networking.trust_env``.

    Args:
        **kwargs: The usual login-handler kwargs; all are optional and unknown ones are ignored.

    Returns:
        The credentials, or ``None`` if no kubeconfig file exists.

    Raises:
        ConfigError: A kubeconfig file exists but is unusable, or the plugin fails.
    """
    config = await run_in_thread(_existing_kubeconfig)
    if config is None:
        return None
    info = await config.connection_info()
    source = kubeconfig_source(config.sources, config.context)
    trust_env = _trust_env(kwargs)
    return dataclasses.replace(
        info, priority=KUBECONFIG_PRIORITY, trust_env=trust_env, source=source
    )


async def login_with_service_account(**kwargs: Any) -> ConnectionInfo | None:
    """Log in as the pod's service account (priority 20), reading the current projected token.

    Args:
        **kwargs: The usual login-handler kwargs; all are optional and unknown ones are ignored.

    Returns:
        The credentials, or ``None`` when not running in a cluster.
    """
    account = await run_in_thread(functools.partial(load_incluster, SERVICEACCOUNT_ROOT))
    if account is None:
        return None
    info = await account.connection_info()
    trust_env = _trust_env(kwargs)
    source = f"the service account in {SERVICEACCOUNT_ROOT}"
    priority = SERVICE_ACCOUNT_PRIORITY
    return dataclasses.replace(info, priority=priority, trust_env=trust_env, source=source)


def kubeconfig_source(paths: Sequence[str], context: str) -> str:
    """How messages name a kubeconfig's credentials: its files and the context used."""
    files = ", ".join(paths)
    return f"the kubeconfig {files}, context {context!r}" if files else f"context {context!r}"


def _existing_kubeconfig() -> KubeConfig | None:
    candidates, _ = kubeconfig_paths(os.environ)
    if not any(path.is_file() for path in candidates):
        return None
    return load_kubeconfig(serviceaccount_root=SERVICEACCOUNT_ROOT)


def _trust_env(kwargs: Mapping[str, Any]) -> bool:
    networking = getattr(kwargs.get("settings"), "networking", None)
    return bool(getattr(networking, "trust_env", False))
