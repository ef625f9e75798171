"""The ``anyop`` command line (typer): run operators, and manage a local control plane."""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from anyop._version import __version__
from anyop.cli.manifests import manifests
from anyop.cli.options import AllNamespacesOption, NamespaceOption, failure
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
    typer.Option(
        "--workdir",
        envvar="ANYOP_CONTROLPLANE_WORKDIR",
        help="Where its files go (default: ~/.cache/anyop/controlplane; `up` exports it as "
        "ANYOP_CONTROLPLANE_WORKDIR for the shell's later commands).",
    ),
]


@app.command()
def version() -> None:
    """Print anyop's version."""
    typer.echo(f"anyop {__version__}")


def _print_version(value: bool) -> None:
    if value:
        version()
        raise typer.Exit()


@app.callback()
def _main(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Kubernetes operators in Python on AnyIO (Trio or asyncio), with Kopf's API."""


def _scope(namespaces: list[str], all_namespaces: bool, backend: str | None = None) -> bool:
    """Check the scope and backend options; return whether to serve the whole cluster."""
    import warnings

    _only_one(namespaces, all_namespaces)
    if backend not in (None, "asyncio", "trio"):
        raise typer.BadParameter(f"Unknown backend {backend!r}: use asyncio or trio.")
    if not namespaces and not all_namespaces:
        warnings.warn(
            "Neither --namespace nor --all-namespaces is given: serving the whole cluster. "
            "Pass -A to silence this.",
            FutureWarning,
            stacklevel=1,
        )
    return not namespaces


def _only_one(namespaces: list[str], all_namespaces: bool) -> None:
    if namespaces and all_namespaces:
        raise typer.BadParameter("Either --namespace or --all-namespaces, not both.")


def _priority(dev: bool, priority: int | None, default: int | None) -> int | None:
    """``--dev`` means priority 666; together with ``--priority`` it is ambiguous."""
    if dev and priority is not None:
        raise typer.BadParameter("Either --dev or --priority, not both.")
    return 666 if dev else priority if priority is not None else default


PeeringOption = Annotated[
    str | None,
    typer.Option(
        "-P",
        "--peering",
        help="The peering object's name (peering is then mandatory).",
    ),
]
PriorityOption = Annotated[
    int | None, typer.Option("-p", "--priority", help="The priority among peers.")
]
DevOption = Annotated[bool, typer.Option("--dev", help="Development mode: priority 666.")]
PeeringNameOption = Annotated[
    str, typer.Option("-P", "--peering", help="The peering object's name.")
]
IdOption = Annotated[
    str | None, typer.Option("-i", "--id", help="The peer's identity (default: user@host).")
]
VerboseOption = Annotated[bool, typer.Option("-v", "--verbose", help="Log what anyop does.")]
DebugOption = Annotated[bool, typer.Option("-d", "--debug", help="Log everything.")]
QuietOption = Annotated[bool, typer.Option("-q", "--quiet", help="Warnings and errors only.")]
LogFormatOption = Annotated[str, typer.Option(help="plain, full or json.")]
LogRefkeyOption = Annotated[str, typer.Option(help="JSON logs: the object's key.")]
LogPrefixOption = Annotated[
    bool | None,
    typer.Option("--log-prefix/--no-log-prefix", help="Prefix object messages with its name."),
]
ENV = {"auto_envvar_prefix": "ANYOP"}


@app.command(context_settings=ENV)
def run(
    paths: Annotated[list[Path] | None, typer.Argument(help="Python files with handlers.")] = None,
    module: Annotated[
        list[str] | None,
        typer.Option("-m", "--module", help="A module with handlers."),
    ] = None,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    backend: Annotated[
        str | None,
        typer.Option(
            envvar="ANYOP_BACKEND",
            help="asyncio or trio (default: settings.server.backend, i.e. asyncio).",
        ),
    ] = None,
    standalone: Annotated[bool, typer.Option("--standalone", help="Run without peering.")] = False,
    dev: DevOption = False,
    peering: PeeringOption = None,
    priority: PriorityOption = None,
    leader_election: Annotated[
        bool,
        typer.Option(
            "--leader-election", help="Several replicas: only the holder of a Lease serves."
        ),
    ] = False,
    warm_standby: Annotated[
        bool,
        typer.Option(
            "--warm-standby",
            help="With --leader-election: standbys keep their watches synced for a fast takeover.",
        ),
    ] = False,
    shards: Annotated[
        str | None,
        typer.Option(
            "--shards",
            help="'auto': replicas share the objects, joining and leaving by Leases of their own.",
        ),
    ] = None,
    lease_name: Annotated[
        str | None, typer.Option(help="The Lease's name (with --shards: the shard group's).")
    ] = None,
    lease_namespace: Annotated[str | None, typer.Option(help="The Lease's namespace.")] = None,
    liveness: Annotated[
        str | None,
        typer.Option(
            "-L",
            "--liveness",
            help="Serve probes, e.g. http://0.0.0.0:8080/healthz (/readyz beside it).",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help=(
                "Serve Prometheus metrics over HTTPS to readers the API server authorises, "
                "e.g. https://0.0.0.0:8443/metrics."
            ),
        ),
    ] = None,
    metrics_insecure: Annotated[
        bool,
        typer.Option(
            "--metrics-insecure",
            help="Serve the metrics over plain HTTP to anyone instead (an http:// --metrics).",
        ),
    ] = False,
    verbose: VerboseOption = False,
    debug: DebugOption = False,
    quiet: QuietOption = False,
    log_format: LogFormatOption = "full",
    log_refkey: LogRefkeyOption = "object",
    log_prefix: LogPrefixOption = None,
) -> None:
    """Run an operator: import the handlers, then serve until SIGINT or SIGTERM.
    \f
    Its positional parameters are its options: typer reads them from the signature.
    """
    from anyop.engine.operator.launch import load_sources, thread_flags
    from anyop.engine.operator.launch import run as run_operator
    from anyop.settings import settings_from_environ

    clusterwide = _scope(namespace or [], all_namespaces, backend)
    if standalone and peering:
        raise typer.BadParameter("Either --standalone or --peering, not both.")
    if warm_standby and not leader_election:
        raise typer.BadParameter("--warm-standby needs --leader-election.")
    if shards is not None and shards != "auto":
        raise typer.BadParameter(
            f"--shards {shards!r}: only 'auto' is supported (the live replicas share the objects)."
        )
    if shards and leader_election:
        raise typer.BadParameter("Either --shards or --leader-election, not both.")
    chosen = _priority(dev, priority, None)
    _configure_logs(locals())
    try:
        settings = getattr(thread_flags, "settings", None) or settings_from_environ()
        settings.leadership.lease_name = lease_name or settings.leadership.lease_name
        settings.leadership.lease_namespace = lease_namespace or settings.leadership.lease_namespace
        settings.leadership.keep_watching = warm_standby or settings.leadership.keep_watching
        settings.sharding.enabled = bool(shards) or settings.sharding.enabled
        settings.server.metrics_insecure = metrics_insecure or settings.server.metrics_insecure
        if shards:
            settings.sharding.lease_namespace = lease_namespace or settings.sharding.lease_namespace
            settings.sharding.group = lease_name or settings.sharding.group
        load_sources(paths or [], module or [])
        run_operator(
            backend=backend,
            settings=settings,
            namespaces=namespace or [],
            clusterwide=clusterwide,
            liveness_endpoint=liveness,
            metrics_endpoint=metrics,
            standalone=standalone or None,
            priority=chosen,
            peering_name=peering,
            leader_election=leader_election or None,
        )
    except AnyopError as e:
        raise failure(e) from e


app.command()(manifests)


@app.command(context_settings=ENV)
def freeze(
    peering: PeeringNameOption,
    lifetime: Annotated[
        int, typer.Option("-t", "--lifetime", min=1, help="Seconds until it thaws by itself.")
    ],
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    identity: IdOption = None,
    dev: DevOption = False,
    priority: PriorityOption = None,
    message: Annotated[
        str | None, typer.Option("-m", "--message", help="Why (for the log).")
    ] = None,
    verbose: VerboseOption = False,
    debug: DebugOption = False,
    quiet: QuietOption = False,
    log_format: LogFormatOption = "full",
    log_refkey: LogRefkeyOption = "object",
    log_prefix: LogPrefixOption = None,
) -> None:
    """Pause the operators of a peering: a fake peer of priority 100 for --lifetime seconds.
    \f
    Its positional parameters are its options: typer reads them from the signature.
    """
    from anyop.engine.coordination.peering_keeper import freeze as freeze_one

    _only_one(namespace or [], all_namespaces)
    chosen = _priority(dev, priority, 100) or 0
    _configure_logs(locals())
    who = identity or _user_at_host()
    reason = f": {message}" if message else "."
    act = functools.partial(freeze_one, identity=who, priority=chosen, lifetime=lifetime)
    _peering_calls(
        act,
        peering,
        namespaces=namespace or [],
        done=f"Frozen {{where}} for {lifetime} s as {who!r}{reason}",
    )


@app.command(context_settings=ENV)
def resume(
    peering: PeeringNameOption,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    identity: IdOption = None,
    verbose: VerboseOption = False,
    debug: DebugOption = False,
    quiet: QuietOption = False,
    log_format: LogFormatOption = "full",
    log_refkey: LogRefkeyOption = "object",
    log_prefix: LogPrefixOption = None,
) -> None:
    """Resume the operators of a peering frozen by ``anyop freeze``.
    \f
    Its positional parameters are its options: typer reads them from the signature.
    """
    from anyop.engine.coordination.peering_keeper import thaw

    _only_one(namespace or [], all_namespaces)
    _configure_logs(locals())
    who = identity or _user_at_host()
    act = functools.partial(thaw, identity=who)
    _peering_calls(
        act, peering, namespaces=namespace or [], done=f"Resumed {{where}} (removed {who!r})."
    )


def _user_at_host() -> str:
    from anyop.peering import user_at_host

    return user_at_host()


LOG_OPTIONS = ("debug", "verbose", "quiet", "log_format", "log_refkey", "log_prefix")
"""The logging options every command takes, by their parameter names."""


def _configure_logs(options: Mapping[str, Any]) -> None:
    """Configure logging from a command's options (its ``locals()``): see :data:`LOG_OPTIONS`."""
    from anyop.logs import configure

    configure(**{name: options[name] for name in LOG_OPTIONS})


def _peering_calls(act: Any, name: str, *, namespaces: list[str], done: str) -> None:
    """Log in once, run ``act(client, name, namespace)`` for every namespace (or the cluster),
    and echo ``done`` (with ``{where}`` filled in) after each; exit 1 on an anyop error."""
    import anyio

    from anyop.engine.coordination.peering_keeper import describe
    from anyop.engine.operator.login import login
    from anyop.kube.client import open_client

    if not name:
        raise typer.BadParameter("The peering name must not be empty.")

    async def main() -> None:
        async with open_client(await login()) as client:
            targets: list[str | None] = [*namespaces] if namespaces else [None]
            for namespace in targets:
                await act(client, name, namespace)
                typer.echo(done.format(where=describe(name, namespace)))

    try:
        anyio.run(main)
    except AnyopError as e:
        raise failure(e) from e


ControllersOption = Annotated[
    bool,
    typer.Option(
        "--controllers/--no-controllers",
        help="kube-controller-manager: garbage collection, namespaces, service accounts.",
    ),
]
NodesOption = Annotated[
    bool,
    typer.Option(
        "--nodes/--no-nodes",
        help="kube-scheduler and KWOK with one fake node, so that Pods run (without containers).",
    ),
]


@controlplane_app.command("build")
def controlplane_build(
    cluster: Annotated[
        bool,
        typer.Option(
            "--cluster/--bare",
            help="Also kube-controller-manager, kube-scheduler and KWOK (--bare: only the three).",
        ),
    ] = True,
) -> None:
    """Find or build the control plane's binaries (kube-apiserver, kubectl, etcd, and for a
    cluster kube-controller-manager, kube-scheduler and KWOK); print their paths."""
    from anyop.testing.assets import ensure_assets

    try:
        assets = ensure_assets(cluster=cluster)
    except AnyopError as e:
        raise failure(e) from e
    extra = (assets.kube_controller_manager, assets.kube_scheduler, assets.kwok) if cluster else ()
    for path in (assets.kube_apiserver, assets.kubectl, assets.etcd, *extra):
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
    controllers: ControllersOption = True,
    nodes: NodesOption = True,
) -> None:
    """Start the control plane in the background and print its shell exports.

    Use it as ``eval "$(anyop controlplane up)"``; then ``kubectl get ns`` works. By default it
    runs kube-controller-manager, kube-scheduler and KWOK too; ``--no-controllers --no-nodes``
    starts only etcd and kube-apiserver (the fastest start).
    \f
    Its positional parameters are its options: typer reads them from the signature.
    """
    from anyop.testing.background import (
        default_workdir,
        owner_of,
        read_env,
        shell_exports,
        start_background,
    )

    workdir = workdir or default_workdir()
    owner = owner_of(workdir) if read_env(workdir) is not None else None
    if owner is not None and not owner.is_here():
        typer.echo(
            f"anyop: reusing the control plane in {workdir} that another terminal started "
            f"({owner.describe()}); `anyop controlplane down` here leaves it running.",
            err=True,
        )
    try:
        env = start_background(
            workdir,
            apiserver_flags=apiserver_flag or (),
            etcd_flags=etcd_flag or (),
            controllers=controllers,
            nodes=nodes,
        )
    except AnyopError as e:
        raise failure(e) from e
    typer.echo(shell_exports(env))


@controlplane_app.command("env")
def controlplane_env(workdir: WorkdirOption = None) -> None:
    """Print the shell exports of the running control plane (KUBECONFIG and process ids)."""
    from anyop.testing.background import (
        default_workdir,
        read_env,
        running_elsewhere,
        shell_exports,
    )

    workdir = workdir or default_workdir()
    env = read_env(workdir)
    if env is None:
        typer.echo(_none_running(workdir, running_elsewhere(workdir)), err=True)
        raise typer.Exit(code=1)
    typer.echo(shell_exports(env))


def _none_running(workdir: Path, elsewhere: list[Path]) -> str:
    """What ``env`` says when no control plane runs in its workdir: where one runs, if any."""
    if not elsewhere:
        start = "`anyop controlplane up`"
        return f"anyop: no control plane is running in {workdir}; start one with {start}."
    where = " or ".join(f"`anyop controlplane env --workdir {path}`" for path in elsewhere)
    return f"anyop: no control plane is running in {workdir}, but one runs elsewhere: {where}."


@controlplane_app.command("down")
def controlplane_down(
    workdir: WorkdirOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Stop it even if another terminal started it.")
    ] = False,
) -> None:
    """Stop the background control plane that this terminal started, and remove its files.

    One that another terminal started (and still runs) is left running, with a message that
    says who started it, unless ``--force`` is given.
    """
    from anyop.testing.background import default_workdir, owner_of, read_env, stop_background

    workdir = workdir or default_workdir()
    owner = owner_of(workdir) if read_env(workdir) is not None else None
    if owner is not None and not force and not owner.is_here() and not owner.is_gone():
        typer.echo(
            f"anyop: the control plane in {workdir} was started by another terminal "
            f"({owner.describe()}); it is left running. Stop it there, or with "
            "`anyop controlplane down --force`.",
            err=True,
        )
        raise typer.Exit(code=1)
    stopped = stop_background(workdir)
    typer.echo(
        "Stopped the control plane." if stopped else "No control plane was running.", err=True
    )


def main() -> None:
    """The console-script entry point."""
    sys.exit(app())
