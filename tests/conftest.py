"""Shared fixtures: every async test marked ``anyio`` runs on both backends; no test may leave
process-wide state behind (``tests/leaks.py``)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import hypothesis
import pytest
from tests.leaks import leaks, snapshot

# cel-python's parser (lark) puts a handler on its logger when first imported, bound to the
# sys.stderr of that moment: imported here, that is the real one, not a test's capture.
with contextlib.redirect_stderr(sys.__stderr__), contextlib.suppress(ImportError):
    import celpy  # noqa: F401

hypothesis.settings.register_profile(
    "anyop",
    deadline=None,  # a shared, loaded machine: a slow example is not a failing one
    print_blob=True,  # a failure prints what reruns it exactly
    suppress_health_check=[hypothesis.HealthCheck.too_slow],
)
hypothesis.settings.load_profile("anyop")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each ``@pytest.mark.anyio`` test once on asyncio and once on Trio."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _leaves_nothing_behind() -> Iterator[None]:
    """Fail the test (at its teardown) that leaves a logging handler or level, an environment
    variable, a patched clock, an event loop policy or a thread behind; the first of the
    function-scoped fixtures, so it checks after all the test's own fixtures are torn down."""
    before = snapshot()
    yield
    found = leaks(before)
    if found:
        pytest.fail("the test left global state behind:\n  " + "\n  ".join(found), pytrace=False)
