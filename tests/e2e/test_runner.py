"""OperatorRunner (Kopf's KopfRunner): the CLI in a thread, with output and exit code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_engine_e2e import create, url, wait_for

import anyop
import anyop.on as on
from anyop.engine.operator.activities import ActivityError
from anyop.errors import AnyopError
from anyop.handlers.outcomes import ErrorsMode
from anyop.handlers.registry import OperatorRegistry
from anyop.testing import KopfRunner, OperatorRunner, run_operator
from anyop.testing.controlplane import LocalControlPlane

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "01-minimal" / "example.py")


@pytest.fixture(autouse=True)
def default_registry() -> Iterator[OperatorRegistry]:
    """A default registry of the test's own: the files that ``anyop run`` loads register their
    handlers there (a failing startup handler of one test must not start in the next)."""
    before = anyop.get_default_registry()
    anyop.set_default_registry(fresh := OperatorRegistry())
    yield fresh
    anyop.set_default_registry(before)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_runner_runs_an_operator_and_captures_its_output(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    anyop_kubeconfig: Path,
    backend: str,
) -> None:
    args = ["run", "-n", anyop_namespace, "--backend", backend, "--log-format", "plain", EXAMPLE]
    with OperatorRunner(args, timeout=60) as runner:
        apply_kex(anyop_controlplane, anyop_namespace, "kex-r")
        wait_for_status(anyop_controlplane, anyop_namespace, "kex-r")
    assert runner.exit_code == 0
    assert runner.exception is None
    assert f"[{anyop_namespace}/kex-r] Handler 'create_fn' succeeded." in runner.output


def test_kopf_runner_is_the_same_class() -> None:
    assert KopfRunner is OperatorRunner


def test_a_failing_operator_is_reraised(tmp_path: Path, anyop_kubeconfig: Path) -> None:
    source = tmp_path / "failing.py"
    source.write_text(
        "import anyop\n"
        "@anyop.on.startup()\n"
        "def boom(**_):\n"
        "    raise anyop.PermanentError('cannot start')\n"
    )
    runner = OperatorRunner(["run", "-A", str(source)], timeout=60)
    with runner:
        pass
    assert runner.exit_code == 1
    assert "The startup activity failed: boom." in runner.output


def test_the_runner_reraises_unexpected_exceptions(anyop_kubeconfig: Path) -> None:
    with pytest.raises(AnyopError), OperatorRunner(["run", "-A", "/nonexistent.py"], timeout=60):
        raise AnyopError("from the block")  # the block's own error wins over the operator's


@pytest.mark.anyio
async def test_run_operator_serves_inside_the_tests_own_loop(
    api: httpx.AsyncClient, anyop_namespace: str, kopfexample_crd: str, anyop_kubeconfig: Path
) -> None:
    registry = OperatorRegistry()
    events: list[str] = []

    @on.startup(registry=registry)
    async def started(**_: object) -> None:
        events.append("startup")

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: object) -> str:
        events.append(name)
        return "done"

    @on.cleanup(registry=registry)
    async def cleaned(**_: object) -> None:
        events.append("cleanup")

    async with run_operator(registry, namespaces=[anyop_namespace]):
        assert events == ["startup"]  # ready: the startup is over, the listing is done
        await create(api, anyop_namespace, "embedded")
        path = url(anyop_namespace, "embedded")
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
        assert body["status"]["create_fn"] == "done"
    assert events == ["startup", "embedded", "cleanup"]


@pytest.mark.anyio
async def test_run_operator_raises_a_failed_startup_from_the_block(
    anyop_namespace: str, anyop_kubeconfig: Path
) -> None:
    registry = OperatorRegistry()

    @on.startup(registry=registry, errors=ErrorsMode.PERMANENT, id="broken")
    async def broken(**_: object) -> None:
        raise RuntimeError("cannot start")

    with pytest.raises(ActivityError, match="The startup activity failed: broken"):
        async with run_operator(registry, namespaces=[anyop_namespace]):
            pytest.fail("the block must not run")


def test_the_runner_takes_kopfs_registry_settings_and_click_arguments(
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    kopfexample_crd: str,
    anyop_kubeconfig: Path,
    tmp_path: Path,
) -> None:
    empty = tmp_path / "nothing_here.py"
    empty.write_text("# the handlers come with the registry\n")
    registry = OperatorRegistry()
    seen: list[object] = []

    @on.startup(registry=registry)
    def startup(settings: object, **_: object) -> None:
        seen.append(settings)

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: object) -> str:
        return "from the test's registry"

    settings = anyop.OperatorSettings()
    args = ["run", "-n", anyop_namespace, "--standalone", str(empty)]
    runner = KopfRunner(args, timeout=60, registry=registry, settings=settings, env={"X": "1"})
    with runner:
        apply_kex(anyop_controlplane, anyop_namespace, "kex-registry")
        status = wait_for_status(anyop_controlplane, anyop_namespace, "kex-registry")
    assert status["create_fn"] == "from the test's registry"
    assert seen == [settings]
    assert runner.exit_code == 0
    assert runner.exc_info is None or runner.exc_info[0] is SystemExit
    assert runner.future.done()
    assert runner.future.result().exit_code == 0


def test_the_runner_gives_the_exception_with_its_traceback(
    tmp_path: Path, anyop_kubeconfig: Path
) -> None:
    source = tmp_path / "broken.py"
    source.write_text("raise RuntimeError('broken at import')\n")
    runner = KopfRunner(["run", "-A", str(source)], timeout=60, reraise=False)
    with runner:
        pass
    assert isinstance(runner.exception, RuntimeError)
    _, value, traceback = runner.exc_info
    assert value is runner.exception
    assert traceback is not None
