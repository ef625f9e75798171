"""``anyop manifests``: import the operator's code, then write (or check) its manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from anyop.cli.options import AllNamespacesOption, NamespaceOption, failure
from anyop.errors import AnyopError

__all__ = ["manifests"]


def manifests(
    paths: Annotated[list[Path] | None, typer.Argument(help="Python files with handlers.")] = None,
    module: Annotated[
        list[str] | None, typer.Option("-m", "--module", help="A module with handlers.")
    ] = None,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    crd: Annotated[
        list[Path] | None,
        typer.Option("--crd", help="A YAML file with CRDs of resources named by strings."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="The folder of the files.")] = Path("."),
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; fail with a diff if files differ.")
    ] = False,
    name: Annotated[str, typer.Option(help="The operator's name.")] = "anyop-operator",
    operator_namespace: Annotated[
        str | None,
        typer.Option(help="Where the operator runs (default: the first -n, or 'default')."),
    ] = None,
    image: Annotated[str, typer.Option(help="The container image.")] = (
        "example.invalid/anyop-operator:latest"
    ),
    replicas: Annotated[int, typer.Option(help="The Deployment's replicas.")] = 1,
    standalone: Annotated[bool, typer.Option("--standalone", help="No peering.")] = False,
    leader_election: Annotated[bool, typer.Option("--leader-election")] = False,
    shards: Annotated[bool, typer.Option("--shards", help="--shards=auto at run time.")] = False,
    probes_port: Annotated[int, typer.Option(help="/healthz and /readyz; 0: none.")] = 8080,
    metrics_port: Annotated[int, typer.Option(help="/metrics; 0: none.")] = 0,
    metrics_insecure: Annotated[bool, typer.Option("--metrics-insecure")] = False,
    webhook_port: Annotated[int, typer.Option(help="The webhook server; 0: none.")] = 0,
    webhooks_managed: Annotated[
        bool, typer.Option("--webhooks-managed", help="The operator writes its webhook configs.")
    ] = False,
    conversion_managed: Annotated[
        bool, typer.Option("--conversion-managed", help="It writes its CRDs' conversion.")
    ] = False,
) -> None:
    """Write the CRDs, RBAC, ServiceAccount, Deployment (and Service) that the code needs.
    \f
    Its positional parameters are its options: typer reads them from the signature.
    """
    from anyop.engine.operator.launch import load_sources
    from anyop.handlers.registry import get_default_registry
    from anyop.manifests.files import differences, manifest_files
    from anyop.manifests.options import ManifestOptions
    from anyop.manifests.rbac import unasked_rules

    try:
        load_sources(paths or [], module or [])
        options = ManifestOptions(
            name=name,
            namespace=operator_namespace or next(iter(namespace or []), "default"),
            namespaces=tuple(namespace or ()),
            clusterwide=all_namespaces,
            sources=tuple(str(path) for path in paths or ()),
            modules=tuple(module or ()),
            image=image,
            replicas=replicas,
            peering=not standalone,
            leader_election=leader_election,
            sharding=shards,
            probes_port=probes_port or None,
            metrics_port=metrics_port or None,
            metrics_insecure=metrics_insecure,
            webhook_port=webhook_port or None,
            webhooks_managed=webhooks_managed,
            conversion_managed=conversion_managed,
        )
        crds = [doc for path in crd or [] for doc in _crds_in(path)]
        files = manifest_files(get_default_registry(), options, crds)
    except AnyopError as e:
        raise failure(e) from e
    for note in unasked_rules(get_default_registry(), options):
        typer.echo(f"anyop: {note}", err=True)
    if check:
        found = {n: (out / n).read_text() if (out / n).is_file() else None for n in files}
        diff = differences(files, found)
        if diff:
            typer.echo(diff, nl=False)
            typer.echo(f"anyop: the manifests in {out} are not up to date.", err=True)
            raise typer.Exit(code=1)
        return
    out.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (out / file_name).write_text(text)
        typer.echo(f"Wrote {out / file_name}")


def _crds_in(path: Path) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions in a YAML file.

    Raises:
        ConfigError: The file cannot be read or parsed (named in the message).
    """
    import yaml

    from anyop.errors import ConfigError

    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"Cannot read the CRDs in {path}: {e}") from None
    kind = "CustomResourceDefinition"
    return [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") == kind]
