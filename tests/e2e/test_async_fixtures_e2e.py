"""The plugin's async fixtures as a user's test session sees them (run by pytester).

The same small test file runs twice, each time in a pytest of its own with only the plugins named:
under pytest-trio in trio mode (no marker), and under AnyIO's plugin on asyncio and on Trio. Both
sessions use this session's control plane (a ``conftest.py`` of theirs returns it as
``anyop_controlplane``) and its KopfExample CRD, so each run takes seconds.
"""

from __future__ import annotations

import os

import pytest

from anyop.testing.assets import cache_dir
from anyop.testing.controlplane import LocalControlPlane

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.usefixtures("kopfexample_crd")

CACHE = cache_dir()  # read now: pytester points HOME to a temporary folder

CONFTEST = """
import os
from pathlib import Path

import pytest

from anyop.testing import LocalControlPlane


@pytest.fixture(scope="session")
def anyop_controlplane() -> LocalControlPlane:
    # the outer session's control plane, already running: not started (nor stopped) here
    workdir, port = Path(os.environ["OUTER_WORKDIR"]), int(os.environ["OUTER_PORT"])
    return LocalControlPlane(workdir=workdir, port=port)
"""

TESTS = """
import anyio
import anyio.lowlevel
import pytest

import anyop
from anyop.testing import RunningOperator

KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
greeting = anyop.OperatorRegistry()
failing_startup = anyop.OperatorRegistry()
failing_cleanup = anyop.OperatorRegistry()
loops = []


@anyop.on.create("kopf.dev", "v1", "kopfexamples", registry=greeting)
async def greet(spec, logger, **_):
    loops.append(anyio.lowlevel.current_token())
    logger.info(f"Greeting {spec['who']}.")
    return f"Hello, {spec['who']}!"


@anyop.on.delete("kopf.dev", "v1", "kopfexamples", registry=greeting)
def bye(logger, **_):
    logger.info("Bye.")


@anyop.on.startup(registry=failing_startup)
def refuse_to_start(**_):
    raise anyop.PermanentError("The startup fails on purpose.")


@anyop.on.cleanup(registry=failing_cleanup)
def refuse_to_clean_up(**_):
    raise anyop.PermanentError("The cleanup fails on purpose.")


@pytest.fixture
def anyop_registry():
    return greeting


async def test_the_handlers_run_in_the_tests_event_loop(
    anyop_operator: RunningOperator, anyop_api, anyop_async_namespace
):
    assert anyop_operator.api is anyop_api
    assert anyop_operator.namespace == anyop_async_namespace
    loops.clear()  # of the other backend's run
    await anyop_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Alice"}})
    body = await anyop_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    await anyop_operator.delete(KEX, "kex")
    await anyop_operator.wait_for_deletion(KEX, "kex")
    assert body["status"]["greet"] == "Hello, Alice!"
    assert loops == [anyio.lowlevel.current_token()]
    ns = anyop_operator.namespace
    assert f"[{ns}/kex] Greeting Alice." in anyop_operator.messages
    assert f"[{ns}/kex] Handler 'bye' succeeded." in anyop_operator.messages
    assert all(record.name.startswith("anyop") for record in anyop_operator.records)


async def test_a_wait_that_times_out_shows_the_object_as_last_seen(anyop_operator):
    await anyop_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Bob"}})
    with pytest.raises(AssertionError, match="did not satisfy the condition <lambda>") as e:
        await anyop_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["no"], timeout=1)
    assert '"who": "Bob"' in str(e.value)
    with pytest.raises(AssertionError, match="No message has 'never said' yet"):
        await anyop_operator.wait_for_log("never said", timeout=0.2)


@pytest.mark.parametrize("anyop_registry", [failing_startup])
async def test_an_operator_that_fails_to_start_fails_the_test(anyop_operator):
    raise AssertionError("The test runs although the operator did not start.")


@pytest.mark.parametrize("anyop_registry", [failing_cleanup])
async def test_an_operator_that_fails_at_its_end_fails_the_test_at_teardown(anyop_operator):
    assert not any("refuse_to_clean_up" in line for line in anyop_operator.messages)  # yet
"""

ANYIO_BACKENDS = """
pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""

ACTIVITY_ERRORS = (
    "*ActivityError: The startup activity failed: refuse_to_start.",
    "*ActivityError: The cleanup activity failed: refuse_to_clean_up.",
)

INI = "[pytest]\naddopts = --strict-markers -p no:cacheprovider\nfilterwarnings = error\n"
TRIO_MODE = "trio_mode = true\n"


@pytest.fixture
def inner(
    pytester: pytest.Pytester,
    anyop_controlplane: LocalControlPlane,
    monkeypatch: pytest.MonkeyPatch,
) -> pytest.Pytester:
    """A folder for an inner session that uses this session's control plane."""
    monkeypatch.setenv("ANYOP_CACHE_DIR", os.environ.get("ANYOP_CACHE_DIR", str(CACHE)))
    monkeypatch.setenv("OUTER_WORKDIR", str(anyop_controlplane.workdir))
    monkeypatch.setenv("OUTER_PORT", str(anyop_controlplane.port))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # only the plugins named below
    pytester.makeconftest(CONFTEST)
    return pytester


def test_under_pytest_trio_in_trio_mode_the_operator_runs_in_the_tests_trio_run(
    inner: pytest.Pytester,
) -> None:
    inner.makeini(INI + TRIO_MODE)
    inner.makepyfile(test_operator=TESTS)
    result = inner.runpytest_subprocess("-p", "trio", "-p", "anyop", "-v", timeout=120)
    result.stdout.fnmatch_lines(
        [
            "*::test_the_handlers_run_in_the_tests_event_loop PASSED*",
            "*::test_a_wait_that_times_out_shows_the_object_as_last_seen PASSED*",
            "*::test_an_operator_that_fails_to_start_fails_the_test*FAILED*",
            "*::test_an_operator_that_fails_at_its_end_fails_the_test_at_teardown*FAILED*",
        ],
    )
    for error in ACTIVITY_ERRORS:
        result.stdout.fnmatch_lines([error])
    result.assert_outcomes(passed=2, failed=2)


def test_under_anyios_plugin_the_same_fixtures_work_on_asyncio_and_on_trio(
    inner: pytest.Pytester,
) -> None:
    inner.makeini(INI)
    inner.makepyfile(test_operator=TESTS + ANYIO_BACKENDS)
    result = inner.runpytest_subprocess("-p", "anyio", "-p", "anyop", "-v", timeout=120)
    for backend in ("asyncio", "trio"):
        result.stdout.fnmatch_lines(
            [
                f"*::test_the_handlers_run_in_the_tests_event_loop[[]{backend}[]] PASSED*",
                f"*::test_a_wait_that_times_out_*[[]{backend}[]] PASSED*",
                f"*::test_an_operator_that_fails_to_start_fails_the_test[[]*{backend}*[]] ERROR*",
                f"*ERROR at teardown of test_an_operator_that_fails_at_its_end*{backend}*",
            ],
        )
    for error in ACTIVITY_ERRORS:
        result.stdout.fnmatch_lines([error])
    result.assert_outcomes(passed=6, errors=4)
