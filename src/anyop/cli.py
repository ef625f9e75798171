"""The ``anyop`` command line (typer): run operators, and manage a local control plane."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from anyop._version import __version__
from anyop.errors import AnyopError

__all__ = ["app", "main"]

app = typer.Typer(
    name="anyop",
    help="Kubernetes operators in Python on AnyIO (Trio or asyncio), with Kopf's API.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
controlplane_app = typer.Typer(
    help="A real local control plane (etcd + kube-apiserver on 127.0.0.1) for dev and tests.",
    no_args_is_help=True,
)
app.add_typer(controlplane_app, name="controlplane")

WorkdirOption = Annotated[
    Path | None,
    typer.Option("--workdir", help="Where its files go (default: ~/.cache/anyop/controlplane)."),
]


def _fail(error: AnyopError) -> typer.Exit:
    typer.echo(f"anyop: {error}", err=True)
    return typer.Exit(code=1)


@app.command()
def version() -> None:
    """Print anyop's version."""
    typer.echo(f"anyop {__version__}")


def _scope(namespaces: list[str], all_namespaces: bool, backend: str) -> bool:
    """Check the scope and backend options; return whether to serve the whole cluster."""
    import warnings

    if namespaces and all_namespaces:
        raise typer.BadParameter("Either --namespace or --all-namespaces, not both.")
    if backend not in ("asyncio", "trio"):
        raise typer.BadParameter(f"Unknown backend {backend!r}: use asyncio or trio.")
    if not namespaces and not all_namespaces:
        warnings.warn(
            "Neither --namespace nor --all-namespaces is given: serving the whole cluster. "
            "Pass -A to silence this.", FutureWarning, stacklevel=1,
        )  # fmt: skip
    return not namespaces


@app.command(context_settings={"auto_envvar_prefix": "ANYOP"})
def run(
    paths: Annotated[list[Path] | None, typer.Argument(help="Python files with handlers.")] = None,
    module: Annotated[
        list[str] | None,
        typer.Option("-m", "--module", help="A module with handlers."),
    ] = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "-n", "--namespace", envvar="ANYOP_NAMESPACE", help="A namespace (repeatable)."
        ),
    ] = None,
    all_namespaces: Annotated[
        bool, typer.Option("-A", "--all-namespaces", help="Serve the whole cluster.")
    ] = False,
    backend: Annotated[
        str, typer.Option(envvar="ANYOP_BACKEND", help="asyncio (default) or trio.")
    ] = "asyncio",
    standalone: Annotated[bool, typer.Option(help="Run without peering.")] = False,
    liveness: Annotated[
        str | None,
        typer.Option(
            "--liveness",
            help="Serve probes, e.g. http://0.0.0.0:8080/healthz (/readyz, /metrics beside it).",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics", help="Serve Prometheus metrics, e.g. http://0.0.0.0:9090/metrics."
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("-v", "--verbose")] = False,
    debug: Annotated[bool, typer.Option("-d", "--debug")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet")] = False,
    log_format: Annotated[str, typer.Option(help="plain, full or json.")] = "full",
    log_refkey: Annotated[str, typer.Option(help="JSON logs: the object's key.")] = "object",
    log_prefix: Annotated[bool | None, typer.Option("--log-prefix/--no-log-prefix")] = None,
) -> None:
    """Run an operator: import the handlers, then serve until SIGINT or SIGTERM."""
    from anyop.engine.running import load_sources
    from anyop.engine.running import run as run_operator
    from anyop.logs import configure

    clusterwide = _scope(namespace or [], all_namespaces, backend)
    configure(
        debug=debug, verbose=verbose, quiet=quiet, log_format=log_format,
        log_refkey=log_refkey, log_prefix=log_prefix,
    )  # fmt: skip
    try:
        load_sources(paths or [], module or [])
        run_operator(
            backend=backend,
            namespaces=namespace or [],
            clusterwide=clusterwide,
            liveness_endpoint=liveness,
            metrics_endpoint=metrics,
        )
    except AnyopError as e:
        raise _fail(e) from e


@controlplane_app.command("build")
def controlplane_build() -> None:
    """Find or build the kube-apiserver, kubectl and etcd binaries; print their paths."""
    from anyop.testing.assets import ensure_assets

    try:
        assets = ensure_assets()
    except AnyopError as e:
        raise _fail(e) from e
    for path in (assets.kube_apiserver, assets.kubectl, assets.etcd):
        typer.echo(str(path))


@controlplane_app.command("up")
def controlplane_up(
    workdir: WorkdirOption = None,
    apiserver_flag: Annotated[
        list[str] | None, typer.Option(help="An extra kube-apiserver flag (repeatable).")
    ] = None,
    etcd_flag: Annotated[
        list[str] | None, typer.Option(help="An extra etcd flag (repeatable).")
    ] = None,
) -> None:
    """Start the control plane in the background and print its shell exports.

    Use it as ``eval "$(anyop controlplane up)"``; then ``kubectl get ns`` works.
    """
    from anyop.testing.background import default_workdir, shell_exports, start_background

    try:
        env = start_background(
            workdir or default_workdir(),
            apiserver_flags=apiserver_flag or (),
            etcd_flags=etcd_flag or (),
        )
    except AnyopError as e:
        raise _fail(e) from e
    typer.echo(shell_exports(env))


@controlplane_app.command("env")
def controlplane_env(workdir: WorkdirOption = None) -> None:
    """Print the shell exports of the running control plane (KUBECONFIG and process ids)."""
    from anyop.testing.background import default_workdir, read_env, shell_exports

    env = read_env(workdir or default_workdir())
    if env is None:
        typer.echo(
            "anyop: no control plane is running; start one with `anyop controlplane up`.", err=True
        )
        raise typer.Exit(code=1)
    typer.echo(shell_exports(env))


@controlplane_app.command("down")
def controlplane_down(workdir: WorkdirOption = None) -> None:
    """Stop the background control plane and remove its files."""
    from anyop.testing.background import default_workdir, stop_background

    stopped = stop_background(workdir or default_workdir())
    typer.echo(
        "Stopped the control plane." if stopped else "No control plane was running.", err=True
    )


def main() -> None:
    """The console-script entry point."""
    sys.exit(app())
