"""The plugin's ``fake_cluster`` and ``fake_operator`` fixtures in a user's test session (run by
pytester): under pytest-trio in trio mode (with its ``autojump_clock``), and under AnyIO's
plugin on asyncio and on Trio. No control plane is needed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CRD = Path(__file__).parents[4] / "examples" / "crd.yaml"

TESTS = """
import anyio
import pytest

import anyop
from anyop.testing import FakeCluster, RunningOperator

KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
registry = anyop.OperatorRegistry()
ticks = []


@anyop.on.create("kopf.dev", "v1", "kopfexamples", registry=registry, id="greet")
async def greet(spec, **_):
    return f"Hello, {spec['who']}!"


@anyop.timer("kopf.dev", "v1", "kopfexamples", registry=registry, id="tick", interval=60)
async def tick(**_):
    ticks.append(anyio.current_time())


@pytest.fixture
def anyop_registry():
    return registry


@pytest.fixture
def fake_cluster(fake_cluster_seed):
    fake = FakeCluster(seed=fake_cluster_seed)
    fake.apply(CRD_PATH)
    return fake


async def test_a_handler_runs_against_the_fake_cluster(fake_operator: RunningOperator):
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    body = await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    assert body["status"]["greet"] == "Hello, Al!"
"""

TIMER_ON_AUTOJUMP = """

async def test_a_timer_fires_ten_times_on_virtual_time(fake_operator, autojump_clock):
    ticks.clear()
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    with anyio.fail_after(3600):
        while len(ticks) < 10:
            await anyio.sleep(60)
    assert len(ticks) >= 10
"""

ANYIO_BACKENDS = """
pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""

INI = "[pytest]\naddopts = --strict-markers -p no:cacheprovider\nfilterwarnings = error\n"


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A folder for an inner session with only the plugins it names."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


def test_under_pytest_trio_the_fake_operator_runs_on_the_autojump_clock(
    inner: pytest.Pytester,
) -> None:
    inner.makeini(INI + "trio_mode = true\n")
    source = f"CRD_PATH = {str(CRD)!r}\n" + TESTS + TIMER_ON_AUTOJUMP
    inner.makepyfile(test_operator=source)
    result = inner.runpytest_subprocess("-p", "trio", "-p", "anyop", "-v", timeout=120)
    result.stdout.fnmatch_lines(
        [
            "*::test_a_handler_runs_against_the_fake_cluster PASSED*",
            "*::test_a_timer_fires_ten_times_on_virtual_time PASSED*",
        ]
    )
    result.assert_outcomes(passed=2)


def test_under_anyios_plugin_the_fake_operator_runs_on_asyncio_and_on_trio(
    inner: pytest.Pytester,
) -> None:
    inner.makeini(INI)
    source = f"CRD_PATH = {str(CRD)!r}\n" + TESTS + ANYIO_BACKENDS
    inner.makepyfile(test_operator=source)
    result = inner.runpytest_subprocess("-p", "anyio", "-p", "anyop", "-v", timeout=120)
    for backend in ("asyncio", "trio"):
        result.stdout.fnmatch_lines(
            [f"*::test_a_handler_runs_against_the_fake_cluster[[]{backend}[]] PASSED*"]
        )
    result.assert_outcomes(passed=2)


SWITCHED = """
import pytest

import anyop
from anyop.testing import RunningOperator

KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
registry = anyop.OperatorRegistry()
pytestmark = pytest.mark.anyio


@anyop.on.create("kopf.dev", "v1", "kopfexamples", registry=registry, id="greet")
async def greet(spec, **_):
    return f"Hello, {spec['who']}!"


@pytest.fixture
def anyio_backend():
    return "trio"


@pytest.fixture
def anyop_registry(anyop_apply):
    anyop_apply(CRD_PATH)
    return registry


async def test_the_same_test_runs_on_either_cluster(anyop_operator: RunningOperator, anyop_cluster):
    assert anyop_cluster == "fake"
    await anyop_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    body = await anyop_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    assert body["status"]["greet"] == "Hello, Al!"
"""


def test_the_anyop_fake_option_runs_anyop_operator_tests_without_a_control_plane(
    inner: pytest.Pytester,
) -> None:
    inner.makeini(INI)
    inner.makepyfile(test_operator=f"CRD_PATH = {str(CRD)!r}\n" + SWITCHED)
    result = inner.runpytest_subprocess(
        "-p", "anyio", "-p", "anyop", "--anyop-fake", "-v", timeout=120
    )
    result.stdout.fnmatch_lines(["*::test_the_same_test_runs_on_either_cluster PASSED*"])
    result.assert_outcomes(passed=1)
