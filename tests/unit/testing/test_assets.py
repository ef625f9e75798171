"""Finding and building the control-plane binaries: the pure parts and the clear errors."""

from __future__ import annotations

import stat
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
