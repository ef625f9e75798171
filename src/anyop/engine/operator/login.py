"""Logging in: the login activity fills the vault, and runs again whenever the vault is emptied.

The login handlers (``@anyop.on.login``), or else the built-in logins from the kubeconfig and the
pod's service account, each return a :class:`~anyop.ConnectionInfo` or ``None``. Every credential
they return goes into the :class:`~anyop.kube.auth.Vault`; API requests take the best one. When
the API server answers 401, the request's credential is invalidated; when none is left (or all
have expired), requests wait and :func:`keep_logged_in` runs the handlers again. If a re-login
yields nothing new, the vault is closed: waiting and later requests fail with
:class:`~anyop.LoginError`, and so does the operator.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from anyop.engine.operator.activities import ActivityError, run_activity
from anyop.errors import LoginError
from anyop.handlers.causes import Activity
from anyop.handlers.indexes import OperatorIndexes
from anyop.handlers.outcomes import ErrorsMode
from anyop.handlers.records import ActivityHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault, login_with_kubeconfig, login_with_service_account
from anyop.kube.connection import ConnectionInfo
from anyop.settings import OperatorSettings

__all__ = [
    "BUILTIN_LOGINS",
    "authenticate",
    "check_credentials",
    "credentials_in_use",
    "keep_logged_in",
    "login",
]

logger = logging.getLogger("anyop.activities.authentication")

BUILTIN_LOGINS: tuple[ActivityHandler, ...] = tuple(
    ActivityHandler(
        id=fn.__name__,
        fn=fn,
        activity=Activity.AUTHENTICATION,
        fallback=True,
        errors=ErrorsMode.PERMANENT,  # an unusable kubeconfig does not heal by waiting
    )
    for fn in (login_with_kubeconfig, login_with_service_account)
)
"""Used when no ``@anyop.on.login`` handler is registered."""


def check_credentials(handler: ActivityHandler, result: Any) -> None:
    """Reject a login handler's result that is neither credentials nor ``None``.

    Raises:
        LoginError: Naming the handler and what it returned.
    """
    if result is not None and not isinstance(result, ConnectionInfo):
        raise LoginError(
            f"The login handler {handler.id!r} returned a {type(result).__name__}; "
            "it must return an anyop.ConnectionInfo or None."
        )


def login_handlers(registry: OperatorRegistry) -> Sequence[ActivityHandler]:
    """The registry's login handlers, or the built-in ones if it has none."""
    return registry.activities.select(Activity.AUTHENTICATION) or BUILTIN_LOGINS


async def authenticate(
    vault: Vault,
    registry: OperatorRegistry,
    *,
    settings: OperatorSettings,
    memo: Any,
    indexes: OperatorIndexes | None = None,
) -> int:
    """Run the login handlers once and replace the vault's credentials with what they return.

    Returns:
        How many new credentials the vault accepted (rejected or expired ones do not count).

    Raises:
        LoginError: A handler failed for good, or none returned usable credentials.
    """
    handlers = login_handlers(registry)
    try:
        results = await run_activity(
            registry,
            Activity.AUTHENTICATION,
            settings=settings,
            memo=memo,
            handlers=handlers,
            check=check_credentials,
            indexes=indexes,
        )
    except ActivityError as error:
        cause = next(iter(error.failures.values()), None)
        raise LoginError(f"Login failed: {cause or error}") from cause
    found = {key: info for key, info in results.items() if isinstance(info, ConnectionInfo)}
    accepted = await vault.replace(found)
    if not accepted:
        raise LoginError(_nothing_usable(bool(found), builtin=handlers is BUILTIN_LOGINS))
    logger.info(credentials_in_use(found))
    return accepted


def credentials_in_use(found: Mapping[str, ConnectionInfo]) -> str:
    """Which credentials requests use (the highest priority), and where they come from."""
    key, info = max(found.items(), key=lambda item: item[1].priority)
    source = info.source or f"the login handler {key!r}"
    others = len(found) - 1
    spare = f" ({others} more in reserve)" if others else ""
    return f"Using the credentials of {source} for {info.server}{spare}."


async def login(registry: OperatorRegistry | None = None) -> Vault:
    """A vault filled by the registry's login handlers, or the built-in ones (for CLI commands).

    Raises:
        LoginError: No login handler returned usable credentials.
    """
    vault = Vault()
    await authenticate(
        vault, registry or OperatorRegistry(), settings=OperatorSettings(), memo=None
    )
    return vault


def _nothing_usable(found: bool, *, builtin: bool) -> str:
    if found:
        return "Login failed: the login handlers returned only rejected or expired credentials."
    if builtin:
        return "Login failed: neither a kubeconfig nor a pod's service account was found."
    return "Login failed: every login handler returned None."


async def keep_logged_in(
    vault: Vault,
    registry: OperatorRegistry,
    *,
    settings: OperatorSettings,
    memo: Any,
    indexes: OperatorIndexes | None = None,
) -> None:
    """Log in again every time the vault runs empty (after :func:`authenticate` filled it).

    Guarantees:
        A failed re-login closes the vault with the error as its cause instead of raising here,
        so the requests waiting for credentials fail with :class:`LoginError` where they wait.
    """
    while True:
        try:
            await vault.wait_for_emptiness()
        except LoginError:
            return  # closed by someone else
        logger.info("Re-authentication has been initiated.")
        try:
            await authenticate(vault, registry, settings=settings, memo=memo, indexes=indexes)
        except LoginError as error:
            logger.error("%s Requests will fail.", error)
            vault.close(error)
            return
