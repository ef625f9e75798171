"""Logging: the per-object logger and the plain, full and JSON formats of ``anyop run``.

Object-related records carry the object's reference (``record.k8s_ref``); the plain and full
formats prefix their message with ``[namespace/name]``, the JSON format puts the reference under a
configurable key. Logger names follow Kopf's: ``anyop.objects`` for objects,
``anyop.activities.<name>`` for activities.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "LocalObjectLogger",
    "LogFormat",
    "Logger",
    "ObjectLogger",
    "ObjectPrefixingFormatter",
    "configure",
    "object_logger",
    "object_ref",
    "redacted",
]

FULL_FORMAT = "[%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s"
PLAIN_FORMAT = "%(message)s"
objects_logger = logging.getLogger("anyop.objects")


class LogFormat(enum.StrEnum):
    """The formats of ``--log-format``."""

    PLAIN = "plain"
    FULL = "full"
    JSON = "json"


REDACTED = "<redacted>"
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def redacted(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body as it may be logged: a Secret's values and its last applied copy hidden. Pure.

    Every key of a Secret's ``data`` and ``stringData`` stays visible; its values do not, and
    neither does kubectl's last-applied-configuration annotation (which holds them too). Other
    objects are returned as they are (shallow-copied).
    """
    if body.get("kind") != "Secret" or body.get("apiVersion") != "v1":
        return dict(body)
    shown = dict(body)
    for key in ("data", "stringData"):
        if isinstance(body.get(key), Mapping):
            shown[key] = dict.fromkeys(body[key], REDACTED)
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping) and _LAST_APPLIED in annotations:
            hidden = {**annotations, _LAST_APPLIED: REDACTED}
            shown["metadata"] = {**metadata, "annotations": hidden}
    return shown


def object_ref(body: Mapping[str, Any]) -> dict[str, str]:
    """The identifying part of an object: apiVersion, kind, name, uid, namespace."""
    meta = body.get("metadata") or {}
    ref = {
        "apiVersion": str(body.get("apiVersion", "")),
        "kind": str(body.get("kind", "")),
        "name": str(meta.get("name", "")),
        "uid": str(meta.get("uid", "")),
    }
    if namespace := meta.get("namespace"):
        ref["namespace"] = str(namespace)
    return ref


def _prefix(ref: Mapping[str, str]) -> str:
    namespace, name = ref.get("namespace"), ref.get("name", "")
    return f"[{namespace}/{name}] " if namespace else f"[{name}] "


class ObjectLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger about one object: its records carry the object's reference.

    The reference is fixed when the logger is made; messages are prefixed at formatting time, so
    JSON logs stay flat unless ``--log-prefix`` asks otherwise. While an operator that posts its
    loggers' records runs (``settings.posting.loggers``), its records at or above the operator's
    ``settings.posting.level`` are posted as Kubernetes Events.

    Made as Kopf makes it, ``ObjectLogger(body=body, settings=settings)``, or from a reference
    (:func:`object_ref`). Given ``settings``, their ``posting.enabled`` and ``posting.level``
    narrow which of its records are posted.
    """

    def __init__(
        self,
        ref: Mapping[str, str] | None = None,
        logger: logging.Logger = objects_logger,
        *,
        body: Mapping[str, Any] | None = None,
        settings: Any = None,
    ) -> None:
        if (ref is None) == (body is None):
            raise TypeError("ObjectLogger() takes either a reference or body=, not both.")
        ref = ref if ref is not None else object_ref(body or {})
        extra: dict[str, Any] = {"k8s_ref": dict(ref)}
        posting = getattr(settings, "posting", None)
        if self._local or (posting is not None and not posting.enabled):
            extra["anyop_no_event"] = True
        elif posting is not None:
            extra["anyop_posting_level"] = posting.level
        super().__init__(logger, extra)

    _local = False

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        extra = dict(self.extra or {})
        extra.update(kwargs.get("extra") or {})
        kwargs["extra"] = extra
        return msg, kwargs


class LocalObjectLogger(ObjectLogger):
    """An :class:`ObjectLogger` whose records are never posted as Kubernetes Events (Kopf's
    name): for lines too frequent to post, such as those of ``@on.event`` handlers."""

    _local = True


def object_logger(body: Mapping[str, Any]) -> ObjectLogger:
    """A logger for the object of this body."""
    return ObjectLogger(object_ref(body))


class ObjectPrefixingFormatter(logging.Formatter):
    """Plain and full formats: object records get ``[namespace/name] `` before the message."""

    def __init__(self, fmt: str, *, prefix: bool = True) -> None:
        super().__init__(fmt)
        self.prefix = prefix

    def formatMessage(self, record: logging.LogRecord) -> str:
        ref = getattr(record, "k8s_ref", None)
        if self.prefix and ref:
            record.message = _prefix(ref) + record.message
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON document per line: message, severity, timestamp, the object under ``refkey``."""

    def __init__(self, *, refkey: str = "object", prefix: bool = False) -> None:
        super().__init__()
        self.refkey = refkey
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        ref = getattr(record, "k8s_ref", None)
        if ref and self.prefix:
            message = _prefix(ref) + message
        doc: dict[str, Any] = {
            "message": message,
            "severity": record.levelname.lower(),
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
        }
        if ref:
            doc[self.refkey] = ref
        if record.exc_info:
            doc["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def _level(verbose: bool, debug: bool, quiet: bool) -> int:
    if quiet:
        return logging.WARNING
    return logging.DEBUG if (debug or verbose) else logging.INFO


def configure(
    *,
    debug: bool = False,
    verbose: bool = False,
    quiet: bool = False,
    log_format: LogFormat | str = LogFormat.FULL,
    log_refkey: str = "object",
    log_prefix: bool | None = None,
) -> None:
    """Configure the root logger as ``anyop run`` does (Kopf's ``kopf.configure``).

    Args:
        debug: Log everything, including the HTTP libraries' internals.
        verbose: Log anyop's own debug messages.
        quiet: Log only warnings and errors.
        log_format: ``plain``, ``full`` (the default) or ``json``.
        log_refkey: For JSON logs: the key of the object reference.
        log_prefix: Prefix object messages with ``[namespace/name]``; by default on for plain
            and full, off for JSON.
    """
    fmt = LogFormat(log_format)
    handler = logging.StreamHandler()
    if fmt is LogFormat.JSON:
        handler.setFormatter(JsonFormatter(refkey=log_refkey, prefix=bool(log_prefix)))
    else:
        template = FULL_FORMAT if fmt is LogFormat.FULL else PLAIN_FORMAT
        handler.setFormatter(ObjectPrefixingFormatter(template, prefix=log_prefix is not False))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(_level(verbose, debug, quiet))
    noisy = logging.DEBUG if debug else logging.WARNING
    for name in ("httpx", "httpcore", "hpack", "hypercorn", "asyncio", "trio"):
        logging.getLogger(name).setLevel(noisy)


Logger = logging.Logger | logging.LoggerAdapter[logging.Logger]
"""The type of the ``logger`` kwarg (Kopf's ``kopf.Logger``)."""
