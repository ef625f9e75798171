"""How the operator is deployed: what ``anyop manifests`` is told besides the code."""

from __future__ import annotations

import dataclasses
import re

from anyop.errors import ConfigError

__all__ = ["ManifestOptions"]

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ManifestOptions:
    """The deployment's choices that the manifests depend on.

    Attributes:
        name: The name of the ServiceAccount, the roles, the Deployment and the Service.
        namespace: The namespace where the operator itself runs.
        namespaces: The namespaces it serves (``-n``; patterns allowed); empty with
            ``clusterwide``.
        clusterwide: It serves the whole cluster (``-A``): everything goes to a ClusterRole.
        sources: The operator's files (``anyop run`` gets them in the Deployment's command).
        modules: The operator's modules (``-m``).
        image: The container image.
        peering: Whether it peers with other operators (not ``--standalone``).
        leader_election: Whether replicas elect a leader (``--leader-election``).
        sharding: Whether replicas share the objects (``--shards auto``).
        replicas: How many replicas the Deployment runs.
        probes_port: The port of ``/healthz`` and ``/readyz``; ``None`` for no probes.
        metrics_port: The port of ``/metrics``; ``None`` for no metrics.
        metrics_insecure: Serve metrics over plain HTTP to anyone (no token reviews).
        webhook_port: The port of the webhook server, for the Service; ``None`` for none.
        webhooks_managed: Whether the operator writes its webhook configurations.
        conversion_managed: Whether the operator writes the conversion webhook into its CRDs.
        scanning_disabled: ``settings.scanning.disabled``: no CRD watching at run time.
    """

    name: str = "anyop-operator"
    namespace: str = "default"
    namespaces: tuple[str, ...] = ()
    clusterwide: bool = False
    sources: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    image: str = "example.invalid/anyop-operator:latest"
    peering: bool = True
    leader_election: bool = False
    sharding: bool = False
    replicas: int = 1
    probes_port: int | None = 8080
    metrics_port: int | None = None
    metrics_insecure: bool = False
    webhook_port: int | None = None
    webhooks_managed: bool = False
    conversion_managed: bool = False
    scanning_disabled: bool = False

    def __post_init__(self) -> None:
        for label in (self.name, self.namespace):
            if not _DNS_LABEL.fullmatch(label):
                raise ConfigError(f"Not a valid name for the manifests: {label!r}.")
        if self.clusterwide == bool(self.namespaces):
            raise ConfigError("The manifests need either namespaces (-n) or -A, and not both.")
        if self.leader_election and self.sharding:
            raise ConfigError("Either leader election or sharding, not both.")
        if self.replicas < 1:
            raise ConfigError(f"replicas must be at least 1: {self.replicas}.")

    @property
    def has_namespace_patterns(self) -> bool:
        """Whether some served namespaces are patterns (``app-*``): namespaces are watched."""
        return any(not _DNS_LABEL.fullmatch(namespace) for namespace in self.namespaces)
