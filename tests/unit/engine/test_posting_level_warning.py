"""A Kopf file that sets ``settings.posting.level`` expects its log lines as Events; anyop posts
them only with ``settings.posting.loggers`` (off by default, as in Kopf 1.45): it says so at
start-up."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import anyop
from anyop.engine.operator.event_poster import unheeded_posting_level
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings
from anyop.testing import FakeCluster, RunningOperator

UNHEEDED = "settings.posting.level is WARNING, but log records are not posted as Events"


def registry_setting(**posting: Any) -> OperatorRegistry:
    """A registry whose startup handler sets the posting settings, as a Kopf file does."""
    registry = OperatorRegistry()

    @anyop.on.startup(registry=registry)
    def configure(settings: anyop.OperatorSettings, **_: Any) -> None:
        for name, value in posting.items():
            setattr(settings.posting, name, value)

    return registry


@pytest.fixture
def fake_cluster(kex_cluster: FakeCluster) -> FakeCluster:
    return kex_cluster


@pytest.mark.anyio
@pytest.mark.parametrize("anyop_registry", [registry_setting(level=logging.WARNING)])
async def test_a_level_set_without_posting_loggers_is_warned_about_at_start_up(
    fake_operator: RunningOperator,
) -> None:
    warned = [r for r in fake_operator.records if UNHEEDED in r.getMessage()]
    assert [r.levelno for r in warned] == [logging.WARNING]
    assert "settings.posting.loggers = True" in warned[0].getMessage()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "anyop_registry",
    [registry_setting(level=logging.WARNING, loggers=True), registry_setting()],
)
async def test_no_warning_when_the_level_is_heeded_or_left_alone(
    fake_operator: RunningOperator,
) -> None:
    assert not [r for r in fake_operator.records if "settings.posting.level" in r.getMessage()]


@pytest.mark.parametrize(
    ("posting", "expected"),
    [
        ({}, None),
        ({"loggers": True}, None),
        ({"level": logging.INFO, "loggers": True}, None),
        ({"level": logging.INFO}, "settings.posting.level is INFO, but log records are not"),
        ({"level": 30, "enabled": False, "loggers": True}, "but posting is off"),
    ],
)
def test_the_warning_names_what_is_off(posting: dict[str, Any], expected: str | None) -> None:
    settings = OperatorSettings()
    for name, value in posting.items():
        setattr(settings.posting, name, value)
    warning = unheeded_posting_level(settings)
    assert warning is None if expected is None else expected in (warning or "")
