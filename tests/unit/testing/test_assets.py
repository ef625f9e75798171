"""Finding and building the control-plane binaries: the pure parts and the clear errors."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest

from anyop.errors import ControlPlaneError
from anyop.testing import assets
from anyop.testing.assets import (
    Assets,
    find_assets,
    render_kubernetes_gomod,
    staging_modules,
    version_ldflags,
)

GOMOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tgithub.com/foo/bar v1.2.3
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
\tk8s.io/kube-openapi v0.0.0-20260317180543-43fb72c5454a
\tk8s.io/utils v0.0.0-20260210185600-b8788abfbbc2
)

require (
\tk8s.io/streaming v0.0.0 // indirect
)

require k8s.io/kms v0.0.0

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
)
"""


def make_binaries(
    folder: Path, names: tuple[str, ...] = ("etcd", "kube-apiserver", "kubectl")
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = folder / name
        path.write_text("#!/bin/sh\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_staging_modules_are_the_k8s_modules_required_at_v0_0_0() -> None:
    assert staging_modules(GOMOD) == [
        "k8s.io/api",
        "k8s.io/client-go",
        "k8s.io/kms",
        "k8s.io/streaming",
    ]


def test_the_build_module_replaces_every_staging_module_with_the_matching_tag() -> None:
    gomod = render_kubernetes_gomod("v1.36.3", ["k8s.io/api", "k8s.io/kms"], "go 1.26.0")
    assert "require k8s.io/kubernetes v1.36.3" in gomod
    assert "\tk8s.io/api => k8s.io/api v0.36.3\n" in gomod
    assert "\tk8s.io/kms => k8s.io/kms v0.36.3\n" in gomod
    assert "go 1.26.0" in gomod


def test_version_ldflags_set_the_release_in_both_version_packages() -> None:
    flags = version_ldflags("v1.36.3")
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.3" in flags
    assert "-X k8s.io/client-go/pkg/version.gitVersion=v1.36.3" in flags
    assert "-X k8s.io/component-base/version.gitMinor=36" in flags


def test_kubebuilder_assets_with_all_binaries_are_used(tmp_path: Path) -> None:
    make_binaries(tmp_path)
    found = find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)})
    assert found == Assets.in_folder(tmp_path)


def test_kubebuilder_assets_without_the_binaries_is_a_clear_error(tmp_path: Path) -> None:
    make_binaries(tmp_path, ("etcd",))
    with pytest.raises(ControlPlaneError, match=r"KUBEBUILDER_ASSETS.*kube-apiserver, kubectl"):
        find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)})


def test_anyop_variable_wins_over_kubebuilder_assets(tmp_path: Path) -> None:
    make_binaries(tmp_path / "ours")
    env = {
        "ANYOP_CONTROLPLANE_ASSETS": str(tmp_path / "ours"),
        "KUBEBUILDER_ASSETS": str(tmp_path / "missing"),
    }
    assert find_assets(env) == Assets.in_folder(tmp_path / "ours")


def test_a_complete_cache_is_found_without_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANYOP_CACHE_DIR", str(tmp_path))
    cached = assets._cached_assets()
    assert find_assets({}) is None
    for path in (cached.etcd, cached.kube_apiserver, cached.kubectl):
        make_binaries(path.parent, (path.name,))
    assert find_assets({}) == cached

    def no_build(**_: object) -> Assets:
        raise AssertionError("a second run must build nothing")

    monkeypatch.setattr(assets, "build_assets", no_build)
    assert assets.ensure_assets() == cached


def test_missing_go_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANYOP_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ControlPlaneError, match=r"Go is not installed.*KUBEBUILDER_ASSETS"):
        assets.build_assets(log=False)


def test_a_failed_build_step_shows_the_command_and_its_last_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_go = tmp_path / "bin" / "go"
    fake_go.parent.mkdir()
    fake_go.write_text(
        "#!/bin/sh\necho 'step one'\necho 'fatal: no route to the proxy' >&2\nexit 3\n"
    )
    fake_go.chmod(0o755)
    monkeypatch.setenv("ANYOP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(fake_go.parent))
    with pytest.raises(ControlPlaneError) as info:
        assets.build_assets(log=False)
    message = str(info.value)
    assert "exit code 3" in message
    assert "go mod download -json k8s.io/kubernetes@" in message
    assert "fatal: no route to the proxy" in message


def test_the_build_steps_group_the_kubernetes_commands_then_etcd_then_kwok() -> None:
    every = [
        "kwok",
        "etcd",
        "kubectl",
        "kube-scheduler",
        "kube-apiserver",
        "kube-controller-manager",
    ]
    assert assets.build_steps(every) == [
        ("kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler"),
        ("etcd",),
        ("kwok",),
    ]
    assert assets.build_steps(["kwok"]) == [("kwok",)]
    assert assets.build_steps([]) == []


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0 s"), (45, "45 s"), (60, "1 min 00 s"), (508, "8 min 28 s")]
)
def test_elapsed_time_reads_as_minutes_and_seconds(seconds: float, text: str) -> None:
    assert assets.elapsed_text(seconds) == text


def test_the_first_build_says_which_step_of_how_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANYOP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(assets, "_go", lambda: "go")

    def build(*args: object, **kwargs: object) -> None:
        heartbeat = assets._heartbeat.get()
        assert heartbeat is not None
        heartbeat()  # what a long go command says every HEARTBEAT seconds

    for step in ("_build_kubernetes", "_build_etcd", "_build_kwok"):
        monkeypatch.setattr(assets, step, build)
    assets.build_assets(cluster=True)
    lines = [
        re.sub(r"\d+ s elapsed", "N s elapsed", line)
        for line in capsys.readouterr().err.splitlines()
    ]
    kube = "kube-apiserver, kubectl, kube-controller-manager, kube-scheduler"
    assert lines[0].startswith("[anyop] Building the local cluster's binaries from Go modules in 3")
    assert "a one-time cost" in lines[0]
    assert lines[1:-1] == [
        f"[anyop] [1/3] {kube}: building (N s elapsed)",
        f"[anyop] [1/3] {kube}: still building (N s elapsed)",
        f"[anyop] [1/3] {kube}: built (N s elapsed)",
        "[anyop] [2/3] etcd: building (N s elapsed)",
        "[anyop] [2/3] etcd: still building (N s elapsed)",
        "[anyop] [2/3] etcd: built (N s elapsed)",
        "[anyop] [3/3] kwok: building (N s elapsed)",
        "[anyop] [3/3] kwok: still building (N s elapsed)",
        "[anyop] [3/3] kwok: built (N s elapsed)",
    ]
    assert lines[-1].startswith("[anyop] The binaries are built, in ")
    assert lines[-1].endswith(f", into {tmp_path / 'bin'}.")


def test_the_progress_says_the_time_elapsed_since_the_build_began(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = [100.0]
    progress = assets.BuildProgress(2, 100.0, tmp_path, clock=lambda: now[0])
    with progress.step(("kube-apiserver", "kubectl")):
        now[0] += 150
        progress.still()
        now[0] += 150
    with progress.step(("etcd",)):
        now[0] += 208
    progress.finish()
    assert capsys.readouterr().err.splitlines() == [
        "[anyop] [1/2] kube-apiserver, kubectl: building (0 s elapsed)",
        "[anyop] [1/2] kube-apiserver, kubectl: still building (2 min 30 s elapsed)",
        "[anyop] [1/2] kube-apiserver, kubectl: built (5 min 00 s elapsed)",
        "[anyop] [2/2] etcd: building (5 min 00 s elapsed)",
        "[anyop] [2/2] etcd: built (8 min 28 s elapsed)",
        f"[anyop] The binaries are built, in 8 min 28 s, into {tmp_path}.",
    ]


def test_a_long_build_command_says_it_is_still_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assets, "HEARTBEAT", 0.05)
    beats: list[None] = []
    token = assets._heartbeat.set(lambda: beats.append(None))
    try:
        out = assets._run([sys.executable, "-c", "import time; time.sleep(0.5); print('ok')"],
                          tmp_path, log=True)  # fmt: skip
    finally:
        assets._heartbeat.reset(token)
    assert out == "ok\n"
    assert len(beats) >= 2
