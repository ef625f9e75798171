"""The client-side token bucket: bookkeeping on a fake clock, waiting on Trio's mock clock."""

from __future__ import annotations

import anyio
import pytest
import trio

from anyop.kube.ratelimit import RateLimiter
from anyop.settings import NetworkingSettings


def test_a_burst_goes_at_once_then_requests_are_spaced_by_the_rate() -> None:
    limiter = RateLimiter(qps=2, burst=3)
    waits = [limiter.reserve(now=100.0) for _ in range(5)]
    assert waits == [0, 0, 0, 0.5, 1.0]


def test_tokens_refill_with_time_up_to_the_burst() -> None:
    limiter = RateLimiter(qps=10, burst=2)
    assert [limiter.reserve(0.0), limiter.reserve(0.0)] == [0, 0]
    assert limiter.reserve(0.1) == 0  # one token came back
    assert limiter.reserve(60.0) == 0  # the bucket is full again, but holds only two
    assert limiter.reserve(60.0) == 0
    assert limiter.reserve(60.0) == pytest.approx(0.1)


def test_without_a_rate_nothing_waits() -> None:
    limiter = RateLimiter(qps=None, burst=1)
    assert all(limiter.reserve(0.0) == 0 for _ in range(1000))


def test_a_released_token_can_be_used_again() -> None:
    limiter = RateLimiter(qps=1, burst=1)
    assert limiter.reserve(0.0) == 0
    assert limiter.reserve(0.0) == 1
    limiter.release()
    assert limiter.reserve(0.0) == 1  # the debt of the released reservation is forgiven


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_nonsense_limits_are_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match=r"qps|burst"):
        RateLimiter(qps=qps, burst=burst)


def test_the_limiter_comes_from_the_networking_settings() -> None:
    limiter = RateLimiter.from_settings(NetworkingSettings(qps=5, burst=7))
    assert (limiter.qps, limiter.burst) == (5, 7)


@pytest.mark.trio
async def test_acquisitions_are_spread_over_time_in_arrival_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = RateLimiter(qps=2, burst=2)
    finished: list[tuple[int, float]] = []
    start = trio.current_time()

    async def request(number: int) -> None:
        await limiter.acquire()
        finished.append((number, trio.current_time() - start))

    async with trio.open_nursery() as nursery:
        for number in range(6):
            nursery.start_soon(request, number)
            await trio.lowlevel.checkpoint()  # start them in order
    assert [number for number, _ in finished] == list(range(6))
    assert [at for _, at in finished] == pytest.approx([0, 0, 0.5, 1.0, 1.5, 2.0])


@pytest.mark.trio
async def test_a_cancelled_waiter_gives_its_token_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = RateLimiter(qps=1, burst=1)
    await limiter.acquire()
    with trio.move_on_after(0.1):
        await limiter.acquire()  # would wait 1 s
    start = trio.current_time()
    await limiter.acquire()
    assert trio.current_time() - start == pytest.approx(0.9)


@pytest.mark.anyio
async def test_an_unlimited_limiter_never_sleeps() -> None:
    limiter = RateLimiter(qps=None)
    with anyio.fail_after(1):
        for _ in range(10_000):
            await limiter.acquire()
