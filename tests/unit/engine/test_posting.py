"""Queuing Events: what is queued, from where, and when nothing is."""

from __future__ import annotations

import logging
from typing import Any, cast

import anyio
import pytest

import anyop
from anyop.engine.operator.event_poster import EventPoster, shortcut_posts
from anyop.kube.client import KubeClient
from anyop.logs import object_logger
from anyop.settings import OperatorSettings

pytestmark = pytest.mark.anyio

BODY = {
    "apiVersion": "kopf.dev/v1",
    "kind": "KopfExample",
    "metadata": {"name": "kex", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
    "spec": {"big": "x" * 1000},
}


def queued(poster: EventPoster) -> list[Any]:
    items = []
    while True:
        try:
            items.append(poster._receive.receive_nowait())
        except anyio.WouldBlock:
            poster.close()
            return items


def poster_for(**posting: Any) -> EventPoster:
    settings = OperatorSettings.model_validate({"posting": posting})
    return EventPoster(cast(KubeClient, None), settings)


async def test_the_helpers_queue_typed_events_with_a_snapshot_of_the_object() -> None:
    poster = poster_for()
    with poster.installed():
        anyop.info(BODY, reason="Made", message="hi")
        anyop.warn([BODY, BODY], reason="Odd")
        anyop.event(BODY, type="Normal", reason="Plain")
        try:
            raise KeyError("k")
        except KeyError:
            anyop.exception(BODY, message="Lost:")
    items = queued(poster)
    assert [(i.type, i.reason, i.message) for i in items] == [
        ("Normal", "Made", "hi"),
        ("Warning", "Odd", ""),
        ("Warning", "Odd", ""),
        ("Normal", "Plain", ""),
        ("Warning", "KeyError", "Lost: 'k'"),
    ]
    assert items[0].obj == {k: v for k, v in BODY.items() if k != "spec"}


async def test_sync_code_in_threads_queues_through_the_loop() -> None:
    poster = poster_for()
    with poster.installed():
        await anyio.to_thread.run_sync(lambda: anyop.info(BODY, reason="Threaded"))
    assert [item.reason for item in queued(poster)] == ["Threaded"]


async def test_disabled_posting_queues_nothing() -> None:
    poster = poster_for(enabled=False)
    with poster.installed():
        anyop.info(BODY, reason="Nope")
    assert queued(poster) == []


async def test_outside_an_operator_the_event_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    anyop.info(BODY, reason="Orphan")
    assert "No operator is running here: the Event 'Orphan' is not posted." in caplog.messages


async def test_object_log_records_become_events_only_when_enabled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.objects")
    logger = object_logger(BODY)
    enabled, disabled = poster_for(loggers=True), poster_for()
    with enabled.installed():
        logger.info("seen")
        logger.debug("too quiet")
        logger.error("bad")
    with disabled.installed():
        logger.info("unseen")
    assert [(i.type, i.reason, i.message) for i in queued(enabled)] == [
        ("Normal", "Logging", "seen"),
        ("Warning", "Logging", "bad"),
    ]
    assert queued(disabled) == []
    assert not any(
        type(h).__name__ == "_LoggingHandler" for h in logging.getLogger("anyop.objects").handlers
    )


async def test_kopfs_object_loggers_post_as_their_settings_say(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.objects")
    loud = OperatorSettings.model_validate({"posting": {"level": logging.WARNING}})
    silent = OperatorSettings.model_validate({"posting": {"enabled": False}})
    poster = poster_for(loggers=True)
    with poster.installed():
        anyop.ObjectLogger(body=BODY, settings=OperatorSettings()).info("default")
        anyop.ObjectLogger(body=BODY, settings=loud).info("below its level")
        anyop.ObjectLogger(body=BODY, settings=loud).warning("at its level")
        anyop.ObjectLogger(body=BODY, settings=silent).error("never posted")
        anyop.LocalObjectLogger(body=BODY, settings=OperatorSettings()).error("local only")
    assert [i.message for i in queued(poster)] == ["default", "at its level"]
    logged = [r for r in caplog.records if r.name == "anyop.objects"]
    assert len(logged) == 5  # all of them are logged
    assert {r.k8s_ref["name"] for r in logged} == {"kex"}  # type: ignore[attr-defined]


def test_an_object_logger_takes_a_reference_or_a_body() -> None:
    with pytest.raises(TypeError, match="either"):
        anyop.ObjectLogger()
    with pytest.raises(TypeError, match="either"):
        anyop.ObjectLogger({"name": "x"}, body=BODY)


@pytest.mark.parametrize(
    ("level", "reasons"),
    [
        (logging.DEBUG, ["Info", "Warn", "Exc", "Event"]),
        (logging.INFO, ["Info", "Warn", "Exc", "Event"]),
        (logging.WARNING, ["Warn", "Exc", "Event"]),
        (logging.ERROR, ["Exc", "Event"]),
        (logging.CRITICAL, ["Event"]),
    ],
)
async def test_the_shortcuts_post_at_or_above_the_posting_level_and_event_always(
    level: int, reasons: list[str]
) -> None:
    # As Kopf's: info() is INFO, warn() WARNING, exception() ERROR; event() has no level.
    poster = poster_for(level=level)
    with poster.installed():
        anyop.info(BODY, reason="Info")
        anyop.warn(BODY, reason="Warn")
        anyop.exception(BODY, reason="Exc", exc=ValueError("v"))
        anyop.event(BODY, type="Normal", reason="Event")
    assert [item.reason for item in queued(poster)] == reasons


def test_the_shortcut_levels_are_compared_with_the_posting_level() -> None:
    assert shortcut_posts(logging.INFO, logging.INFO)
    assert shortcut_posts(logging.ERROR, logging.WARNING)
    assert not shortcut_posts(logging.INFO, logging.WARNING)
