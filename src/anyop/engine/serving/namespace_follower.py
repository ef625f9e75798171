"""Namespace patterns (globs, exclusions, regexps) and the discovery of matching namespaces.

A pattern item is a comma-separated list of fnmatch globs. The first glob is decisive: a name
that does not match it does not match the item (a leading ``!`` glob implies a ``*`` before it).
Of the rest, the rightmost matching glob wins: ``!`` excludes, anything else includes. A name
matches the patterns when it matches any item. ``re.Pattern`` items must match fully.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import anyio
import anyio.abc

from anyop.kube.client import KubeClient
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent, may_list
from anyop.settings import OperatorSettings

__all__ = ["NamespacePatterns", "NamespaceServer", "serve_namespaces"]

logger = logging.getLogger("anyop.engine")

NAMESPACES = Resource("", "v1", "namespaces")
_GLOB_CHARS = frozenset("*?[]!,")


@dataclass(frozen=True, slots=True)
class _Glob:
    """One glob of a comma-separated item: include or exclude names matching ``pattern``."""

    pattern: str
    negated: bool

    def match(self, name: str) -> bool:
        """Whether the glob (ignoring its sign) matches the name."""
        return fnmatch.fnmatchcase(name, self.pattern)


def _parse_item(item: str) -> tuple[_Glob, ...]:
    """The globs of one comma-separated item; a leading exclusion gets an implied ``*``."""
    globs = [
        _Glob(text.removeprefix("!"), text.startswith("!"))
        for text in (part.strip() for part in item.split(","))
        if text
    ]
    if globs and globs[0].negated:
        globs.insert(0, _Glob("*", negated=False))
    return tuple(globs)


def _match_item(globs: tuple[_Glob, ...], name: str) -> bool:
    """The first glob is decisive; then the rightmost matching glob wins."""
    if not globs or not globs[0].match(name):
        return False
    matched = True
    for glob in globs[1:]:
        if glob.match(name):
            matched = not glob.negated
    return matched


class NamespacePatterns:
    """The namespaces to serve, as given by the ``namespaces`` argument.

    Args:
        items: Exact names, comma-separated glob lists, or compiled regular expressions.
    """

    def __init__(self, items: Iterable[str | re.Pattern[str]]) -> None:
        self._items = list(items)
        self._globs = [_parse_item(item) for item in self._items if isinstance(item, str)]
        self._regexps = [item for item in self._items if isinstance(item, re.Pattern)]

    def __repr__(self) -> str:
        return f"NamespacePatterns({self._items!r})"

    def match(self, name: str) -> bool:
        """Whether the namespace ``name`` is served."""
        return any(_match_item(globs, name) for globs in self._globs) or any(
            regexp.fullmatch(name) for regexp in self._regexps
        )

    @property
    def plain_names(self) -> list[str]:
        """The names that the patterns include literally (no glob characters, not excluded)."""
        names = [
            globs[0].pattern
            for globs in self._globs
            if len(globs) == 1 and not globs[0].negated and not _GLOB_CHARS & set(globs[0].pattern)
        ]
        return sorted(set(names))

    @property
    def exact_names(self) -> list[str] | None:
        """The plain names if no item is a glob or a regexp, else ``None``."""
        names: list[str] = []
        for item in self._items:
            if not isinstance(item, str) or _GLOB_CHARS & set(item):
                return None
            names.append(item)
        return names


class NamespaceServer(Protocol):
    """Serves one namespace: reports ``started`` after its initial listings; runs until stop."""

    def __call__(
        self, namespace: str, *, task_status: anyio.abc.TaskStatus[None]
    ) -> Awaitable[None]: ...


async def serve_namespaces(
    client: KubeClient,
    patterns: NamespacePatterns,
    serve_one: NamespaceServer,
    *,
    stopping: anyio.Event,
    settings: OperatorSettings | None = None,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve every matching namespace while it exists, until ``stopping`` is set.

    Args:
        client: The API client to list and watch ``v1/namespaces`` with.
        patterns: Which namespaces to serve.
        serve_one: Run in a cancel scope of its own per namespace; cancelled on deletion.
        stopping: Once set: stop watching namespaces; wait for ``serve_one`` tasks to return.
        settings: The watch settings; the client's if ``None``.
        task_status: Reported ``started`` after the initial listing of namespaces and the
            ``started`` of every namespace found in it.
    """
    scopes: dict[str, anyio.CancelScope] = {}
    async with anyio.create_task_group() as served:

        async def run_one(name: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
            with anyio.CancelScope() as scope:
                scopes[name] = scope
                try:
                    await serve_one(name, task_status=task_status)
                finally:
                    if scopes.get(name) is scope:
                        del scopes[name]

        if not await may_list(client, NAMESPACES):
            names = patterns.plain_names
            logger.warning(
                "Namespaces cannot be listed (forbidden): namespaces created later are not "
                f"discovered; serving only the exact names among the patterns: {names}."
            )
            for name in names:
                await served.start(run_one, name)
            task_status.started()
            await stopping.wait()
            return
        handle = _handler(patterns, scopes, lambda name: served.start(run_one, name))
        async with anyio.create_task_group() as watching:
            watcher = Watcher(client, NAMESPACES, settings=settings)
            await watching.start(watcher.run, handle)
            task_status.started()
            await stopping.wait()
            watching.cancel_scope.cancel()


def _handler(
    patterns: NamespacePatterns,
    scopes: dict[str, anyio.CancelScope],
    start: Callable[[str], Awaitable[None]],
) -> Callable[[WatchEvent], Awaitable[None]]:
    """Start serving matching namespaces as they appear; cancel them when they vanish."""

    async def handle(event: WatchEvent) -> None:
        name = str(event.object.get("metadata", {}).get("name", ""))
        if not name or not patterns.match(name):
            return
        if event.type == "DELETED":
            if (scope := scopes.pop(name, None)) is not None:
                logger.info("Namespace %r is deleted; stopping serving it.", name)
                scope.cancel()
        elif name not in scopes:
            logger.info("Namespace %r is found; serving it.", name)
            await start(name)

    return handle
