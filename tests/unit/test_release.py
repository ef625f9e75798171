"""The release as a user gets it: the sdist and the wheel built from it by the standard build
backend, installed into a clean virtualenv, give ``anyop --version``, an ``anyop run`` that
handles an object, and a pytest plugin whose fixtures run a test.

The packages come from pip's cache (or the package index, once); nothing of this checkout is
importable in the clean virtualenv.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from anyop.testing import FakeCluster

ROOT = Path(__file__).parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BUILD_REQUIRES = PROJECT["build-system"]["requires"]
EXAMPLE = ROOT / "examples" / "01-minimal" / "example.py"
CRD = ROOT / "examples" / "crd.yaml"
KEX = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"
VERSION = "0.1.0"

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Release:
    """What the build made, and the clean virtualenv that the wheel is installed into."""

    sdist: Path
    wheel: Path
    venv: Path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)


def clean_env() -> dict[str, str]:
    """The environment for the clean virtualenv's commands: nothing points into this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def run(*command: str | Path, cwd: Path) -> str:
    """Run a command to its end; its output, or a failure that shows it."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """Build the sdist from the checkout, the wheel from the sdist, and install the wheel."""
    top = tmp_path_factory.mktemp("release")
    builder, dist, clean = top / "builder", top / "dist", top / "clean"
    run(sys.executable, "-m", "venv", builder, cwd=top)
    run(builder / "bin" / "pip", "install", "--quiet", *BUILD_REQUIRES, cwd=top)
    run(builder / "bin" / "python", "-m", "hatchling", "build", "-t", "sdist", "-d", dist, cwd=ROOT)
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(top / "unpacked", filter="data")
    [unpacked] = (top / "unpacked").iterdir()
    run(builder / "bin" / "python", "-m", "hatchling", "build", "-t", "wheel", "-d", dist,
        cwd=unpacked)  # fmt: skip
    [wheel] = dist.glob("*.whl")
    run(sys.executable, "-m", "venv", clean, cwd=top)
    requirement = f"anyop[test] @ {wheel.as_uri()}"
    run(clean / "bin" / "pip", "install", "--quiet", "--no-compile", requirement, cwd=top)
    return Release(sdist, wheel, clean)


def test_the_files_are_named_for_the_version(release: Release) -> None:
    assert release.sdist.name == f"anyop-{VERSION}.tar.gz"
    assert release.wheel.name == f"anyop-{VERSION}-py3-none-any.whl"


def test_the_installed_command_says_its_version(release: Release, tmp_path: Path) -> None:
    assert run(release.bin("anyop"), "--version", cwd=tmp_path) == f"anyop {VERSION}\n"


def test_the_installed_package_is_the_wheel_not_the_checkout(
    release: Release, tmp_path: Path
) -> None:
    where = run(release.bin("python"), "-c", "import anyop; print(anyop.__file__)", cwd=tmp_path)
    assert Path(where.strip()).is_relative_to(release.venv)


def test_the_metadata_is_complete(release: Release, tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import importlib.metadata, importlib.resources, json
        meta = importlib.metadata.metadata("anyop")
        typed = importlib.resources.files("anyop").joinpath("py.typed").is_file()
        print(json.dumps({
            "license": meta["License-Expression"], "license_files": meta.get_all("License-File"),
            "classifiers": meta.get_all("Classifier"), "urls": meta.get_all("Project-URL"),
            "summary": meta["Summary"], "readme": meta.get_payload(), "typed": typed,
        }))
    """)
    meta = json.loads(run(release.bin("python"), "-c", script, cwd=tmp_path))
    assert meta["license"] == "MIT"
    assert meta["license_files"] == ["LICENSE"]
    assert "Typing :: Typed" in meta["classifiers"]
    assert "Programming Language :: Python :: 3.11" in meta["classifiers"]
    assert [url.split(",")[0] for url in meta["urls"]] == ["Homepage", "Documentation"]
    assert meta["summary"]
    assert meta["readme"].startswith("# anyop")
    assert meta["typed"] is True


def test_the_sdist_holds_the_sources_their_tests_and_the_license(release: Release) -> None:
    with tarfile.open(release.sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    expected = {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "src/anyop/py.typed"}
    assert expected <= names
    assert "tests/unit/test_release.py" in names
    assert not any(name.startswith((".venv", "site/")) for name in names)


@pytest.mark.anyio
async def test_anyop_run_from_the_wheel_handles_an_object(
    release: Release, tmp_path: Path, anyio_backend: str
) -> None:
    fake = FakeCluster()
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    async with anyio.create_task_group() as tg:
        await tg.start(fake.serve)
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        env = {**clean_env(), "KUBECONFIG": str(kubeconfig)}
        command = [release.bin("anyop"), "run", str(EXAMPLE), "-n", "ns", "--standalone",
                   "--backend", anyio_backend]  # fmt: skip
        process = await anyio.open_process(command, env=env, cwd=tmp_path, stderr=subprocess.STDOUT)
        try:
            async with fake.client() as api:
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": "kex"}, "spec": {}}  # fmt: skip
                (await api.post(KEX, json=body)).raise_for_status()
                with anyio.fail_after(60):
                    while "create_fn" not in (await api.get(f"{KEX}/kex")).json().get("status", {}):
                        await anyio.sleep(0.1)
                status = (await api.get(f"{KEX}/kex")).json()["status"]
        finally:
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                code = await process.wait()
            tg.cancel_scope.cancel()
    assert status["create_fn"] == {"message": "hello world"}
    assert code == 0


TEST_OF_AN_OPERATOR = """
import anyop
import pytest
from anyop.testing import FakeCluster

KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")


@anyop.on.create("kopfexamples")
def greet(spec, **_):
    return f"Hello, {spec['who']}!"


@pytest.fixture
def fake_cluster():
    fake = FakeCluster()
    fake.apply(CRD)
    return fake


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.mark.anyio
async def test_it_greets(fake_operator):
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
    body = await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
    assert body["status"]["greet"] == "Hello, Al!"
"""


def test_the_installed_pytest_plugin_runs_a_test_of_an_operator(
    release: Release, tmp_path: Path
) -> None:
    (tmp_path / "test_operator.py").write_text(f"CRD = {str(CRD)!r}\n{TEST_OF_AN_OPERATOR}")
    pytest_ = [release.bin("python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    output = run(*pytest_, cwd=tmp_path)
    assert "2 passed" in output
