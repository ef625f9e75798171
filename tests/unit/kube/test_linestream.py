"""LineStream's splitting of a stream's chunks into lines (no server: the chunks are given)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from anyop.kube.linestream import LineStream
from anyop.kube.sessions import Request

pytestmark = pytest.mark.anyio


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def reading(*parts: bytes) -> LineStream:
    stream = LineStream(
        sessions=Any,  # type: ignore[arg-type]  # never opened: the chunks are set directly
        request=Request("GET", "/"),
        timeout=httpx.Timeout(1),
        open_timeout=1,
    )
    stream._chunks = chunks(*parts).__aiter__()
    return stream


async def test_lines_come_in_order_whether_read_or_already_buffered() -> None:
    stream = reading(b'{"a":1}\n\n{"b":2}\n{"c":3}\n{"d"', b':4}\n{"e":5}', b"\n")
    assert stream.buffered_line() is None  # nothing read yet
    assert await stream.next_line() == b'{"a":1}'
    assert stream.buffered_line() == b'{"b":2}'  # came in the same chunk; blank lines skipped
    assert stream.buffered_line() == b'{"c":3}'
    assert stream.buffered_line() is None  # "d" is not complete yet
    assert await stream.next_line() == b'{"d":4}'  # joined across chunks
    assert stream.buffered_line() is None
    assert await stream.next_line() == b'{"e":5}'
    assert await stream.next_line() is None  # the end of the stream


async def test_an_incomplete_last_line_is_dropped() -> None:
    stream = reading(b'{"a":1}\n{"b"')
    assert await stream.next_line() == b'{"a":1}'
    assert await stream.next_line() is None
    assert stream.buffered_line() is None
