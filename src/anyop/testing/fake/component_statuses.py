"""``componentstatuses`` (core ``v1``, deprecated): the health of the control plane's components,
which kube-apiserver computes when asked instead of storing it.

Pure. The fake answers as the local control plane's kube-apiserver 1.36.3 does: its etcd is
healthy, and neither a scheduler nor a controller-manager answers on the ports it probes (the
fake has no scheduler; its controllers, if any, are its own). Only ``get`` and ``list`` are
served: a watch and any other method are 405.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.routes import Route
from anyop.testing.fake.statuses import StatusError, not_found, status_body

__all__ = ["answer", "handles"]

Body = dict[str, Any]
_RESOURCE = ("", "componentstatuses")


def _unreachable(port: int) -> str:
    url = f"https://127.0.0.1:{port}/healthz"
    return f'Get "{url}": dial tcp 127.0.0.1:{port}: connect: connection refused'


_STATUSES: tuple[tuple[str, str, str], ...] = (
    ("scheduler", "False", _unreachable(10259)),
    ("controller-manager", "False", _unreachable(10257)),
    ("etcd-0", "True", "ok"),
)
"""Each component's name, whether it is healthy, and what its probe said."""


def handles(kind: Kind, route: Route) -> bool:
    """Whether the request's path is of ``componentstatuses``."""
    return not kind.custom and (kind.group, kind.plural) == _RESOURCE


def _status(name: str, healthy: str, message: str) -> Body:
    condition = {"type": "Healthy", "status": healthy, "message": message}
    return {"metadata": {"name": name}, "conditions": [condition]}


def answer(
    route: Route, method: str, *, watch: bool, selector: Callable[[Body], bool] | None = None
) -> tuple[int, Body]:
    """The answer to a request of a path :func:`handles` (its code and body); a list's items
    those its label and field ``selector`` matches.

    Raises:
        StatusError: 404 (no such component, or a namespace's path), 405.
    """
    if route.namespace is not None or route.subresource is not None:
        message = "the server could not find the requested resource"
        raise StatusError(status_body(404, "NotFound", message, details={}))
    if method != "GET":
        message = "the server does not allow this method on the requested resource"
        raise StatusError(status_body(405, "MethodNotAllowed", message, details={}))
    if watch:
        message = 'watch is not supported on resources of kind "componentstatuses"'
        details = {"kind": "componentstatuses"}
        raise StatusError(status_body(405, "MethodNotAllowed", message, details=details))
    if route.name is None:
        items = [_status(*found) for found in _STATUSES]
        items = [item for item in items if selector is None or selector(item)]
        return 200, {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
                     "items": items}  # fmt: skip
    for found in _STATUSES:
        if found[0] == route.name:
            return 200, {"kind": "ComponentStatus", "apiVersion": "v1", **_status(*found)}
    raise not_found("componentstatus", "", route.name)
