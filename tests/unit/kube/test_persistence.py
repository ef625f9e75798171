"""Start-up reads asked until the API server answers."""

from __future__ import annotations

import logging

import pytest

from anyop.errors import ForbiddenError, ServerError, TooManyRequestsError
from anyop.kube.persistence import until_answered
from anyop.kube.retries import Backoff

pytestmark = pytest.mark.anyio

_QUICK = Backoff(initial=0.001, cap=0.001)


async def test_a_read_failing_for_a_while_is_asked_until_it_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures = [ServerError("down", status=500), TooManyRequestsError("busy", status=429)]

    async def ask() -> str:
        if failures:
            raise failures.pop(0)
        return "answer"

    logger = logging.getLogger("anyop.test")
    with caplog.at_level(logging.WARNING, logger="anyop.test"):
        assert await until_answered(ask, what="Reading", logger=logger, backoff=_QUICK) == "answer"
    assert [record.getMessage().split(";")[0] for record in caplog.records] == [
        "Reading failed",
        "Reading failed",
    ]


async def test_a_refusal_ends_the_wait_at_once() -> None:
    asked = 0

    async def ask() -> str:
        nonlocal asked
        asked += 1
        raise ForbiddenError("no", status=403)

    with pytest.raises(ForbiddenError):
        await until_answered(ask, what="Reading", logger=logging.getLogger("x"), backoff=_QUICK)
    assert asked == 1
