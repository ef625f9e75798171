"""anyop: Kubernetes operators in Python on AnyIO structured concurrency, with Kopf's API.

``import anyop as kopf`` gives Kopf's names with Kopf's meanings; docs/migration.md says what
differs.
"""

import importlib
import sys
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if "httpx" not in sys.modules:
    # httpx imports its command-line client (rich, pygments, click; see docs/benchmarks.md) when
    # those happen to be installed; an operator never uses it. ``httpx.main`` then explains
    # that the client cannot run here; everything else in httpx is unchanged.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

from anyop import on
from anyop._version import __version__
from anyop.engine import loop_clock as _loop_clock  # noqa: F401 (keeps anyop.clock by the loop)
from anyop.engine.cycle.subhandlers import execute
from anyop.engine.daemons.stop_flags import (
    AsyncDaemonStopped,
    AsyncDaemonStopperChecker,
    DaemonStopped,
    SyncDaemonStopped,
    SyncDaemonStopperChecker,
)
from anyop.engine.operator.asyncio_tasks import run_tasks, spawn_tasks
from anyop.engine.operator.event_poster import event, exception, info, warn
from anyop.engine.operator.launch import operator, run
from anyop.engine.operator.serve import serve
from anyop.errors import (
    AdmissionError,
    HandlerRetriesError,
    HandlerTimeoutError,
    LoginError,
    PermanentError,
    TemporaryError,
)
from anyop.handlers import lifecycles
from anyop.handlers.bodies import (
    Annotations,
    Body,
    BodyEssence,
    Labels,
    Memo,
    Meta,
    ObjectReference,
    OwnerReference,
    RawBody,
    RawEvent,
    RawEventType,
    Spec,
    Status,
)
from anyop.handlers.causes import Reason
from anyop.handlers.diffs import Diff, DiffItem, DiffOperation, FieldPath, FieldSpec
from anyop.handlers.filters import ABSENT, PRESENT, all_, any_, none_, not_
from anyop.handlers.indexes import Index, Store
from anyop.handlers.lifecycles import get_default_lifecycle, set_default_lifecycle
from anyop.handlers.outcomes import ErrorsMode, Requeue
from anyop.handlers.records import HandlerId
from anyop.handlers.registry import OperatorRegistry, get_default_registry, set_default_registry
from anyop.handlers.selectors import EVERYTHING
from anyop.handlers.stop_reasons import DaemonStoppingReason
from anyop.hierarchies import (
    adjust_namespace,
    adopt,
    append_owner_reference,
    build_object_reference,
    build_owner_reference,
    harmonize_naming,
    label,
    remove_owner_reference,
)
from anyop.kube.auth import login_with_kubeconfig, login_with_service_account
from anyop.kube.connection import ConnectionInfo
from anyop.kube.patches import Patch, PatchFn
from anyop.kube.piggybacking import (
    AiohttpSession,
    login_via_async_client,
    login_via_client,
    login_via_pykube,
)
from anyop.kube.resources import Resource
from anyop.logs import LocalObjectLogger, LogFormat, Logger, ObjectLogger, configure
from anyop.models.resources import CustomResource, Model
from anyop.on import daemon, index, reconcile, register, subhandler, timer
from anyop.settings import OperatorSettings
from anyop.storage.defaults import anyop_storages, kopf_compatible_storages, status_storages
from anyop.storage.diffbase import (
    AnnotationsDiffBaseStorage,
    DiffBaseStorage,
    MultiDiffBaseStorage,
    StatusDiffBaseStorage,
)
from anyop.storage.progress import (
    AnnotationsProgressStorage,
    MultiProgressStorage,
    ProgressStorage,
    SmartProgressStorage,
    StatusProgressStorage,
)
from anyop.storage.progress_records import ProgressRecord
from anyop.webhooks.managed import WebhookClientConfig, WebhookClientConfigService
from anyop.webhooks.review import (
    Headers,
    Operation,
    SSLPeer,
    UserInfo,
    WebhookFn,
    WebhookServerProtocol,
)

if _TYPE_CHECKING:
    from anyop.webhooks.auto import WebhookAutoServer, WebhookAutoTunnel, WebhookNgrokTunnel
    from anyop.webhooks.server import (
        WebhookDockerDesktopServer,
        WebhookK3dServer,
        WebhookMinikubeServer,
        WebhookServer,
    )

_LAZY = {
    **{
        name: "anyop.webhooks.server"
        for name in (
            "WebhookDockerDesktopServer",
            "WebhookK3dServer",
            "WebhookMinikubeServer",
            "WebhookServer",
        )
    },
    **{
        name: "anyop.webhooks.auto"
        for name in ("WebhookAutoServer", "WebhookAutoTunnel", "WebhookNgrokTunnel")
    },
}
"""Imported on first use: the webhook servers need cryptography, which most operators never do."""


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'anyop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ABSENT",
    "AdmissionError",
    "AiohttpSession",
    "Annotations",
    "AnnotationsDiffBaseStorage",
    "AnnotationsProgressStorage",
    "AsyncDaemonStopped",
    "AsyncDaemonStopperChecker",
    "Body",
    "BodyEssence",
    "ConnectionInfo",
    "CustomResource",
    "DaemonStopped",
    "DaemonStoppingReason",
    "Diff",
    "DiffBaseStorage",
    "DiffItem",
    "DiffOperation",
    "EVERYTHING",
    "ErrorsMode",
    "FieldPath",
    "FieldSpec",
    "HandlerId",
    "HandlerRetriesError",
    "HandlerTimeoutError",
    "Headers",
    "Index",
    "Labels",
    "LocalObjectLogger",
    "LogFormat",
    "Logger",
    "LoginError",
    "Memo",
    "Meta",
    "Model",
    "MultiDiffBaseStorage",
    "MultiProgressStorage",
    "ObjectLogger",
    "ObjectReference",
    "Operation",
    "OperatorRegistry",
    "OperatorSettings",
    "OwnerReference",
    "PRESENT",
    "Patch",
    "PatchFn",
    "PermanentError",
    "ProgressRecord",
    "ProgressStorage",
    "RawBody",
    "RawEvent",
    "RawEventType",
    "Reason",
    "Requeue",
    "Resource",
    "SSLPeer",
    "SmartProgressStorage",
    "Spec",
    "Status",
    "StatusDiffBaseStorage",
    "StatusProgressStorage",
    "Store",
    "SyncDaemonStopped",
    "SyncDaemonStopperChecker",
    "TemporaryError",
    "UserInfo",
    "WebhookAutoServer",
    "WebhookAutoTunnel",
    "WebhookClientConfig",
    "WebhookClientConfigService",
    "WebhookDockerDesktopServer",
    "WebhookFn",
    "WebhookK3dServer",
    "WebhookMinikubeServer",
    "WebhookNgrokTunnel",
    "WebhookServer",
    "WebhookServerProtocol",
    "__version__",
    "adjust_namespace",
    "adopt",
    "all_",
    "any_",
    "anyop_storages",
    "append_owner_reference",
    "build_object_reference",
    "build_owner_reference",
    "configure",
    "daemon",
    "event",
    "exception",
    "execute",
    "get_default_lifecycle",
    "get_default_registry",
    "harmonize_naming",
    "index",
    "info",
    "kopf_compatible_storages",
    "label",
    "lifecycles",
    "login_via_async_client",
    "login_via_client",
    "login_via_pykube",
    "login_with_kubeconfig",
    "login_with_service_account",
    "none_",
    "not_",
    "on",
    "operator",
    "reconcile",
    "register",
    "remove_owner_reference",
    "run",
    "run_tasks",
    "serve",
    "set_default_lifecycle",
    "set_default_registry",
    "spawn_tasks",
    "status_storages",
    "subhandler",
    "timer",
    "warn",
]
